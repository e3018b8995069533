# GPU tests of the CUDA backend (plain executables, tests/support/gpu_check.hpp; label "gpu";
# exit 77 = skipped without a device, failure with LGRECO_REQUIRE_GPU=1). Included from
# tests/kernels/CMakeLists.txt when the CUDA backend is built; they build in the kernels-only tree.
if(LGRECO_HAVE_CUDA)
  foreach(_gpu_test cast quantize topk powersgd compressor)
    lgreco_add_gpu_test(lgreco_gpu_${_gpu_test} SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_${_gpu_test}.cpp LIBS lgreco_kernels)
  endforeach()
endif()
