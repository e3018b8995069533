// The backend of pipeline/comm.hpp for builds without MPI (LGRECO_MPI=OFF, or AUTO without MPI):
// no session can start; one process does all the work, as before MPI existed.
#include "core/error.hpp"
#include "pipeline/comm.hpp"

namespace lgreco::pipeline {

bool MpiSession::available() { return false; }

MpiSession::MpiSession() {
  throw ConfigError("this lgreco was built without MPI (configure with -DLGRECO_MPI=ON and libopenmpi-dev installed)");
}

MpiSession::~MpiSession() = default;

}  // namespace lgreco::pipeline
