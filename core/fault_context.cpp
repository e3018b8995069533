#include "core/fault_context.hpp"

#include <algorithm>
#include <cstring>

namespace lgreco {
namespace {

char g_text[512];
std::atomic<int> g_depth{0};
std::atomic<bool> g_set{false};

}  // namespace

FaultContext::FaultContext(std::string_view what) noexcept {
  if (g_depth.fetch_add(1) == 0) {
    const std::size_t n = std::min(what.size(), sizeof g_text - 1);
    std::memcpy(g_text, what.data(), n);
    g_text[n] = '\0';
    g_set.store(true);
  }
}

FaultContext::~FaultContext() {
  if (g_depth.fetch_sub(1) == 1) g_set.store(false);
}

const char* fault_context() noexcept { return g_set.load() ? g_text : nullptr; }

}  // namespace lgreco
