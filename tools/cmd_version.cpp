// `lgreco info`: what this build is (version, git sha, CUDA and MPI compiled in).
#include <iostream>

#include "core/build_info.hpp"
#include "core/json_util.hpp"
#include "core/provenance.hpp"
#include "pipeline/comm.hpp"
#include "tools/args.hpp"
#include "tools/command.hpp"

namespace lgreco::cli {
namespace {

int run_info(const std::vector<std::string>& args) {
  Format fmt;
  ArgParser p("lgreco info", "Show what this build of lgreco is: version, git revision, build type, CUDA, MPI.");
  p.format(&fmt);
  if (!p.parse(args)) return 0;
  const Json prov = provenance_json();
  if (fmt == Format::kJson) {
    std::cout << Json{{"schema_version", 1}, {"kind", "lgreco-info"}, {"mpi", pipeline::MpiSession::available()}, {"provenance", prov}}.dump(2)
              << "\n";
  } else {
    std::cout << "lgreco " << build_info::version() << "\n  git        " << build_info::git_sha() << "\n  build      "
              << build_info::build_type() << "\n  cuda       " << (build_info::cuda() ? "compiled in" : "not compiled")
              << "\n  mpi        " << (pipeline::MpiSession::available() ? "compiled in (scale-out under mpirun/srun)" : "not compiled")
              << "\n";
  }
  return 0;
}

LGRECO_COMMAND("info", "show version, git revision and build options", run_info);

}  // namespace
}  // namespace lgreco::cli
