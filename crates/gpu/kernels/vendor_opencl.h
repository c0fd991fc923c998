/* parcrypt kernels: the OpenCL C 1.2 spellings of the names parcrypt.cl is written in.
 * The host puts this header in front of parcrypt.cl before compiling; parcrypt.cl itself
 * never names an OpenCL or CUDA built-in directly, so that one text serves both compilers. */

typedef uchar u8;
typedef uint u32;
typedef ulong u64;
typedef uint2 u32x2;
typedef uint4 u32x4;

#define KERNEL __kernel
#define GLOBAL __global
#define LOCAL __local
#define CONSTANT __constant
#define RESTRICT restrict
/* OpenCL C 1.2 has C99 inline semantics: a plain `inline` function with no external
 * definition can fail to link when the compiler decides not to inline it. always_inline
 * as CUDA's __forceinline__: the AES kernels inline one fully unrolled copy per key size,
 * and LLVM 15's cost-based inliner (PoCL 3.1, Debian 12) crashes weighing them. */
#define DEVICE_FUNCTION static inline __attribute__((always_inline))

/* Local memory must be declared at kernel scope in OpenCL C; its size is fixed at compile
 * time by the -D table-copy defines, which the host chooses from the device's local memory. */
#define DECLARE_SHARED_WORDS(name, count) __local u32 name[count]

/* One-dimensional launches only; the kernels never need more than 2^32 work items because
 * the host cuts work into slabs of at most 2^32 - 1 blocks. */
#define LOCAL_ID() ((u32)get_local_id(0))
#define GROUP_SIZE() ((u32)get_local_size(0))
#define GLOBAL_ID() ((u32)get_global_id(0))
#define GLOBAL_SIZE() ((u32)get_global_size(0))
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE)

#define MAKE_U32X2(a, b) ((u32x2)((a), (b)))
#define MAKE_U32X4(a, b, c, d) ((u32x4)((a), (b), (c), (d)))

/* rotate() reduces the count modulo 32, which RC6 relies on (it rotates by the low five
 * bits of a data word). */
#define ROTATE_LEFT32(x, n) rotate((u32)(x), (u32)(n))
#define ROTATE_RIGHT32(x, n) rotate((u32)(x), (u32)(32u - ((u32)(n) & 31u)))
#define SWAP_BYTES32(x) \
    (rotate((u32)(x) & 0x00ff00ffu, 24u) | rotate((u32)(x) & 0xff00ff00u, 8u))

/* Unrolls the loop that follows completely (its trip count is a constant where it is
 * inlined). */
#define UNROLL _Pragma("unroll")

/* CUDA hides the value from its optimiser (see vendor_cuda.h); here it is the value. */
#define HIDE_FROM_OPTIMIZER(x) ((u32)(x))

/* (byte k of x) << 8 | low, for low whose byte 1 is zero, in portable shifts and masks. */
#define TABLE_OFFSET256(x, k, low) \
    (((((u32)(x) >> (8u * (u32)(k))) & 0xffu) << 8) | (u32)(low))

/* Local memory of a fixed size (CUDA tells it apart from the table-copy arrays). */
#define DECLARE_STATIC_SHARED_WORDS(name, count) __local u32 name[count]
