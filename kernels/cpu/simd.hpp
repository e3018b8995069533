#pragma once
/// LGRECO_CPU_CLONES: compiles a hot CPU-reference function three times (baseline x86-64, AVX2 and
/// x86-64-v4, i.e. AVX-512) and picks one at load time (GCC function multiversioning), so the
/// library keeps portable flags (no -march) yet uses wide vectors where the CPU has them. The
/// x86-64-v4 clone may use FMA instructions, but the kernels are compiled with -ffp-contract=off
/// (kernels/CMakeLists.txt) and call no fma(), so every clone computes bit-identical results.
/// -DLGRECO_NO_CPU_CLONES builds the baseline only (to check that claim, or for other compilers).
#if !defined(LGRECO_NO_CPU_CLONES) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define LGRECO_CPU_CLONES __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define LGRECO_CPU_CLONES
#endif
