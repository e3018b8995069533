#pragma once
/// Text that goes into one-line messages. Names read from files (layer names, node ids, keys) may
/// hold newlines, other control characters or bytes that are not UTF-8; printed raw they would
/// split an error over several lines or garble a terminal.
#include <string>
#include <string_view>

namespace lgreco {

/// `s` with every control character (U+0000–U+001F, U+007F) written as an escape (\n, \r, \t,
/// otherwise \xNN) and every byte that is not part of valid UTF-8 written as \xNN; a backslash
/// stays a backslash. Printable ASCII and valid UTF-8 sequences are kept as they are.
std::string printable(std::string_view s);

/// "'" + printable(name) + "'": a name as messages quote it.
std::string quote_name(std::string_view name);

}  // namespace lgreco
