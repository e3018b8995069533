#pragma once
// Not compiled: the module-graph test checks this file as if it were part of network_models, and
// the check must fail (the network model may not depend on the simulator).
#include "sim/timeline.hpp"
