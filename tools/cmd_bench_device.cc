// `tandem bench device --device opencl|cuda`: a real device shared through tandem against the same
// device used directly by one process (what a user has today), all measured in one run.
//
//  1. 8 processes each running short jobs (accumulate of 1 KiB): each with its own context (its start-up
//     cost and memory, then jobs/s), against 8 clients of one tandemd that holds the device. Both sets
//     of processes stay alive and take turns in windows (4 rounds of 2 s each); the ratio is the median
//     of the rounds' ratios. Runs first, before this process touches the device (a process that forks
//     must not own a driver's threads).
//  2. The no-op round trip through tandem (embedded runtime) against a raw enqueue + finish of an
//     empty kernel on the same device (OpenCL: clEnqueueNDRangeKernel + clFinish; CUDA: a launch +
//     cudaStreamSynchronize); on CUDA also through a persistent block polling its ring (no launch).
//  3. The cooperative split: accumulate and sobel from 1 KiB to 64 MiB, CPU only, device only and the
//     partitioner's split (auto), medians.
//  4. Chained jobs: 8 sobel jobs in a row over one image (each reading the last one's output), its
//     buffers in host memory (every job moves its input in and its output out) against device-local
//     buffers (the image copied in once, the result out once), from 16 KiB to 16 MiB, medians.
// JSON: noop_rtt_over_raw, aggregate_jobs_per_s_over_separate_contexts, local_chain_over_host_min (the
// least gain of device-local buffers over host memory for a chain), and every figure behind them.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <new>
#include <optional>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "base/stats.hpp"
#include "client/runtime.hpp"
#include "devices/device_factory.hpp"
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "funcs/function.hpp"
#include "noop_probe.hpp"
#include "output.hpp"
#include "rt/completion.hpp"
#include "support/measure.hpp"
#if TANDEM_HAVE_OPENCL
#include "devices/opencl/context.hpp"
#endif
#if TANDEM_HAVE_CUDA
#include "devices/cuda/cuda_context.hpp"
#endif

namespace tandem::tools {

namespace {

struct DeviceBenchOptions {
  std::string device = "opencl";
  uint32_t processes = 8;
  uint32_t rounds = 4;      // phase 1: windows of each set-up, alternating
  double window_s = 2;      // each window's length (phase 1)
  size_t noop_samples = 5000;
  bool quick = false;
  bool json_output = false;
  std::string out;
  std::string access;  // the device's `access` setting ("": its default)
};

int64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<int64_t>(resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
}

// Phase 1 alternates the two set-ups in windows (separate contexts, tandemd, separate, tandemd, ...),
// every process of both alive throughout and asleep outside its own windows: each round's ratio
// compares two windows a few seconds apart, so the slow swings of a shared machine's speed (the
// separate contexts alone ranged 59-94k jobs/s between runs) cancel out of it.
constexpr uint32_t kMaxRounds = 8;
// A process gives up waiting for the window plan after this long (its parent failed).
constexpr int64_t kPlanTimeoutNs = 300'000'000'000;

// What one process of phase 1 reports through its pipe.
struct ProcessReport {
  int64_t setup_ns = 0;     // from nothing to ready for the first job
  int64_t rss_delta = 0;    // resident memory that setup added
  uint64_t jobs[kMaxRounds] = {};     // per round: jobs completed in this process's window
  double seconds[kMaxRounds] = {};    // per round: the window's measured length
  int32_t errors = 0;       // failed or wrong jobs
  int32_t late = 0;         // 1: setup ended after the first window began
};

// A short job: accumulate over 256 int32 (1 KiB); its expected sum.
struct ShortJob {
  int32_t* data = nullptr;
  int64_t expected = 0;
  funcs::Call call;
  void init(int32_t* memory) {
    data = memory;
    for (int i = 0; i < 256; ++i) data[i] = i * 7919 - 1000000;
    expected = 0;
    for (int i = 0; i < 256; ++i) expected += data[i];
    call = funcs::Call{};
    call.function = TANDEM_FN_ACCUMULATE;
    call.workload = 1024;
    call.arg_count = 2;
    call.args = {reinterpret_cast<uint64_t>(data), 256};
    call.buffers[0] = data;
  }
};

void sleep_until_ns(int64_t t) {
  const timespec ts{static_cast<time_t>(t / 1'000'000'000), static_cast<long>(t % 1'000'000'000)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// When the windows are: set by the parent in shared memory once every process is ready (0 until then).
struct WindowPlan {
  std::atomic<int64_t> start_at{0};
  int64_t window_ns = 0;
  int64_t gap_ns = 0;
  uint32_t rounds = 0;
  // Group g's window of round r (groups alternate within a round).
  int64_t begin(uint32_t round, uint32_t group) const {
    return start_at.load(std::memory_order_acquire) + (2 * int64_t{round} + group) * (window_ns + gap_ns);
  }
};

// One group of phase 1's processes: each runs `setup(report)` then, in every round's window of its
// group, `one_job()` (true: a right result) as often as it can.
struct ProcessGroup {
  std::vector<std::pair<pid_t, int>> children;  // pid, its report pipe
  int ready_fd = -1;                              // a byte per process once its setup ended
};

template <class Setup>
ProcessGroup spawn_group(uint32_t n, uint32_t group, const WindowPlan& plan, Setup setup) {
  ProcessGroup g;
  int ready[2];
  if (pipe(ready) != 0) throw Error(Status::io_error, "pipe");
  g.ready_fd = ready[0];
  for (uint32_t i = 0; i < n; ++i) {
    // A pipe or fork that fails part-way leaves fewer processes: the parent's wait and collection
    // cover those that exist (a throw here would leave them waiting for a plan that never comes).
    int fds[2];
    if (pipe(fds) != 0) break;
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      break;
    }
    if (pid == 0) {
      close(fds[0]);
      close(ready[0]);
      signal(SIGPIPE, SIG_IGN);  // a parent that stopped waiting for us: a failed write, not a death
      ProcessReport r;
      bool signalled = false;
      auto signal_ready = [&] {
        const char byte = 1;
        if (!signalled) signalled = write(ready[1], &byte, 1) == 1;
      };
      try {
        auto one_job = setup(r);  // a callable: one job, true if its result was right
        signal_ready();
        // The parent plans the windows once both groups are ready; a parent that never does (it
        // failed) must not leave us behind for good.
        const int64_t give_up = now_ns() + kPlanTimeoutNs;
        while (plan.start_at.load(std::memory_order_acquire) == 0) {
          if (now_ns() > give_up) throw Error(Status::timeout, "no window plan");
          std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (now_ns() > plan.begin(0, group)) r.late = 1;
        for (uint32_t round = 0; round < plan.rounds; ++round) {
          const int64_t begin = plan.begin(round, group), end = begin + plan.window_ns;
          sleep_until_ns(begin);
          const int64_t t0 = now_ns();
          while (now_ns() < end) {
            if (!one_job()) r.errors++;
            r.jobs[round]++;
          }
          r.seconds[round] = static_cast<double>(now_ns() - t0) * 1e-9;
        }
      } catch (...) {
        r.errors += 1;
        signal_ready();
      }
      const ssize_t w = write(fds[1], &r, sizeof r);
      _exit(w == static_cast<ssize_t>(sizeof r) ? 0 : 1);
    }
    close(fds[1]);
    g.children.emplace_back(pid, fds[0]);
  }
  close(ready[1]);
  return g;
}

// Waits until every process of `g` finished its setup, or all that are left exited, or 120 s passed
// (a process that is still setting up then counts as late).
void wait_ready(ProcessGroup& g) {
  size_t got = 0;
  const int64_t deadline = now_ns() + 120'000'000'000;
  char buf[64];
  while (got < g.children.size()) {
    const int64_t left_ms = (deadline - now_ns()) / 1'000'000;
    if (left_ms <= 0) break;
    pollfd p{g.ready_fd, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<int64_t>(left_ms, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    const ssize_t k = read(g.ready_fd, buf, sizeof buf);
    if (k <= 0) break;  // every writer gone: the rest failed before signalling
    got += static_cast<size_t>(k);
  }
  close(g.ready_fd);
  g.ready_fd = -1;
}

std::vector<ProcessReport> collect(ProcessGroup& g) {
  std::vector<ProcessReport> reports;
  for (auto [pid, fd] : g.children) {
    ProcessReport r;
    if (read(fd, &r, sizeof r) != static_cast<ssize_t>(sizeof r)) {
      r = ProcessReport{};
      r.errors = 1;
    }
    close(fd);
    int status = 0;
    waitpid(pid, &status, 0);
    reports.push_back(r);
  }
  return reports;
}

// A group's aggregate jobs/s in one round: every process's jobs over its window, summed.
double round_jobs_per_s(const std::vector<ProcessReport>& reports, uint32_t round) {
  double sum = 0;
  for (const ProcessReport& r : reports) {
    if (r.seconds[round] > 0) sum += static_cast<double>(r.jobs[round]) / r.seconds[round];
  }
  return sum;
}

nlohmann::ordered_json summarize_processes(const std::vector<ProcessReport>& reports, uint32_t rounds) {
  nlohmann::ordered_json j;
  std::vector<double> per_round, setup, rss;
  int errors = 0, late = 0;
  for (uint32_t k = 0; k < rounds; ++k) per_round.push_back(round_jobs_per_s(reports, k));
  for (const ProcessReport& r : reports) {
    setup.push_back(static_cast<double>(r.setup_ns) * 1e-6);
    rss.push_back(static_cast<double>(r.rss_delta) / (1 << 20));
    errors += r.errors;
    late += r.late;
  }
  j["processes"] = reports.size();  // fewer than asked if a pipe or fork failed
  j["aggregate_jobs_per_s"] = median(per_round);
  j["aggregate_jobs_per_s_per_round"] = per_round;
  j["setup_ms_median"] = median(setup);
  j["setup_ms_max"] = setup.empty() ? 0 : *std::max_element(setup.begin(), setup.end());
  j["rss_mib_per_process_median"] = median(rss);
  j["errors"] = errors;
  j["late_starts"] = late;
  return j;
}

// `extra`: more lines of the device's section (CUDA: mode = "persistent").
std::string device_section(const DeviceBenchOptions& o, const std::string& resident, uint32_t slots,
                           const std::string& extra = "") {
  return fmt::format("[device]\nkinds = [\"{0}\"]\n[device.{0}]\nslots = {1}\nresident = [{2}]\n{3}{4}", o.device, slots,
                     resident, extra, o.access.empty() ? "" : fmt::format("access = \"{}\"\n", o.access));
}

// An embedded runtime on the benchmarked device, the `resident` functions in `slots` slots.
std::unique_ptr<client::Runtime> open_embedded_on(const DeviceBenchOptions& o, std::initializer_list<uint16_t> resident,
                                                  uint32_t slots, client::Mode mode, const std::string& extra = "") {
  std::string names;
  for (uint16_t f : resident) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", funcs::find_function(f)->name);
  client::RuntimeOptions ro;
  ro.embedded = true;
  ro.mode = mode;
  ro.config_text = device_section(o, names, slots, extra);
  auto opened = client::Runtime::open(ro);
  if (!opened) throw Error(opened.status(), "embedded runtime: " + opened.message());
  // A resident function whose kernel did not build is left out by the runtime (a warning on stderr):
  // its figures would be the CPU's, so the benchmark stops instead.
  for (uint16_t f : resident) {
    if (opened.value()->device_kind(f) != o.device) throw devices::kernel_not_built(funcs::find_function(f)->name, o.device);
  }
  return std::move(opened.value());
}

// ---- the device used directly (the raw baselines) ----
struct RawDevice {
  virtual ~RawDevice() = default;
  virtual std::string description() const = 0;
  virtual Status noop() = 0;                                   // empty kernel + wait
  virtual Result<int64_t> run(const funcs::Call& call) = 0;    // a whole job, synchronously
};

#if TANDEM_HAVE_OPENCL
struct RawOpencl final : RawDevice {
  devices::opencl::ClContext context{devices::opencl::ClOptions{}};
  devices::opencl::ClSlot slot{context, 0};
  devices::opencl::KernelPtr nop;
  RawOpencl() {
    cl_int err = CL_SUCCESS;
    nop.reset(clCreateKernel(context.program(devices::KernelId::nop).program.get(), "tandem_nop", &err));
    if (err != CL_SUCCESS) throw Error(Status::device_error, devices::opencl::cl_message("clCreateKernel(tandem_nop)", err));
  }
  std::string description() const override { return devices::opencl::describe_device(context.device()); }
  Status noop() override {
    const size_t one = 1;
    cl_int err = clEnqueueNDRangeKernel(slot.queue(), nop.get(), 1, nullptr, &one, nullptr, 0, nullptr, nullptr);
    if (err == CL_SUCCESS) err = clFinish(slot.queue());
    return err == CL_SUCCESS ? Status::ok : Status::device_error;
  }
  Result<int64_t> run(const funcs::Call& call) override { return slot.run(call, devices::opencl::ClAccess::copy); }
};
#endif

#if TANDEM_HAVE_CUDA
struct RawCuda final : RawDevice {
  devices::cuda::CudaContext context{devices::cuda::CudaOptions{}};
  devices::cuda::CudaSlot slot{context, 0, devices::cuda::CudaMode::launch};
  std::string description() const override { return devices::cuda::describe_cuda_device(context.device()); }
  Status noop() override { return slot.raw_empty_launch(); }
  Result<int64_t> run(const funcs::Call& call) override { return slot.run(call, devices::cuda::CudaAccess::copy); }
};
#endif

std::unique_ptr<RawDevice> open_raw(const std::string& device) {
#if TANDEM_HAVE_OPENCL
  if (device == "opencl") return std::make_unique<RawOpencl>();
#endif
#if TANDEM_HAVE_CUDA
  if (device == "cuda") return std::make_unique<RawCuda>();
#endif
  throw Error(Status::invalid_argument, "--device " + device + ": this build has no such device (opencl or cuda)");
}

// Phase 1.
nlohmann::ordered_json bench_processes(const DeviceBenchOptions& o) {
  auto* plan = static_cast<WindowPlan*>(
      mmap(nullptr, sizeof(WindowPlan), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0));
  if (plan == MAP_FAILED) throw Error(Status::no_memory, "mmap");
  new (plan) WindowPlan;
  plan->window_ns = static_cast<int64_t>(o.window_s * 1e9);
  plan->gap_ns = 100'000'000;  // the last window's jobs drain and its threads go to sleep
  plan->rounds = std::clamp<uint32_t>(o.rounds, 1, kMaxRounds);
  std::optional<ProcessGroup> separate, clients;
  // On a failure after a fork: windows planned in the past end every process at once; then reap them.
  struct Cleanup {
    WindowPlan* plan;
    std::optional<ProcessGroup>& a;
    std::optional<ProcessGroup>& b;
    bool armed = true;
    ~Cleanup() {
      if (!armed) return;
      plan->start_at.store(1, std::memory_order_release);
      for (std::optional<ProcessGroup>* g : {&a, &b}) {
        if (!*g) continue;
        if ((*g)->ready_fd >= 0) close((*g)->ready_fd);
        (void)collect(**g);
      }
      munmap(plan, sizeof(WindowPlan));
    }
  } cleanup{plan, separate, clients};
  // Each process with its own context (group 0), set up first and alone.
  separate = spawn_group(o.processes, 0, *plan, [&](ProcessReport& r) {
    const int64_t rss0 = rss_bytes();
    const int64_t t0 = now_ns();
    auto raw = std::shared_ptr<RawDevice>(open_raw(o.device));
    auto memory = std::make_shared<std::vector<int32_t>>(256);
    auto job = std::make_shared<ShortJob>();
    job->init(memory->data());
    if (!raw->run(job->call).ok()) r.errors++;  // the first job completes the set-up (kernel selection)
    r.setup_ns = now_ns() - t0;
    r.rss_delta = rss_bytes() - rss0;
    return [raw, memory, job] {
      auto v = raw->run(job->call);
      return v.ok() && v.value() == job->expected;
    };
  });
  wait_ready(*separate);
  // One tandemd holding the device (group 1), each process a client session. A slot per client, every
  // one holding accumulate: each client can have its job in flight.
  const uint32_t slots = o.processes;
  std::string resident;
  for (uint32_t i = 0; i < slots; ++i) resident += std::string(i ? ", " : "") + "\"accumulate\"";
  DaemonLauncher daemon(device_section(o, resident, slots));  // on a failure, `cleanup` ends the first group
  const int64_t daemon_startup_ns = daemon.startup_ns();
  clients = spawn_group(o.processes, 1, *plan, [&](ProcessReport& r) {
    const int64_t rss0 = rss_bytes();
    const int64_t t0 = now_ns();
    client::RuntimeOptions ro;
    ro.socket_path = daemon.socket();
    ro.mode = client::Mode::hw;
    ro.wait.mode = rt::WaitMode::block;
    auto opened = client::Runtime::open(ro);
    if (!opened) throw Error(opened.status(), opened.message());
    std::shared_ptr<client::Runtime> rt(std::move(opened.value()));
    auto job = std::make_shared<ShortJob>();
    job->init(static_cast<int32_t*>(rt->alloc(1024)));
    auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
    rt::WaitPolicy policy;
    policy.mode = rt::WaitMode::block;
    policy.timeout_ns = 10'000'000'000;
    auto one = [rt, job, rec, policy] {
      rt::reset_record(rec);
      Status s = rt->default_queue().dispatch(TANDEM_FN_ACCUMULATE, job->call.args.data(), 2, 1024, rec);
      if (s == Status::ok) s = rt->wait(rec, policy);
      return s == Status::ok && static_cast<int64_t>(rec->value) == job->expected;
    };
    if (!one()) r.errors++;
    r.setup_ns = now_ns() - t0;
    r.rss_delta = rss_bytes() - rss0;
    return one;
  });
  wait_ready(*clients);
  plan->start_at.store(now_ns() + 200'000'000, std::memory_order_release);
  const std::vector<ProcessReport> sep_reports = collect(*separate), tan_reports = collect(*clients);
  cleanup.armed = false;
  const uint32_t plan_rounds = plan->rounds;
  munmap(plan, sizeof(WindowPlan));
  nlohmann::ordered_json j;
  j["rounds"] = plan_rounds;
  j["window_s"] = o.window_s;
  j["separate_contexts"] = summarize_processes(sep_reports, plan_rounds);
  j["through_tandemd"] = summarize_processes(tan_reports, plan_rounds);
  j["daemon_startup_ms"] = static_cast<double>(daemon_startup_ns) * 1e-6;  // once, before any client
  std::vector<double> ratios;
  for (uint32_t k = 0; k < plan_rounds; ++k) {
    const double sep = round_jobs_per_s(sep_reports, k), tan = round_jobs_per_s(tan_reports, k);
    ratios.push_back(sep > 0 ? tan / sep : 0);
  }
  j["ratio_per_round"] = ratios;
  j["aggregate_jobs_per_s_over_separate_contexts"] = median(ratios);
  return j;
}

// Phase 2.
nlohmann::ordered_json bench_noop(const DeviceBenchOptions& o, RawDevice& raw) {
  nlohmann::ordered_json j;
  bench::SamplePlan plan;
  plan.samples = o.noop_samples;
  plan.warmup = o.noop_samples / 10;
  auto raw_samples = bench::sample_loop_status(plan, [&] { return raw.noop(); });
  if (!raw_samples) throw Error(raw_samples.status(), "raw no-op: " + raw_samples.message());
  auto rt = open_embedded_on(o, {TANDEM_FN_NOP}, 1, client::Mode::hw);
  auto tandem_samples = noop_round_trips(*rt, rt->default_queue(), rt::WaitMode::spin, o.noop_samples, -1);
  if (!tandem_samples) throw Error(tandem_samples.status(), "no-op through tandem: " + tandem_samples.message());
  const bench::Summary r = bench::summarize(raw_samples.value()), t = bench::summarize(tandem_samples.value());
  j["raw_median_ns"] = r.median;
  j["raw_p99_ns"] = r.p99;
  j["tandem_median_ns"] = t.median;
  j["tandem_min_ns"] = t.min;
  j["tandem_p99_ns"] = t.p99;
  j["noop_rtt_over_raw"] = r.median > 0 ? t.median / r.median : 0;
  rt.reset();
  if (o.device == "cuda") {  // the persistent block: a job starts from the ring, without a launch
    auto persistent = open_embedded_on(o, {TANDEM_FN_NOP}, 1, client::Mode::hw, "mode = \"persistent\"\n");
    auto p = noop_round_trips(*persistent, persistent->default_queue(), rt::WaitMode::spin, o.noop_samples, -1);
    if (!p) throw Error(p.status(), "no-op through tandem (persistent): " + p.message());
    const bench::Summary ps = bench::summarize(p.value());
    j["tandem_persistent_median_ns"] = ps.median;
    j["tandem_persistent_p99_ns"] = ps.p99;
    j["noop_rtt_persistent_over_raw"] = r.median > 0 ? ps.median / r.median : 0;
  }
  return j;
}

// Phase 3: one function at one size in three modes.
nlohmann::ordered_json bench_split(const DeviceBenchOptions& o) {
  auto runtime = open_embedded_on(o, {TANDEM_FN_ACCUMULATE, TANDEM_FN_SOBEL}, 2, client::Mode::auto_mode);
  client::Runtime& rt = *runtime;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<uint64_t> sizes = {1 << 10, 16 << 10, 256 << 10, 4 << 20, 64 << 20};
  if (o.quick) sizes = {1 << 10, 64 << 10, 1 << 20};
  for (const char* name : {"accumulate", "sobel"}) {
    const funcs::FunctionInfo& fn = *funcs::find_function(name);
    for (uint64_t bytes : sizes) {
      funcs::Call call;
      call.function = fn.id;
      void* in = rt.alloc(bytes);
      void* out = nullptr;
      std::memset(in, 0x5a, bytes);
      if (fn.id == TANDEM_FN_ACCUMULATE) {
        call.args = {reinterpret_cast<uint64_t>(in), bytes / 4};
        call.arg_count = 2;
        call.workload = bytes;
        call.buffers[0] = in;
      } else {
        uint64_t side = 1;
        while (side * side < bytes) side *= 2;
        if (side * side > bytes) {  // an odd power of two: the nearest square at or below
          rt.free(in);
          side /= 2;
          in = rt.alloc(side * side);
          std::memset(in, 0x5a, side * side);
        }
        out = rt.alloc(side * side);
        call.args = {reinterpret_cast<uint64_t>(in), reinterpret_cast<uint64_t>(out), side, side};
        call.arg_count = 4;
        call.workload = side * side;
        call.buffers = {in, out};
      }
      nlohmann::ordered_json row;
      row["function"] = name;
      row["bytes"] = bytes;
      const size_t samples = bytes >= (4u << 20) ? 5 : (o.quick ? 20 : 200);
      int64_t expected = 0;
      bool first = true;
      for (auto [mode, key] : {std::pair{client::Mode::sw, "cpu_only_s"}, {client::Mode::hw, "device_only_s"},
                               {client::Mode::auto_mode, "split_s"}}) {
        rt.set_mode(mode);
        std::vector<double> t;
        for (size_t i = 0; i < samples + 1; ++i) {
          funcs::Call c = call;
          int64_t value = 0;
          const int64_t t0 = now_ns();
          const Status s = rt.run(fn, c, value);
          const int64_t t1 = now_ns();
          if (s != Status::ok) throw Error(s, fmt::format("{} {} B: {}", name, bytes, to_string(s)));
          if (first) expected = value, first = false;
          if (value != expected) throw Error(Status::device_error, fmt::format("{} {} B: results differ between modes", name, bytes));
          if (i > 0) t.push_back(static_cast<double>(t1 - t0) * 1e-9);
        }
        row[key] = median(t);
      }
      {  // one packet for the whole call, spin-waited: the device path without the partitioner
        auto* rec = static_cast<tandem_completion_t*>(rt.alloc(sizeof(tandem_completion_t)));
        rt::WaitPolicy policy;
        policy.mode = rt::WaitMode::spin;
        policy.timeout_ns = 30'000'000'000;
        std::vector<double> t;
        for (size_t i = 0; i < samples + 1; ++i) {
          rt::reset_record(rec);
          const int64_t t0 = now_ns();
          Status st = rt.default_queue().dispatch(fn.id, call.args.data(), call.arg_count, call.workload, rec);
          if (st == Status::ok) st = rt.wait(rec, policy);
          const int64_t t1 = now_ns();
          if (st != Status::ok || static_cast<int64_t>(rec->value) != expected) {
            throw Error(Status::device_error, fmt::format("{} {} B: one packet failed ({})", name, bytes, to_string(st)));
          }
          if (i > 0) t.push_back(static_cast<double>(t1 - t0) * 1e-9);
        }
        row["device_packet_s"] = median(t);
        rt.free(rec);
      }
      const double best_single = std::min(row["cpu_only_s"].get<double>(), row["device_only_s"].get<double>());
      row["split_speedup_over_best_single"] = best_single / row["split_s"].get<double>();
      rows.push_back(row);
      rt.free(in);
      if (out) rt.free(out);
    }
  }
  rt.set_mode(client::Mode::auto_mode);
  return rows;
}

// Phase 4: a chain of sobel jobs on host buffers against device-local buffers.
constexpr uint32_t kChainJobs = 8;

nlohmann::ordered_json bench_chain(const DeviceBenchOptions& o) {
  auto runtime = open_embedded_on(o, {TANDEM_FN_SOBEL}, 1, client::Mode::hw);
  client::Runtime& rt = *runtime;
  const funcs::FunctionInfo& fn = *funcs::find_function(TANDEM_FN_SOBEL);
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  std::vector<uint32_t> sides = {128, 512, 2048, 4096};  // 16 KiB .. 16 MiB
  if (o.quick) sides = {128, 512};
  for (uint32_t side : sides) {
    const uint64_t pixels = uint64_t{side} * side;
    auto sobel = [&](uint64_t src, uint64_t dst) {
      funcs::Call call;
      call.function = fn.id;
      call.args = {src, dst, side, side};
      call.arg_count = 4;
      call.workload = pixels;
      call.buffers = {reinterpret_cast<void*>(src), reinterpret_cast<void*>(dst)};
      int64_t value = 0;
      if (const Status s = rt.run(fn, call, value); s != Status::ok) {
        throw Error(s, fmt::format("chain of sobel {}x{}: {}", side, side, to_string(s)));
      }
    };
    std::vector<uint8_t> image(pixels), host_result(pixels), local_result(pixels);
    for (uint64_t i = 0; i < pixels; ++i) image[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
    // The chain ping-pongs between two buffers: with an even length the result is back in the first.
    auto chain = [&](uint64_t a, uint64_t b) {
      for (uint32_t k = 0; k < kChainJobs; ++k) k % 2 == 0 ? sobel(a, b) : sobel(b, a);
    };
    auto* a = static_cast<uint8_t*>(rt.alloc(pixels));
    auto* b = static_cast<uint8_t*>(rt.alloc(pixels));
    auto la = rt.alloc_local(pixels), lb = rt.alloc_local(pixels);
    if (a == nullptr || b == nullptr) throw Error(Status::no_memory, "chain: session memory");
    const size_t samples = pixels >= (4u << 20) ? 5 : (o.quick ? 5 : 21);
    std::vector<double> host_s, local_s;
    for (size_t i = 0; i < samples + 1; ++i) {
      std::memcpy(a, image.data(), pixels);
      int64_t t0 = now_ns();
      chain(reinterpret_cast<uint64_t>(a), reinterpret_cast<uint64_t>(b));
      int64_t t1 = now_ns();
      if (i > 0) host_s.push_back(static_cast<double>(t1 - t0) * 1e-9);
      if (!la || !lb) continue;
      t0 = now_ns();
      Status st = rt.copy_local(la.value(), reinterpret_cast<uint64_t>(image.data()), pixels);
      if (st == Status::ok) chain(la.value(), lb.value());
      if (st == Status::ok) st = rt.copy_local(reinterpret_cast<uint64_t>(local_result.data()), la.value(), pixels);
      t1 = now_ns();
      if (st != Status::ok) throw Error(st, fmt::format("chain of sobel {}x{} on device-local buffers", side, side));
      if (i > 0) local_s.push_back(static_cast<double>(t1 - t0) * 1e-9);
    }
    std::memcpy(host_result.data(), a, pixels);
    nlohmann::ordered_json row;
    row["side"] = side;
    row["bytes"] = pixels;
    row["jobs"] = kChainJobs;
    row["host_chain_s"] = median(host_s);
    if (la && lb) {
      if (local_result != host_result) throw Error(Status::device_error, fmt::format("chain {}x{}: results differ", side, side));
      row["local_chain_s"] = median(local_s);
      row["local_over_host"] = row["host_chain_s"].get<double>() / row["local_chain_s"].get<double>();
      (void)rt.free_local(la.value());
      (void)rt.free_local(lb.value());
    } else {
      row["local_chain_s"] = nullptr;  // the device has no local memory here
      row["why_not_local"] = (la ? lb : la).message();
    }
    rt.free(a);
    rt.free(b);
    rows.push_back(row);
  }
  return rows;
}

void run_device_bench(const DeviceBenchOptions& in) {
  DeviceBenchOptions o = in;
  if (o.quick) {
    o.rounds = std::min<uint32_t>(o.rounds, 2);
    o.window_s = 0.5;
    o.noop_samples = 500;
  }
  if (o.device == "cuda" && o.access == "job") throw Error(Status::invalid_argument, "--access job: OpenCL only (CUDA: copy or zero_copy)");
  nlohmann::ordered_json report;
  report["device"] = o.device;
  report["access"] = o.access.empty() ? "default" : o.access;
  report["processes"] = bench_processes(o);
  auto raw = open_raw(o.device);
  report["description"] = raw->description();
  report["noop"] = bench_noop(o, *raw);
  raw.reset();
  report["split"] = bench_split(o);
  report["chain"] = bench_chain(o);
  report["noop_rtt_over_raw"] = report["noop"]["noop_rtt_over_raw"];
  report["aggregate_jobs_per_s_over_separate_contexts"] = report["processes"]["aggregate_jobs_per_s_over_separate_contexts"];
  double least = 0;
  for (const auto& r : report["chain"]) {
    if (r.contains("local_over_host")) {
      const double g = r["local_over_host"].get<double>();
      least = least == 0 ? g : std::min(least, g);
    }
  }
  report["local_chain_over_host_min"] = least;  // 0: no device-local memory
  if (emit_json_report(report, o.out, o.json_output)) return;
  fmt::print("device: {} ({}), access {}\n", o.device, report["description"].get<std::string>(), report["access"].get<std::string>());
  const auto& n = report["noop"];
  fmt::print("no-op round trip: tandem {:.1f} us median (p99 {:.1f}), raw enqueue+finish {:.1f} us -> {:.2f}x raw\n",
             n["tandem_median_ns"].get<double>() / 1e3, n["tandem_p99_ns"].get<double>() / 1e3,
             n["raw_median_ns"].get<double>() / 1e3, n["noop_rtt_over_raw"].get<double>());
  if (n.contains("noop_rtt_persistent_over_raw")) {
    fmt::print("no-op round trip, persistent mode: tandem {:.1f} us median (p99 {:.1f}) -> {:.2f}x the raw launch\n",
               n["tandem_persistent_median_ns"].get<double>() / 1e3, n["tandem_persistent_p99_ns"].get<double>() / 1e3,
               n["noop_rtt_persistent_over_raw"].get<double>());
  }
  const auto& p = report["processes"];
  for (const char* k : {"separate_contexts", "through_tandemd"}) {
    if (p[k]["processes"].get<size_t>() != o.processes) {
      fmt::print("warning: {} ran {} processes of {} (a pipe or fork failed)\n", k, p[k]["processes"].get<size_t>(), o.processes);
    }
    fmt::print("{} processes, {:<17}: {:>9.0f} jobs/s aggregate (median round), start-up {:.1f} ms median (max {:.1f}), +{:.1f} MiB "
               "resident each, {} errors, {} late starts\n",
               o.processes, k, p[k]["aggregate_jobs_per_s"].get<double>(), p[k]["setup_ms_median"].get<double>(),
               p[k]["setup_ms_max"].get<double>(), p[k]["rss_mib_per_process_median"].get<double>(),
               p[k]["errors"].get<int>(), p[k]["late_starts"].get<int>());
  }
  fmt::print("tandemd's own start-up (once, before its first client): {:.1f} ms\n", p["daemon_startup_ms"].get<double>());
  std::string rounds;
  for (const auto& r : p["ratio_per_round"]) rounds += fmt::format(" {:.2f}", r.get<double>());
  fmt::print("aggregate jobs/s through tandemd over separate contexts: {:.2f}x (median of {} rounds of {:.1f} s "
             "windows, taking turns:{})\n",
             p["aggregate_jobs_per_s_over_separate_contexts"].get<double>(), p["rounds"].get<uint32_t>(),
             p["window_s"].get<double>(), rounds);
  fmt::print("{:<11} {:>10} {:>12} {:>12} {:>12} {:>12} {:>8}\n", "function", "bytes", "cpu only", "device only",
             "one packet", "split", "gain");
  for (const auto& r : report["split"]) {
    fmt::print("{:<11} {:>10} {:>10.1f}us {:>10.1f}us {:>10.1f}us {:>10.1f}us {:>7.2f}x\n", r["function"].get<std::string>(),
               r["bytes"].get<uint64_t>(), r["cpu_only_s"].get<double>() * 1e6, r["device_only_s"].get<double>() * 1e6,
               r["device_packet_s"].get<double>() * 1e6, r["split_s"].get<double>() * 1e6, r["split_speedup_over_best_single"].get<double>());
  }
  fmt::print("chains of {} sobel jobs: buffers in host memory vs device-local (image in once, result out once)\n", kChainJobs);
  fmt::print("{:>10} {:>12} {:>14} {:>8}\n", "bytes", "host memory", "device-local", "gain");
  for (const auto& r : report["chain"]) {
    if (r["local_chain_s"].is_null()) {
      fmt::print("{:>10} {:>10.1f}us {:>14} ({})\n", r["bytes"].get<uint64_t>(), r["host_chain_s"].get<double>() * 1e6, "-",
                 r["why_not_local"].get<std::string>());
      continue;
    }
    fmt::print("{:>10} {:>10.1f}us {:>12.1f}us {:>7.2f}x\n", r["bytes"].get<uint64_t>(), r["host_chain_s"].get<double>() * 1e6,
               r["local_chain_s"].get<double>() * 1e6, r["local_over_host"].get<double>());
  }
}

}  // namespace

void add_device_bench(CLI::App& bench) {
  auto o = std::make_shared<DeviceBenchOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "device",
      "A real device (opencl, cuda) through tandem vs used directly: no-op round trip, 8 processes, split sweep, chains on "
      "device-local buffers");
  cmd->add_option("--device", o->device, "opencl or cuda")->check(CLI::IsMember({"opencl", "cuda"}))->capture_default_str();
  cmd->add_option("--processes", o->processes, "client processes of the sharing comparison")->check(CLI::Range(1, 64));
  cmd->add_option("--rounds", o->rounds, "alternating windows of each set-up in the sharing comparison (ratio: their median)")
      ->check(CLI::Range(1u, kMaxRounds))
      ->capture_default_str();
  cmd->add_option("--access", o->access, "the device's access setting for tandem's runtimes (default: the configuration's)")
      ->check(CLI::IsMember({"copy", "zero_copy", "job"}));
  cmd->add_flag("--quick", o->quick, "seconds instead of a minute (the tests run it)");
  cmd->add_flag("--json", o->json_output, "print the JSON report");
  cmd->add_option("--out", o->out, "write the JSON report to this file")->check(writable_file());
  cmd->callback([o] { run_device_bench(*o); });
}

}  // namespace tandem::tools
