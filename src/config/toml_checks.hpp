// The checks every TOML file of tandem gets (the configuration, the calibration file): one error
// style, "<source>: <what>", and no key that the reader does not know (a typo is an error, not a
// silently ignored setting).
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <toml++/toml.h>

#include "abi/status.hpp"

namespace tandem::config {

[[noreturn]] inline void toml_fail(std::string_view source, const std::string& what) {
  throw Error(Status::invalid_argument, std::string(source) + ": " + what);
}

inline void check_keys(const toml::table& t, std::string_view where, std::initializer_list<std::string_view> allowed,
                       std::string_view source) {
  for (const auto& [key, node] : t) {
    (void)node;
    bool ok = false;
    for (std::string_view a : allowed) ok = ok || key.str() == a;
    if (!ok) toml_fail(source, "unknown key '" + std::string(key.str()) + "' in [" + std::string(where) + "]");
  }
}

// An integer's value, or nothing: value<int64_t>() alone would also take true and false as 1 and 0,
// and a float with a whole value (slots = 2.0). TOML tells integers from floats; so does tandem.
template <typename Node>
std::optional<int64_t> toml_integer(const Node& n) {
  if (!n.is_integer()) return std::nullopt;
  return n.template value<int64_t>();
}

}  // namespace tandem::config
