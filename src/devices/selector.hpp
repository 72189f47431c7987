// How a configuration names a device among several (OpenCL platforms and devices, CUDA devices):
// a decimal index, or a case-insensitive part of one of its names (an OpenCL platform's name or
// vendor: "pocl" finds "Portable Computing Language" by its vendor, "The pocl project"); "" matches
// any. Digits below `count` (the caller's bound on the indexes: the longest of the lists it searches)
// are an index; others are a part of a name, so that a device called "GeForce RTX 4090" can be chosen
// by "4090" on a machine with fewer than 4091 devices.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

namespace tandem::devices {

inline bool selector_matches(std::string_view selector, uint32_t index, size_t count,
                             std::initializer_list<std::string_view> names) {
  if (selector.empty()) return true;
  uint32_t wanted = 0;
  const auto [end, error] = std::from_chars(selector.data(), selector.data() + selector.size(), wanted);
  if (error == std::errc{} && end == selector.data() + selector.size() && wanted < count) return wanted == index;
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
  };
  const std::string part = lower(selector);
  return std::any_of(names.begin(), names.end(),
                     [&](std::string_view name) { return lower(name).find(part) != std::string::npos; });
}

}  // namespace tandem::devices
