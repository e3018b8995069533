# LGRECO_FUZZ=ON (what `make fuzz` configures, in its own build folder): the input readers' fuzz
# targets (fuzz/) are also linked as libFuzzer executables fuzz_<target>. Needs Clang (libFuzzer
# ships with it); every C++ file of the tree is compiled with -fsanitize=fuzzer-no-link so that the
# readers' branches are instrumented for coverage. Combine with LGRECO_SANITIZE=address,undefined.
#
# Every build with tests (fuzzing on or off, any compiler) links each target as fuzz_<target>_replay,
# which CTest runs over the target's stored seeds (fuzz/CMakeLists.txt).
option(LGRECO_FUZZ "Build the libFuzzer executables of fuzz/ (needs Clang)" OFF)
if(LGRECO_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "LGRECO_FUZZ needs Clang's libFuzzer (compiler: ${CMAKE_CXX_COMPILER_ID}); configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  if(LGRECO_HAVE_CUDA)
    message(FATAL_ERROR "LGRECO_FUZZ needs -DLGRECO_CUDA=OFF")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
  message(STATUS "lgreco: libFuzzer targets on")
endif()
