#include "core/collective.hpp"

#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco {

const char* to_string(Collective c) {
  switch (c) {
    case Collective::kAllreduce: return "allreduce";
    case Collective::kAllgather: return "allgather";
    case Collective::kReduceScatter: return "reducescatter";
    case Collective::kBroadcast: return "broadcast";
  }
  return "?";
}

Collective parse_collective(std::string_view name, const std::string& where) {
  for (Collective c : {Collective::kAllreduce, Collective::kAllgather, Collective::kReduceScatter, Collective::kBroadcast}) {
    if (name == to_string(c)) return c;
  }
  // nccl-tests' program names too (all_reduce_perf ...).
  if (name == "all_reduce") return Collective::kAllreduce;
  if (name == "all_gather") return Collective::kAllgather;
  if (name == "reduce_scatter") return Collective::kReduceScatter;
  throw ConfigError((where.empty() ? "" : where + ": ") + "unknown collective \"" + printable(name) +
                    "\" (expected allreduce, allgather, reducescatter, broadcast)");
}

}  // namespace lgreco
