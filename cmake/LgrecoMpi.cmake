# Decides whether the MPI backend of the pipeline is built (scale-out, docs/scale-out.md). Sets
# LGRECO_HAVE_MPI. LGRECO_MPI=AUTO uses MPI when CMake finds it (Debian: libopenmpi-dev); ON
# requires it; OFF never uses it. Without it pipeline/comm_none.cpp is built instead of
# pipeline/comm_mpi.cpp and the binary runs in one process, as it always did.
set(LGRECO_HAVE_MPI OFF)
string(TOUPPER "${LGRECO_MPI}" _lgreco_mpi)
if(NOT _lgreco_mpi MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "LGRECO_MPI must be AUTO, ON or OFF, got '${LGRECO_MPI}'")
endif()
if(NOT _lgreco_mpi STREQUAL "OFF")
  # Only the C bindings: they are what comm_mpi.cpp calls (the C++ bindings are deprecated).
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(LGRECO_HAVE_MPI ON)
  elseif(_lgreco_mpi STREQUAL "ON")
    message(FATAL_ERROR "LGRECO_MPI=ON but no MPI was found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  endif()
endif()
