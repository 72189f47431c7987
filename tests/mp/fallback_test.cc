// High-level calls whose accelerator jobs cannot succeed: in every mode the call ends, with the right
// value, after a bounded number of tries. Each call runs in a child process under an alarm, so a call
// that never returns fails the test instead of hanging it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "mp_util.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;
using testing::join;
using testing::spawn;

constexpr int kAlarmSeconds = 20;
constexpr int kWrongValue = 40;
constexpr int kCallFailed = 41;

Status call(client::Runtime& rt, uint16_t function, std::span<const uint64_t> args, const void* buffer,
            int64_t& value) {
  const auto* fn = funcs::find_function(function);
  funcs::Call c;
  funcs::BufferList buffers;
  if (funcs::describe_call(*fn, args, c, buffers) != Status::ok) return Status::invalid_argument;
  c.buffers[0] = const_cast<void*>(buffer);
  return rt.run(*fn, c, value);
}

// Runs `body` in a child under an alarm; the child's exit code is the test's verdict (0: passed).
int bounded(const std::function<int()>& body) {
  return join(spawn([&] {
    alarm(kAlarmSeconds);
    return body();
  }));
}

int accumulate_checked(client::Runtime& rt, const int32_t* data, size_t n) {
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), n};
  int64_t sum = 0;
  if (call(rt, TANDEM_FN_ACCUMULATE, args, data, sum) != Status::ok) return kCallFailed;
  return sum == std::accumulate(data, data + n, int64_t{0}) ? 0 : kWrongValue;
}

// hw mode, embedded: every job of the call is larger than the fabric's job-size bound (JOB_TOO_LARGE
// whatever the split). The call used to resubmit the failing jobs forever.
TEST(Fallback, HwModeCallWhoseJobsAreTooLargeEndsInSoftware) {
  const int rc = bounded([] {
    client::RuntimeOptions o;
    o.embedded = true;
    o.mode = client::Mode::hw;
    o.config_text = "[fabric]\nmax_job_ms = 0.05\nresident = [\"work\"]\n";
    auto rt = client::Runtime::open(o);
    if (!rt) return 2;
    const uint64_t units = 20'000'000;  // 6 jobs of 3.3 M cycles: each far above 50 us at 4x
    int64_t value = 0;
    if (call(*rt.value(), TANDEM_FN_WORK, std::span<const uint64_t>(&units, 1), nullptr, value) != Status::ok) {
      return kCallFailed;
    }
    if (value != static_cast<int64_t>(units)) return kWrongValue;
    const auto& s = rt.value()->stats();
    return s.hw_jobs.load() <= 6 && s.fallbacks.load() == 1 ? 0 : 3;  // one round, then software
  });
  EXPECT_EQ(rc, 0) << (rc == 128 + SIGALRM ? "the call never returned" : "");
}

// hw mode, embedded, a function queue of one job: most jobs meet QUEUE_FULL. They are retried with a
// back-off, a bounded number of times, and the call returns the right value.
TEST(Fallback, HwModeRetriesAFullQueueAndReturnsTheRightValue) {
  const int rc = bounded([] {
    client::RuntimeOptions o;
    o.embedded = true;
    o.mode = client::Mode::hw;
    o.config_text = "[fabric]\nqueue_capacity = 1\nslots = 2\nresident = [\"nop\", \"accumulate\"]\n";
    auto rt = client::Runtime::open(o);
    if (!rt) return 2;
    std::vector<int32_t> data(1 << 20);
    std::iota(data.begin(), data.end(), -5000);
    for (int i = 0; i < 20; ++i) {
      if (int r = accumulate_checked(*rt.value(), data.data(), data.size()); r != 0) return r;
    }
    return 0;
  });
  EXPECT_EQ(rc, 0) << (rc == 128 + SIGALRM ? "a call never returned" : "");
}

}  // namespace
}  // namespace tandem
