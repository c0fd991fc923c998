/* parcrypt kernels: the HIP (hiprtc, AMD GPUs) spellings of the names parcrypt.cl is written
 * in. The host compiles this header, then vendor_cuda.h, then parcrypt.cl, with hiprtc
 * (`--offload-arch=gfxNNN`, `-D` defines as for OpenCL). HIP spells every name vendor_cuda.h
 * uses the CUDA way (extern "C" __global__, __shared__, __syncthreads, threadIdx, blockDim,
 * __funnelshift_l/r, __byte_perm), and hiprtc puts the HIP device headers in scope
 * by itself, so the CUDA header serves unchanged: this one only marks the compiler and says
 * what differs on AMD hardware.
 *
 * What the HIP host does differently from the CUDA host:
 * - Shared tables are always static `__shared__` arrays (PARCRYPT_CUDA_DYNAMIC_SHARED is never
 *   defined): AMD has no 48 KiB static limit, but a work-group's LDS is 64 KiB at most. AES
 *   encryption fits with 32 copies (2 KiB each: 64 KiB); decryption's 2.25 KiB per copy and
 *   Blowfish's 4 KiB allow 16 copies, not 32, so those narrow the bank-conflict channel on
 *   HIP rather than closing it (see the top of parcrypt.cl).
 * - Wavefronts are 64 lanes on CDNA (gfx90a, gfx942) and 32 on RDNA (gfx1030, gfx1100); LDS
 *   has 32 banks and serves a 64-lane access in two halves of 32, so lane l and lane l + 32
 *   reading the same copy should not conflict. Not measured: no AMD GPU has run these
 *   kernels. */

#define PARCRYPT_HIP 1

#ifdef PARCRYPT_CUDA_DYNAMIC_SHARED
#error "the HIP host declares shared tables statically (at most 64 KiB of LDS per work-group)"
#endif
