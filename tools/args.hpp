#pragma once
/// A small, strict command-line parser: declared options only (unknown flags are UsageError),
/// `--name value` or `--name=value`, `-o` short alias, positionals, and generated --help.
#include <climits>
#include <optional>
#include <string>
#include <vector>

namespace lgreco::cli {

/// Output format shared by reporting commands.
enum class Format { kTable, kJson, kCsv };

class ArgParser {
 public:
  /// `usage` is the command's words ("lgreco trace synth"); `description` the help paragraph.
  ArgParser(std::string usage, std::string description);

  /// A boolean switch (--force).
  ArgParser& flag(const std::string& name, bool* out, const std::string& help);
  /// An option with a value; `required` makes its absence a UsageError. `short_name` like "-o".
  ArgParser& option(const std::string& name, std::string* out, const std::string& metavar,
                    const std::string& help, bool required = false, const std::string& short_name = "");
  /// An option that may be repeated; each value appended.
  ArgParser& multi(const std::string& name, std::vector<std::string>* out, const std::string& metavar,
                   const std::string& help);
  /// A positional argument.
  ArgParser& positional(const std::string& name, std::string* out, const std::string& help, bool required = true);
  /// `--format table|json[|csv]` into *out (default table).
  ArgParser& format(Format* out, bool allow_csv = false);

  /// Parses; returns false when --help was printed (caller returns 0). Throws UsageError, also
  /// for an empty option value (`-o ""`).
  bool parse(const std::vector<std::string>& args);
  /// Whether an option was given on the command line.
  bool given(const std::string& name) const;
  /// The help text.
  std::string help() const;

 private:
  struct Opt {
    std::string name, short_name, metavar, help;
    std::string* value = nullptr;
    std::vector<std::string>* values = nullptr;
    bool* flag = nullptr;
    bool required = false;
    bool seen = false;
  };
  struct Pos {
    std::string name, help;
    std::string* value;
    bool required;
  };
  Opt* find(const std::string& name);

  std::string usage_, description_;
  std::vector<Opt> opts_;
  std::vector<Pos> pos_;
  Format* format_ = nullptr;
  std::string format_text_;
  bool allow_csv_ = false;
};

/// Parses a comma list ("1,2,4").
std::vector<std::string> split_list(const std::string& text, char sep = ',');
/// Parses an integer option value in [lo, hi] (by default the range of an int, since most
/// counts end up in one); UsageError naming the option, the value and the range otherwise.
/// Options that need more (seeds, step ids) pass their own bounds.
long long parse_int(const std::string& option, const std::string& text, long long lo = INT_MIN, long long hi = INT_MAX);
/// Parses a floating-point option value; UsageError naming the option on failure.
double parse_double(const std::string& option, const std::string& text);

}  // namespace lgreco::cli
