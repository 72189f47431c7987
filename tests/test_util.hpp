// Helpers shared by the integration, multi-process and stress tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "client/runtime.hpp"

namespace tandem::testing {

// An embedded runtime from TOML text (the built-in default when empty).
inline std::unique_ptr<client::Runtime> open_embedded(const std::string& toml = "",
                                                      client::Mode mode = client::Mode::auto_mode) {
  client::RuntimeOptions o;
  o.embedded = true;
  o.mode = mode;
  o.config_text = toml;
  auto rt = client::Runtime::open(o);
  EXPECT_TRUE(rt.ok()) << rt.message();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

}  // namespace tandem::testing
