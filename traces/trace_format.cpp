#include "traces/trace_format.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco::traces {

const char* to_string(StorageDtype dtype) {
  switch (dtype) {
    case StorageDtype::kFloat32: return "float32";
    case StorageDtype::kFloat16: return "float16";
    case StorageDtype::kBFloat16: return "bfloat16";
  }
  return "float32";
}

StorageDtype parse_storage_dtype(const std::string& text) {
  if (text == "float32") return StorageDtype::kFloat32;
  if (text == "float16") return StorageDtype::kFloat16;
  if (text == "bfloat16") return StorageDtype::kBFloat16;
  throw ConfigError("dtype '" + printable(text) + "': expected float32, float16 or bfloat16");
}

std::int64_t storage_bytes(StorageDtype dtype) { return dtype == StorageDtype::kFloat32 ? 4 : 2; }

std::int64_t chunk_elements(std::int64_t numel, StorageDtype dtype) {
  return std::max<std::int64_t>(1, std::min(numel, kMaxChunkBytes / storage_bytes(dtype)));
}

std::string layer_group_path(std::size_t index) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "/layers/%06zu", index);
  return buf;
}

std::vector<Burst> find_bursts(const std::vector<std::int64_t>& steps) {
  std::vector<Burst> out;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i > 0 && steps[i] == steps[i - 1] + 1) {
      ++out.back().length;
    } else {
      out.push_back({i, 1, steps[i]});
    }
  }
  return out;
}

}  // namespace lgreco::traces
