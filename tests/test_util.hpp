// Helpers shared by the integration, multi-process and stress tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "client/runtime.hpp"
#include "rt/completion.hpp"

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

// Runs `n` no-op jobs on `q` tagged first_tag, first_tag + 1, ... (the packets' user_data), one at a time.
inline void run_noops(client::Runtime& rt, client::Queue& q, uint64_t first_tag, size_t n) {
  tandem_completion_t* rec = rt.thread_records();
  for (size_t i = 0; i < n; ++i) {
    rt::reset_record(rec);
    ASSERT_EQ(q.dispatch(TANDEM_FN_NOP, nullptr, 0, 0, rec, false, 0, first_tag + i), Status::ok);
    ASSERT_EQ(rt.wait(rec, {}), Status::ok);
  }
}

}  // namespace tandem::testing
