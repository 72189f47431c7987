// The end-to-end cases every real device's tests share (OpenCL, CUDA): completions on the Device
// interface, the catalog through a runtime (embedded or tandemd) checked against the references,
// sobel chains on device-local buffers, and client processes of one tandemd.
#pragma once

#include <gtest/gtest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.hpp"
#include "client/embedded.hpp"
#include "client/runtime.hpp"
#include "daemon_harness.hpp"
#include "devices/device.hpp"
#include "funcs/function.hpp"
#include "kernel_cases.hpp"
#include "rt/completion.hpp"
#include "rtl/rtl_cases.hpp"
#include "test_util.hpp"

namespace tandem::testing {

using devices::DeviceCompletion;
using devices::DeviceJob;

// Polls until `n` completions arrived (or 30 s passed), sleeping on nothing: the test spins.
inline std::vector<DeviceCompletion> wait_for(devices::Device& d, size_t n) {
  std::vector<DeviceCompletion> out;
  const int64_t deadline = now_ns() + 30'000'000'000;
  while (out.size() < n && now_ns() < deadline) d.poll(now_ns(), out);
  return out;
}

// Submits `call` on `slot` as job `token`, starting now.
inline void submit_job(devices::Device& d, uint32_t slot, uint64_t token, const funcs::Call& call) {
  DeviceJob job;
  job.token = token;
  job.start_ns = now_ns();
  job.call = call;
  d.submit(slot, job);
}

// Submits `call` on `slot` and waits for the one completion it yields.
inline DeviceCompletion run_one(devices::Device& d, uint32_t slot, uint64_t token, const funcs::Call& call) {
  submit_job(d, slot, token, call);
  auto done = wait_for(d, 1);
  EXPECT_EQ(done.size(), 1u);
  return done.empty() ? DeviceCompletion{token, slot, Status::cancelled, 0, 0, 0, {}} : done[0];
}

// A real device's time limit (job_timeout_ms, work on `slow_slot`, accumulate on `other_slot`): the
// job past it completes with TIMEOUT and only its slot leaves service, refusing work while the
// device still runs the old job (a kernel cannot be cancelled); the other slot keeps working; when
// the device finishes the old job the slot serves again, and nothing more is reported for it.
inline void expect_timeout_and_recovery(devices::Device& d, uint32_t slow_slot, uint32_t other_slot, uint64_t slow_units,
                                        uint64_t first_token) {
  auto slow = KernelCase::work(slow_units);
  const DeviceCompletion timed_out = run_one(d, slow_slot, first_token, slow->device_call());
  EXPECT_EQ(timed_out.status, Status::timeout);
  EXPECT_FALSE(d.slot_health(slow_slot).in_service);
  EXPECT_NE(d.slot_health(slow_slot).last_error.find("job_timeout_ms"), std::string::npos) << d.slot_health(slow_slot).last_error;
  EXPECT_EQ(run_one(d, slow_slot, first_token + 1, slow->device_call()).status, Status::device_error)
      << "the slot refuses work meanwhile";
  auto ok = KernelCase::accumulate(1000, 0, 3);
  const DeviceCompletion good = run_one(d, other_slot, first_token + 2, ok->device_call());
  EXPECT_EQ(good.status, Status::ok) << "the other slot keeps working";
  EXPECT_EQ(good.value, ok->reference_value());
  std::vector<DeviceCompletion> late;
  const int64_t deadline = now_ns() + 30'000'000'000;
  while (!d.slot_health(slow_slot).in_service && now_ns() < deadline) d.poll(now_ns(), late);
  EXPECT_TRUE(late.empty());
  EXPECT_TRUE(d.slot_health(slow_slot).in_service);
  EXPECT_NE(d.slot_health(slow_slot).last_error.find("back in service"), std::string::npos) << d.slot_health(slow_slot).last_error;
  auto again = KernelCase::work(1000);
  const DeviceCompletion after = run_one(d, slow_slot, first_token + 3, again->device_call());
  EXPECT_EQ(after.status, Status::ok);
  EXPECT_EQ(after.value, 1000);
}

// Every case of the catalog the device tests run (small and edge sizes).
inline std::vector<std::unique_ptr<KernelCase>> catalog_cases() {
  std::vector<std::unique_ptr<KernelCase>> cases;
  cases.push_back(KernelCase::nop());
  cases.push_back(KernelCase::accumulate(100003, 1, 1));
  cases.push_back(KernelCase::accumulate(1, 0, 2));
  cases.push_back(KernelCase::work(5000));
  cases.push_back(KernelCase::sobel(97, 31, false, false, 3));
  cases.push_back(KernelCase::sobel(64, 8, true, true, 4));
  cases.push_back(KernelCase::matmul(33, 17, 9, 5));
  cases.push_back(KernelCase::matmul(4, 0, 3, 6));
  cases.push_back(KernelCase::dct(77, TANDEM_DCT_MODE_DCT_QUANTIZE, 75, 7));
  cases.push_back(KernelCase::dct(5, TANDEM_DCT_MODE_QUANTIZE, 20, 8));
  cases.push_back(KernelCase::dct(5, TANDEM_DCT_MODE_DCT_QUANTIZE, 0, 9));  // invalid table: value 1
  return cases;
}

// Runs `run` on every catalog case, its buffers in `rt`'s session memory (`session_memory`) or on the
// heap; returns the cases whose value or outputs differ from the reference's, or whose run failed, and
// lists them in `report`. `run` returns the status and sets the value, and may add to `why`.
inline int for_each_catalog_case(client::Runtime& rt, bool session_memory, std::string* report,
                                 const std::function<Status(KernelCase&, int64_t&, std::string&)>& run) {
  if (session_memory) KernelCase::memory() = {[&rt](size_t n) { return rt.alloc(n); }, [&rt](void* p) { rt.free(p); }};
  int failures = 0;
  {
    auto cases = catalog_cases();
    for (auto& c : cases) {
      int64_t value = 0;
      std::string why;
      const Status s = run(*c, value, why);
      const ::testing::AssertionResult outputs = s == Status::ok ? c->outputs_match() : ::testing::AssertionSuccess();
      const bool exact = s == Status::ok && value == c->reference_value() && outputs;
      if (!exact || !why.empty()) {
        ++failures;
        if (report) {
          *report += fmt::format("{}: {}, value {} (the reference's {}){}{}\n", c->name, to_string(s), value,
                                 c->reference_value(), outputs ? "" : std::string("; ") + outputs.message(),
                                 why.empty() ? "" : "; " + why);
        }
      }
    }
  }
  KernelCase::memory() = {};
  return failures;
}

// Runs every case through `rt` as one low-level job (buffers in its session memory); returns the
// failures (0: all exact).
inline int run_cases_through(client::Runtime& rt, std::string* report) {
  auto* rec = static_cast<tandem_completion_t*>(rt.alloc(sizeof(tandem_completion_t)));
  const int failures = for_each_catalog_case(rt, true, report, [&](KernelCase& c, int64_t& value, std::string&) {
    const funcs::Call call = c.device_call();
    rt::reset_record(rec);
    Status s = rt.default_queue().dispatch(c.function, call.args.data(), call.arg_count, call.workload, rec);
    if (s == Status::ok) {
      rt::WaitPolicy policy;
      policy.timeout_ns = 30'000'000'000;
      s = rt.wait(rec, policy);
    }
    value = static_cast<int64_t>(rec->value);
    return s;
  });
  rt.free(rec);
  return failures;
}

// Runs every case through `rt` as a high-level call with the access method `choice` (buffers in
// session memory or on the heap), in the runtime's mode. Each call with buffers must have reached the
// device with the method forced (`expect_method`, a TANDEM_ACCESS_*; -1: any) and run some of its units
// there. Returns the failures (0: all exact and accelerated).
inline int run_calls_through(client::Runtime& rt, client::AccessChoice choice, bool session_memory, int expect_method,
                             std::string* report) {
  const client::AccessChoice before = rt.access_choice();
  rt.set_access_choice(choice);
  const int failures = for_each_catalog_case(rt, session_memory, report, [&](KernelCase& c, int64_t& value, std::string& why) {
    client::CallReport call_report;
    funcs::Call call = c.device_call();
    const Status s = rt.run(*funcs::find_function(c.function), call, value, &call_report);
    if (s != Status::ok) return s;
    if (call.workload > 0 && call_report.counters.hw_units == 0) why = "no unit ran on the device";
    const bool has_buffers = c.function != TANDEM_FN_NOP && c.function != TANDEM_FN_WORK;
    if (has_buffers && expect_method >= 0 && call_report.access_method != expect_method) {
      why = "method " + std::to_string(call_report.access_method) + ", not " + std::to_string(expect_method);
    }
    return s;
  });
  rt.set_access_choice(before);
  return failures;
}

// Every case as a high-level call in hw mode with each method a client can force, through an
// embedded runtime opened on `config` (it reaches the heap with each of them).
inline void expect_every_client_method_embedded(const std::string& config) {
  auto rt = open_embedded(config, client::Mode::hw);
  ASSERT_TRUE(rt);
  for (auto [choice, method] : {std::pair{client::AccessChoice::zero_copy, TANDEM_ACCESS_ZERO_COPY},
                                {client::AccessChoice::copy, TANDEM_ACCESS_COPY},
                                {client::AccessChoice::scatter_gather, TANDEM_ACCESS_SCATTER_GATHER}}) {
    std::string report;
    EXPECT_EQ(run_calls_through(*rt, choice, false, method, &report), 0) << "client method " << int{method} << ":\n" << report;
  }
}

// The same through a tandemd on `config`: heap buffers by copy (the client stages them) and
// scatter-gather (tandemd gathers the pages), session memory by copy (staged, or copied by the device
// itself where it copies) and zero-copy, and the runtime's own choice for both kinds of memory.
inline void expect_every_client_method_through_tandemd(const std::string& config) {
  DaemonProcess d(config);
  ASSERT_TRUE(d.alive());
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  struct Run {
    client::AccessChoice choice;
    bool session_memory;
    int method;  // -1: the runtime's choice, not checked
  };
  // A device measured in place and with copies (OpenCL with access = "job") lets the model choose
  // between the two for session memory: not checked here (OpenclDaemon.* checks the choice).
  bool copies = false;
  for (const client::DeviceSummary& dev : rt->devices()) {
    for (const model::AccelModel& m : dev.copy_models) copies = copies || m.latency_s > 0;
  }
  for (const Run& r : {Run{client::AccessChoice::copy, false, TANDEM_ACCESS_COPY},
                       Run{client::AccessChoice::copy, true, TANDEM_ACCESS_COPY},
                       Run{client::AccessChoice::scatter_gather, false, TANDEM_ACCESS_SCATTER_GATHER},
                       Run{client::AccessChoice::zero_copy, true, TANDEM_ACCESS_ZERO_COPY},
                       Run{client::AccessChoice::automatic, true, copies ? -1 : TANDEM_ACCESS_ZERO_COPY},
                       Run{client::AccessChoice::automatic, false, -1}}) {
    std::string report;
    EXPECT_EQ(run_calls_through(*rt, r.choice, r.session_memory, r.method, &report), 0)
        << "client method " << r.method << ", " << (r.session_memory ? "session memory" : "heap") << ":\n" << report;
  }
  EXPECT_TRUE(d.alive());
}

// One hardware call of `fn` on `args` (device addresses allowed): its status and value.
inline Status run_call(client::Runtime& rt, uint16_t function, std::vector<uint64_t> args, int64_t& value,
                client::CallReport* report = nullptr) {
  const funcs::FunctionInfo* fn = funcs::find_function(function);
  funcs::Call call;
  funcs::BufferList buffers;
  if (Status s = funcs::describe_call(*fn, args, call, buffers); s != Status::ok) return s;
  for (uint32_t i = 0; i < buffers.count; ++i) call.buffers[i] = reinterpret_cast<void*>(call.args[buffers.items[i].arg]);
  return rt.run(*fn, call, value, report);
}

// Sobel of sobel of an image (seeded), three times over, on device-local buffers: the image copied in
// once, the result (written at an offset the device cannot make a sub-buffer at) copied out once.
// "" if it equals the chained reference, else what went wrong.
inline std::string sobel_chain_on_device(client::Runtime& rt, uint64_t seed) {
  constexpr uint32_t kWidth = 301, kHeight = 97, kPixels = kWidth * kHeight;
  // Each case owns its buffers (its args point at them): the same seed gives the same image.
  testing::Case image = testing::sobel_case(seed, kWidth, kHeight), once = testing::sobel_case(seed, kWidth, kHeight),
                twice = testing::sobel_case(seed, kWidth, kHeight);
  testing::run_software(once);
  std::memcpy(twice.buffers[0].data(), once.out().data(), kPixels);
  testing::run_software(twice);
  auto in = rt.alloc_local(kPixels), mid = rt.alloc_local(kPixels), out = rt.alloc_local(kPixels + 1);
  if (!in || !mid || !out) return "alloc_local: " + in.message() + mid.message() + out.message();
  std::string why;
  if (rt.copy_local(in.value(), testing::address(image.buffers[0].data()), kPixels) != Status::ok) why = "copy in failed";
  for (int round = 0; round < 3 && why.empty(); ++round) {
    for (auto [src, dst] : {std::pair{in.value(), mid.value()}, std::pair{mid.value(), out.value() + 1}}) {
      int64_t value = -1;
      client::CallReport report;
      const Status s = run_call(rt, TANDEM_FN_SOBEL, {src, dst, kWidth, kHeight}, value, &report);
      if (s != Status::ok) why = "sobel: " + std::string(to_string(s));
      else if (report.access_method != TANDEM_ACCESS_DEVICE_LOCAL) why = "not run as device-local";
      else if (report.counters.sw_units != 0) why = "device-local data got a CPU share";
    }
  }
  std::vector<uint8_t> result(kPixels);
  if (why.empty() && rt.copy_local(testing::address(result.data()), out.value() + 1, kPixels) != Status::ok) why = "copy out failed";
  if (why.empty() && result != twice.out()) why = "the result differs from the chained reference";
  for (auto& b : {in, mid, out}) {
    if (rt.free_local(b.value()) != Status::ok && why.empty()) why = "free_local failed";
  }
  return why;
}

// No byte of the runtime's host window for device-local memory was written: the data lived on the device.
inline bool host_window_untouched(client::Runtime& rt) {
  const devices::LocalWindow w = dynamic_cast<client::EmbeddedRuntime&>(rt).dispatcher().local_window();
  if (w.base == nullptr) return false;
  for (uint64_t i = 0; i < w.bytes; ++i) {
    if (w.base[i] != 0) return false;
  }
  return true;
}

// Forks `n` client processes of the daemon at `socket`, each running `body(i, runtime)` (its exit
// status: 0 when all was right), and expects every one to exit 0 (100: it could not connect).
inline void run_clients(const std::string& socket, int n, const std::function<int(int, client::Runtime&)>& body) {
  std::vector<pid_t> children;
  for (int i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      client::RuntimeOptions o;
      o.socket_path = socket;
      o.mode = client::Mode::hw;
      auto rt = client::Runtime::open(o);
      _exit(rt.ok() ? std::min(body(i, *rt.value()), 99) : 100);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "client " << pid << ": wrong or failed results (100: could not connect)";
  }
}


// A client process's part of the daemon tests: `rounds` sobel chains on its own device-local buffers
// (seeded by client and round); the failures, each printed.
inline int sobel_chains_of_client(client::Runtime& rt, int client, int rounds) {
  int failures = 0;
  for (int round = 0; round < rounds; ++round) {
    const std::string why = sobel_chain_on_device(rt, 20 + static_cast<uint64_t>(client) * 3 + static_cast<uint64_t>(round));
    if (!why.empty()) {
      std::fprintf(stderr, "client %d: %s\n", client, why.c_str());
      ++failures;
    }
  }
  return failures;
}

// What tandemd's status says after `chains` sobel chains (sobel_chain_on_device) on `device`'s
// local memory of `capacity` bytes: every buffer freed, each image moved in once and out once.
inline void expect_local_memory_after_chains(const nlohmann::json& status, const char* device, uint64_t capacity,
                                             uint64_t chains) {
  ASSERT_TRUE(status.contains("local_memory")) << status.dump();
  EXPECT_EQ(status["local_memory"]["device"], device);
  EXPECT_EQ(status["local_memory"]["capacity_bytes"].get<uint64_t>(), capacity);
  EXPECT_EQ(status["local_memory"]["buffers"].get<uint32_t>(), 0u);
  EXPECT_EQ(status["local_memory"]["used_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(status["copy_engines"]["bytes_to_device"].get<uint64_t>(), chains * 301u * 97u);
  EXPECT_EQ(status["copy_engines"]["bytes_from_device"].get<uint64_t>(), chains * 301u * 97u);
}

}  // namespace tandem::testing
