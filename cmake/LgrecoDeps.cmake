# Third-party libraries of the full build (Debian packages; scripts/install-deps.sh installs them).
find_package(fmt 9 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
enable_language(C)  # FindHDF5 probes with a C compile
find_package(HDF5 REQUIRED COMPONENTS C)
find_package(ZLIB REQUIRED)  # traces/reader.cpp inflates raw HDF5 chunks itself (two-phase read)
find_package(Boost 1.74 REQUIRED)
find_package(Threads REQUIRED)
if(LGRECO_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
