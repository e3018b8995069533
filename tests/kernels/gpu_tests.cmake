# Tests of the CUDA backend. Included from tests/kernels/CMakeLists.txt; all build in the
# kernels-only tree (plain executables, tests/support/gpu_check.hpp, no third-party framework).

# Host test of the packing logic the CUDA quantisers share with the host (no device needed, so it
# runs in every build, with or without CUDA).
add_executable(lgreco_test_cuda_host_pack ${CMAKE_CURRENT_LIST_DIR}/cuda_host_pack.cpp)
target_link_libraries(lgreco_test_cuda_host_pack PRIVATE lgreco_kernels)
target_include_directories(lgreco_test_cuda_host_pack PRIVATE ${PROJECT_SOURCE_DIR})
lgreco_target_defaults(lgreco_test_cuda_host_pack)
add_test(NAME lgreco_test_cuda_host_pack COMMAND lgreco_test_cuda_host_pack)

# GPU tests: label "gpu"; exit 77 = skipped without a device, a failure with LGRECO_REQUIRE_GPU=1.
if(LGRECO_HAVE_CUDA)
  # Host test (no device needed): cuBLAS is loaded on first use, not linked.
  add_executable(lgreco_test_cublas_lazy ${CMAKE_CURRENT_LIST_DIR}/cublas_lazy_host.cpp)
  target_link_libraries(lgreco_test_cublas_lazy PRIVATE lgreco_kernels_cuda)
  target_include_directories(lgreco_test_cublas_lazy PRIVATE ${PROJECT_SOURCE_DIR})
  lgreco_target_defaults(lgreco_test_cublas_lazy)
  add_test(NAME lgreco_test_cublas_lazy COMMAND lgreco_test_cublas_lazy)
  foreach(_gpu_test cast quantize topk powersgd compressor momentum)
    lgreco_add_gpu_test(lgreco_gpu_${_gpu_test} SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_${_gpu_test}.cpp LIBS lgreco_kernels)
  endforeach()
endif()
