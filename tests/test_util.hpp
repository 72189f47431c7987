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
  if (!toml.empty()) {
    const std::string path = ::testing::TempDir() + "tandem-test-" + std::to_string(::getpid()) + ".toml";
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(toml.c_str(), f);
    std::fclose(f);
    o.config_path = path;
  }
  auto rt = client::Runtime::open(o);
  EXPECT_TRUE(rt.ok()) << rt.message();
  return rt.ok() ? std::move(rt).value() : nullptr;
}

}  // namespace tandem::testing
