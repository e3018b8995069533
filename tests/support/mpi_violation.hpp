#pragma once
// Not compiled: the module-graph test checks this file as if it were part of sim, and the check
// must fail (only pipeline/comm_mpi.cpp may include MPI's header).
#include <mpi.h>
