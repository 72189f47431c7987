// High-level calls whose accelerator jobs cannot succeed: in every mode the call ends, with the right
// value, after a bounded number of tries. Each call runs in a child process under an alarm, so a call
// that never returns fails the test instead of hanging it.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <numeric>
#include <vector>

#include "client/access.hpp"
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
// whatever the split: a job's latency alone is twice the bound). The call used to resubmit the failing
// jobs forever. (Where smaller jobs fit, the partitioner makes them: PartitionedCalls.JobsStayWithin...)
TEST(Fallback, HwModeCallWhoseJobsAreTooLargeEndsInSoftware) {
  const int rc = bounded([] {
    client::RuntimeOptions o;
    o.embedded = true;
    o.mode = client::Mode::hw;
    o.config_text = "[fabric]\nmax_job_ms = 0.05\n[device.emu]\nresident = [\"work\"]\n[functions.work]\nlatency_us = 100\n";
    auto rt = client::Runtime::open(o);
    if (!rt) return 2;
    const uint64_t units = 20'000'000;  // 6 jobs of 3.3 M cycles: each over 50 us, as any job would be
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
    o.config_text = "[fabric]\nqueue_capacity = 1\n[device.emu]\nslots = 2\nresident = [\"nop\", \"accumulate\"]\n";
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

// Under tandemd, memory outside the session: a malloc'd buffer, and a range across two registered
// regions (mapped contiguously here, but not one region for the daemon). In hw mode the call used to
// spin on TRANSLATION_FAULT jobs forever. Now the access method moves such data (copy or
// scatter-gather), a call forced to zero-copy returns ACCESS_UNSUPPORTED at once, and no job that must
// fault is ever sent.
TEST(Fallback, MemoryOutsideTheSessionNeverSendsJobsThatFault) {
  DaemonProcess d;
  for (client::Mode mode : {client::Mode::hw, client::Mode::auto_mode, client::Mode::alpha}) {
    const int rc = bounded([&] {
      client::RuntimeOptions o;
      o.socket_path = d.socket();
      o.mode = mode;
      o.alpha = 0.5;
      auto opened = client::Runtime::open(o);
      if (!opened) return 2;
      client::Runtime& rt = *opened.value();
      constexpr size_t kN = 1 << 20;  // 4 MiB: far above N_L
      std::vector<int32_t> heap(kN);
      std::iota(heap.begin(), heap.end(), 1);
      if (int r = accumulate_checked(rt, heap.data(), kN); r != 0) return r;
      constexpr size_t kHalf = 4u << 20;
      const int fd = memfd_create("tandem-halves", MFD_CLOEXEC | MFD_ALLOW_SEALING);
      if (fd < 0 || ftruncate(fd, 2 * kHalf) != 0) return 4;
      auto* base = static_cast<char*>(mmap(nullptr, 2 * kHalf, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
      if (base == MAP_FAILED) return 4;
      if (rt.register_memory(base, kHalf, fd, 0) != Status::ok) return 5;
      if (rt.register_memory(base + kHalf, kHalf, fd, kHalf) != Status::ok) return 5;
      auto* words = reinterpret_cast<int32_t*>(base);
      for (size_t i = 0; i < 2 * kHalf / sizeof(int32_t); ++i) words[i] = static_cast<int32_t>(i % 1000) - 300;
      if (rt.in_session_memory(heap.data(), 4) || !rt.in_session_memory(base, kHalf) ||
          rt.in_session_memory(base + kHalf / 4, kHalf) || rt.in_session_memory(base, 2 * kHalf)) {
        return 9;
      }
      if (int r = accumulate_checked(rt, words, kHalf / sizeof(int32_t)); r != 0) return r;
      if (int r = accumulate_checked(rt, words + kHalf / 8, kHalf / sizeof(int32_t)); r != 0) return r;
      // Zero-copy forced on memory outside the session: refused at once, nothing sent.
      rt.set_access_choice(client::AccessChoice::zero_copy);
      const uint64_t jobs_before = rt.stats().hw_jobs.load();
      const uint64_t args[2] = {reinterpret_cast<uintptr_t>(heap.data()), kN};
      int64_t sum = 0;
      const Status forced = call(rt, TANDEM_FN_ACCUMULATE, args, heap.data(), sum);
      if (mode != client::Mode::auto_mode && forced != Status::access_unsupported) return 10;
      if (rt.stats().hw_jobs.load() != jobs_before) return 11;
      return 0;
    });
    EXPECT_EQ(rc, 0) << client::mode_name(mode, 0.5) << (rc == 128 + SIGALRM ? ": a call never returned" : "");
  }
  const auto status = testing::daemon_status(d);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["dispatcher"]["translation_faults"].get<uint64_t>(), 0u) << "no job that must fail was sent";
}

}  // namespace
}  // namespace tandem
