#include "tools/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <unistd.h>

#include "core/error.hpp"
#include "core/text.hpp"

namespace lgreco::cli {

ArgParser::ArgParser(std::string usage, std::string description)
    : usage_(std::move(usage)), description_(std::move(description)) {}

ArgParser& ArgParser::flag(const std::string& name, bool* out, const std::string& help) {
  Opt o;
  o.name = name;
  o.help = help;
  o.flag = out;
  opts_.push_back(o);
  return *this;
}

ArgParser& ArgParser::option(const std::string& name, std::string* out, const std::string& metavar,
                             const std::string& help, bool required, const std::string& short_name) {
  Opt o;
  o.name = name;
  o.short_name = short_name;
  o.metavar = metavar;
  o.help = help;
  o.value = out;
  o.required = required;
  opts_.push_back(o);
  return *this;
}

ArgParser& ArgParser::multi(const std::string& name, std::vector<std::string>* out, const std::string& metavar,
                            const std::string& help) {
  Opt o;
  o.name = name;
  o.metavar = metavar;
  o.help = help + " (repeatable)";
  o.values = out;
  opts_.push_back(o);
  return *this;
}

ArgParser& ArgParser::positional(const std::string& name, std::string* out, const std::string& help, bool required) {
  pos_.push_back({name, help, out, required});
  return *this;
}

ArgParser& ArgParser::format(Format* out, bool allow_csv) {
  format_ = out;
  allow_csv_ = allow_csv;
  *out = Format::kTable;
  return option("--format", &format_text_, allow_csv ? "table|json|csv" : "table|json", "output format (default table)");
}

ArgParser::Opt* ArgParser::find(const std::string& name) {
  for (auto& o : opts_) {
    if (o.name == name || (!o.short_name.empty() && o.short_name == name)) return &o;
  }
  return nullptr;
}

bool ArgParser::given(const std::string& name) const {
  for (const auto& o : opts_) {
    if (o.name == name) return o.seen;
  }
  return false;
}

bool ArgParser::parse(const std::vector<std::string>& args) {
  std::size_t next_pos = 0;
  bool only_positionals = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!only_positionals && (a == "-h" || a == "--help")) {
      std::cout << help();
      return false;
    }
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && a.size() > 1 && a[0] == '-' && !(a.size() > 1 && (std::isdigit(static_cast<unsigned char>(a[1])) || a[1] == '.'))) {
      std::string name = a, value;
      bool has_value = false;
      if (auto eq = a.find('='); eq != std::string::npos && a.rfind("--", 0) == 0) {
        name = a.substr(0, eq);
        value = a.substr(eq + 1);
        has_value = true;
      }
      Opt* o = find(name);
      if (!o) throw UsageError(usage_ + ": unknown option " + quote_name(name) + " (see --help)");
      if (o->flag) {
        if (has_value) throw UsageError(usage_ + ": option '" + name + "' takes no value");
        *o->flag = true;
        o->seen = true;
        continue;
      }
      // Named as given, with the long name when a short alias was used ("-o/--output").
      const std::string shown = name == o->name ? name : name + "/" + o->name;
      if (!has_value) {
        if (i + 1 >= args.size()) throw UsageError(usage_ + ": option '" + shown + "' needs a value (" + o->metavar + ")");
        value = args[++i];
      }
      if (value.empty()) throw UsageError(usage_ + ": option '" + shown + "' needs a non-empty value (" + o->metavar + ")");
      if (o->values) {
        o->values->push_back(value);
      } else {
        if (o->seen) throw UsageError(usage_ + ": option '" + o->name + "' given twice");
        *o->value = value;
      }
      o->seen = true;
      continue;
    }
    if (next_pos >= pos_.size()) throw UsageError(usage_ + ": unexpected argument " + quote_name(a) + " (see --help)");
    if (a.empty()) throw UsageError(usage_ + ": argument " + pos_[next_pos].name + " is empty");
    *pos_[next_pos++].value = a;
  }
  for (std::size_t p = next_pos; p < pos_.size(); ++p) {
    if (pos_[p].required) throw UsageError(usage_ + ": missing argument " + pos_[p].name + " (see --help)");
  }
  for (const auto& o : opts_) {
    if (o.required && !o.seen) throw UsageError(usage_ + ": missing required option " + o.name + " (see --help)");
  }
  if (format_ && given("--format")) {
    if (format_text_ == "table") *format_ = Format::kTable;
    else if (format_text_ == "json") *format_ = Format::kJson;
    else if (format_text_ == "csv" && allow_csv_) *format_ = Format::kCsv;
    else throw UsageError(usage_ + ": --format '" + format_text_ + "': expected " + (allow_csv_ ? "table, json or csv" : "table or json"));
  }
  return true;
}

std::string ArgParser::help() const {
  std::ostringstream s;
  s << "usage: " << usage_;
  if (!opts_.empty()) s << " [options]";
  for (const auto& p : pos_) s << (p.required ? " " : " [") << p.name << (p.required ? "" : "]");
  s << "\n\n" << description_ << "\n";
  if (!pos_.empty()) {
    s << "\narguments:\n";
    for (const auto& p : pos_) s << "  " << p.name << "\n      " << p.help << "\n";
  }
  s << "\noptions:\n";
  for (const auto& o : opts_) {
    s << "  ";
    if (!o.short_name.empty()) s << o.short_name << ", ";
    s << o.name;
    if (!o.flag) s << " " << o.metavar;
    s << (o.required ? "  (required)" : "") << "\n      " << o.help << "\n";
  }
  s << "  -h, --help\n      show this help\n";
  return s.str();
}

std::vector<std::string> split_list(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  for (const auto& s : out) {
    if (s.empty()) throw UsageError("empty item in list '" + text + "'");
  }
  return out;
}

long long parse_int(const std::string& option, const std::string& text, long long lo, long long hi) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  const bool digits = !text.empty() && text.find_first_not_of("+-0123456789") == std::string::npos;
  if (text.empty() || *end != '\0' || !digits) {
    throw UsageError(option + ": expected an integer, got " + quote_name(text));
  }
  if (errno == ERANGE || v < lo || v > hi) {
    throw UsageError(option + ": " + printable(text) + " is out of range (expected an integer from " + std::to_string(lo) +
                     " to " + std::to_string(hi) + ")");
  }
  return v;
}

double parse_double(const std::string& option, const std::string& text) {
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(v)) {
    throw UsageError(option + ": expected a finite number, got " + quote_name(text));
  }
  return v;
}


}  // namespace lgreco::cli
