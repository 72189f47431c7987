// Helpers shared by the integration, multi-process and stress tests.
#pragma once

#include <gtest/gtest.h>

#include <pthread.h>
#include <sched.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "client/runtime.hpp"
#include "rt/completion.hpp"

namespace tandem::testing {

// The threads named `name` (their comm) of process `pid` ("self": this one).
inline std::vector<pid_t> threads_named(const std::string& name, const std::string& pid = "self") {
  std::vector<pid_t> tids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + pid + "/task")) {
    std::ifstream comm(entry.path() / "comm");
    std::string line;
    if (std::getline(comm, line) && line == name) tids.push_back(static_cast<pid_t>(std::stol(entry.path().filename().string())));
  }
  return tids;
}

// Pins the calling thread to one CPU; gives back the CPUs it had when it goes out of scope (also when an
// assertion ends the test early: later tests, and the daemons they start, would inherit the pin).
class PinnedToOneCpu {
 public:
  explicit PinnedToOneCpu(int cpu) {
    CPU_ZERO(&before_);
    pthread_getaffinity_np(pthread_self(), sizeof before_, &before_);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ok_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
  }
  ~PinnedToOneCpu() { pthread_setaffinity_np(pthread_self(), sizeof before_, &before_); }
  PinnedToOneCpu(const PinnedToOneCpu&) = delete;
  PinnedToOneCpu& operator=(const PinnedToOneCpu&) = delete;
  bool ok() const { return ok_; }

 private:
  cpu_set_t before_;
  bool ok_ = false;
};

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
