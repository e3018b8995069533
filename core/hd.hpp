#pragma once
/// LGRECO_HD marks functions compiled for both host and device when nvcc compiles the file,
/// and is empty for the host compiler, so headers using it need nothing but the standard library.
#if defined(__CUDACC__)
#define LGRECO_HD __host__ __device__
#define LGRECO_HD_INLINE __host__ __device__ __forceinline__
#else
#define LGRECO_HD
#define LGRECO_HD_INLINE inline
#endif
