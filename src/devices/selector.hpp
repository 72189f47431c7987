// How a configuration names a device among several (OpenCL platforms and devices, CUDA devices):
// a decimal index, or a case-insensitive part of the name; "" matches any.
#pragma once

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::devices {

inline bool selector_matches(std::string_view selector, uint32_t index, std::string_view name) {
  if (selector.empty()) return true;
  uint32_t wanted = 0;
  const auto [end, error] = std::from_chars(selector.data(), selector.data() + selector.size(), wanted);
  if (error == std::errc{} && end == selector.data() + selector.size()) return wanted == index;
  auto lower = [](std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
  };
  return lower(name).find(lower(selector)) != std::string::npos;
}

}  // namespace tandem::devices
