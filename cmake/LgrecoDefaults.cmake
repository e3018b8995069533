# Compiler flags shared by every lgreco target.
function(lgreco_target_defaults target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
    target_compile_options(${target} PRIVATE
      $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>)
  endif()
endfunction()

# Every library's public headers are included rooted at the repository: "kernels/topk.hpp".
set(LGRECO_SOURCE_ROOT ${PROJECT_SOURCE_DIR})
