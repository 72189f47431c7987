// TOML text in and out for the scenario and study code: one parse that reports "<source>: <what>
// (line N)" as tandem::Error(invalid_argument), and one canonical formatting (keys sorted).
#pragma once

#include <toml++/toml.h>

#include <sstream>
#include <string>
#include <string_view>

#include "config/toml_checks.hpp"

namespace tandem::sim {

inline toml::table parse_toml_text(std::string_view text, std::string_view source) {
  try {
    return toml::parse(text, source);
  } catch (const toml::parse_error& e) {
    std::ostringstream os;
    os << e.description() << " (line " << e.source().begin.line << ")";
    config::toml_fail(source, os.str());
  }
}

inline std::string toml_text(const toml::table& t) {
  std::ostringstream os;
  os << t << "\n";
  return os.str();
}

}  // namespace tandem::sim
