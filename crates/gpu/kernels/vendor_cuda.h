/* parcrypt kernels: the CUDA (NVRTC) spellings of the names parcrypt.cl is written in.
 * The host puts this header in front of parcrypt.cl before compiling with NVRTC
 * (`--std=c++17`, `-D` defines as for OpenCL); no CUDA header needs to be included.
 *
 * What the CUDA host must do that the OpenCL host does not:
 * - Launch with a one-dimensional grid and block; names come out unmangled (extern "C").
 * - Round keys: `CONSTANT u32 *RESTRICT` becomes `const u32 *__restrict__`, a global pointer
 *   read through the read-only data cache. The AES kernels copy them into registers once per
 *   thread; the others read them where they need them, every lane of a warp the same word,
 *   which that cache serves as a broadcast, as constant memory would.
 * - Shared tables are static `__shared__` arrays sized by the -D table-copy defines, and
 *   static shared memory is limited to 48 KiB per block. With 32 copies AES needs 64 KiB to
 *   encrypt and 72 KiB to decrypt (two tables per copy) and Blowfish 128 KiB, so the
 *   per-lane variant uses dynamic shared memory: define PARCRYPT_CUDA_DYNAMIC_SHARED, pass
 *   the kernel's shared bytes at launch, and raise
 *   CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES first. */

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

/* Own vector types rather than CUDA's uint2/uint4, so that nothing depends on which
 * headers NVRTC puts in scope; the alignment makes loads and stores single 64- and 128-bit
 * memory instructions, as OpenCL's uint2/uint4 are. */
struct alignas(8) u32x2 {
    u32 x, y;
};
struct alignas(16) u32x4 {
    u32 x, y, z, w;
};

#define KERNEL extern "C" __global__
#define GLOBAL
#define LOCAL
#define CONSTANT const
#define RESTRICT __restrict__
#define DEVICE_FUNCTION static __device__ __forceinline__

#ifdef PARCRYPT_CUDA_DYNAMIC_SHARED
#define DECLARE_SHARED_WORDS(name, count) extern __shared__ u32 name[]
#else
#define DECLARE_SHARED_WORDS(name, count) __shared__ u32 name[count]
#endif

#define LOCAL_ID() ((u32)threadIdx.x)
#define GROUP_SIZE() ((u32)blockDim.x)
#define GLOBAL_ID() ((u32)(blockIdx.x * blockDim.x + threadIdx.x))
#define GLOBAL_SIZE() ((u32)(gridDim.x * blockDim.x))
#define BARRIER() __syncthreads()

DEVICE_FUNCTION u32x2 make_u32x2(u32 a, u32 b)
{
    u32x2 value;
    value.x = a;
    value.y = b;
    return value;
}

DEVICE_FUNCTION u32x4 make_u32x4(u32 a, u32 b, u32 c, u32 d)
{
    u32x4 value;
    value.x = a;
    value.y = b;
    value.z = c;
    value.w = d;
    return value;
}

#define MAKE_U32X2(a, b) make_u32x2((a), (b))
#define MAKE_U32X4(a, b, c, d) make_u32x4((a), (b), (c), (d))

/* The funnel shifts use the count modulo 32, like OpenCL's rotate(). */
#define ROTATE_LEFT32(x, n) __funnelshift_l((u32)(x), (u32)(x), (u32)(n))
#define ROTATE_RIGHT32(x, n) __funnelshift_r((u32)(x), (u32)(x), (u32)(n))
#define SWAP_BYTES32(x) __byte_perm((u32)(x), 0u, 0x0123u)

/* Unrolls the loop that follows completely (its trip count is a constant where it is
 * inlined). */
#define UNROLL _Pragma("unroll")

/* The value, with the compiler no longer knowing how it was made: a per-lane table offset
 * computed once stays one register instead of being folded back into every address. */
DEVICE_FUNCTION u32 hide_from_optimizer(u32 value)
{
#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
    /* HIP compiles this header too; AMD's register constraints differ, and the value is
     * left as it is there. */
#else
    asm volatile("" : "+r"(value));
#endif
    return value;
}
#define HIDE_FROM_OPTIMIZER(x) hide_from_optimizer((u32)(x))

/* (byte k of x) << 8 | low, for low whose byte 1 is zero: one PRMT. Result byte 0 is byte 0
 * of low (selector 4), byte 1 is byte k of x, bytes 2 and 3 are bytes 2 and 3 of low. */
#define TABLE_OFFSET256(x, k, low) \
    __byte_perm((u32)(x), (u32)(low), 0x7604u | ((u32)(k) << 4))

/* Shared memory of a fixed size whatever PARCRYPT_CUDA_DYNAMIC_SHARED says (kernels whose
 * launches ask for no dynamic shared memory, such as ghash_groups). */
#define DECLARE_STATIC_SHARED_WORDS(name, count) __shared__ u32 name[count]
