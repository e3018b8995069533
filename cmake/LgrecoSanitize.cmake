# LGRECO_SANITIZE=address,undefined (what `make test-sanitize` configures): every C++ file of the
# tree, tests included, is compiled and linked with those sanitizers, and any report fails the run:
# -fno-sanitize-recover=all makes a UBSan report abort the process, ASan stops at its first report,
# and LeakSanitizer (part of ASan on Linux) turns a leak into a non-zero exit code. With GCC,
# `undefined` does not include float-cast-overflow (a double outside the range of the integer it is
# converted to, e.g. a JSON number 1e300 read as an int); it is added explicitly.
#
# Sets LGRECO_SANITIZE_ADDRESS (ON when ASan is in) and LGRECO_SANITIZER_TEST_ENV, the environment
# every CTest test of the tree runs with (lgreco_sanitizer_test_env), so that
# `ctest --test-dir build-sanitize` alone behaves as `make test-sanitize`.
#
# Restrictions: C++ only, CUDA must be off. The Python native module is not built in such a tree:
# it is written into python/lgreco/ of the source tree, where it would replace the normal build's
# module, and a module with ASan cannot be loaded by an interpreter without the ASan runtime.
set(LGRECO_SANITIZE "" CACHE STRING "Sanitizers for C++ code, e.g. address,undefined (empty: none)")
set(LGRECO_SANITIZE_ADDRESS OFF)
set(LGRECO_SANITIZER_TEST_ENV "")
if(LGRECO_SANITIZE)
  if(NOT LGRECO_SANITIZE MATCHES "^[a-z,-]+$")
    message(FATAL_ERROR "LGRECO_SANITIZE='${LGRECO_SANITIZE}': expected a comma list such as address,undefined")
  endif()
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    message(FATAL_ERROR "LGRECO_SANITIZE needs GCC or Clang (compiler: ${CMAKE_CXX_COMPILER_ID})")
  endif()
  if(LGRECO_HAVE_CUDA)
    message(FATAL_ERROR "LGRECO_SANITIZE needs -DLGRECO_CUDA=OFF")
  endif()
  string(TOUPPER "${LGRECO_PYTHON}" _lgreco_san_python)
  if(_lgreco_san_python STREQUAL "ON")
    message(FATAL_ERROR "LGRECO_SANITIZE needs -DLGRECO_PYTHON=OFF (the native module is written into the source tree)")
  endif()
  set(LGRECO_PYTHON OFF)  # AUTO → OFF for this tree (see above)

  set(_lgreco_san ${LGRECO_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND _lgreco_san MATCHES "(^|,)undefined(,|$)")
    string(APPEND _lgreco_san ",float-cast-overflow")
  endif()
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=${_lgreco_san}>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=${_lgreco_san})

  if(_lgreco_san MATCHES "(^|,)address(,|$)")
    set(LGRECO_SANITIZE_ADDRESS ON)
  endif()
  # Peak resident set allowed to the streaming test (tests/traces/CMakeLists.txt) under ASan, with
  # its quarantine lowered to 16 MiB (tests/traces/stream_memory_check.cpp): measured 64 MiB
  # (37.5 MiB without ASan), against 325 MiB with the default 256 MiB quarantine.
  set(LGRECO_STREAM_CHECK_ASAN_LIMIT_MIB 128)
  # detect_leaks is ASan's default on Linux; written out so that the intent is visible.
  list(APPEND LGRECO_SANITIZER_TEST_ENV
       "ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:check_initialization_order=1:strict_init_order=1:detect_stack_use_after_return=1"
       "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  message(STATUS "lgreco: sanitizers ${_lgreco_san} (Python native module off in this tree)")
endif()

# lgreco_sanitizer_test_env(<test>...): the sanitizer options above for these CTest tests (nothing
# in a build without sanitizers).
function(lgreco_sanitizer_test_env)
  if(LGRECO_SANITIZER_TEST_ENV)
    set_property(TEST ${ARGN} APPEND PROPERTY ENVIRONMENT ${LGRECO_SANITIZER_TEST_ENV})
  endif()
endfunction()
