#include "core/error.hpp"

namespace lgreco::detail {

void throw_check_failure(const char* expr, const char* file, int line, const std::string& msg) {
  throw Error(msg + " (check '" + expr + "' failed at " + file + ":" + std::to_string(line) + ")");
}

}  // namespace lgreco::detail
