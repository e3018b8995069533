#pragma once
/// LGRECO_CPU_CLONES: compiles a hot CPU-reference function twice (baseline x86-64 and AVX2) and
/// picks one at load time (GCC function multiversioning), so the library keeps portable flags
/// (no -march) yet uses 256-bit vectors where the CPU has them. FMA is not enabled and the build
/// never contracts, so both clones compute bit-identical results.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define LGRECO_CPU_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define LGRECO_CPU_CLONES
#endif
