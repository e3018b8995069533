#pragma once
/// The collective operations of data-parallel training, one enum for every module: the method
/// registry (which collective a payload needs), the step timeline (what it charges) and the network
/// model (what it costs). Standard library only.
#include <string>
#include <string_view>

namespace lgreco {

/// A collective operation (nccl-tests names).
enum class Collective { kAllreduce, kAllgather, kReduceScatter, kBroadcast };

/// "allreduce", "allgather", "reducescatter", "broadcast".
const char* to_string(Collective c);

/// Parses the names above (also nccl-tests' all_reduce, all_gather, reduce_scatter); otherwise a
/// one-line ConfigError "<where>: unknown collective ..." listing them (where: the file and field the
/// name was read from; "" for none).
Collective parse_collective(std::string_view name, const std::string& where = "");

}  // namespace lgreco
