# Generates build_info.cpp with the git revision at build time (not only at configure time),
# rewritten only when it changes so that builds stay incremental.
set(LGRECO_BUILD_INFO_CPP ${PROJECT_BINARY_DIR}/generated/lgreco_build_info.cpp)
add_custom_target(lgreco_build_info_gen
  COMMAND ${CMAKE_COMMAND}
          -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DOUTPUT=${LGRECO_BUILD_INFO_CPP}
          -DVERSION=${PROJECT_VERSION}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE}
          -DCUDA=${LGRECO_HAVE_CUDA}
          -P ${PROJECT_SOURCE_DIR}/cmake/WriteBuildInfo.cmake
  BYPRODUCTS ${LGRECO_BUILD_INFO_CPP}
  COMMENT "lgreco build info"
  VERBATIM)
