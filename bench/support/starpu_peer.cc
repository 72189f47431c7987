// StarPU 1.3 peer: the cost of an empty task, synchronous and asynchronous.
//
// StarPU runs in a forked child: its start-up, worker threads, environment variables and global
// state never touch the caller, it starts and shuts down inside this measurement only, and a stuck
// StarPU is killed at the deadline instead of hanging the benchmark. Results come back over a pipe.

#include <fcntl.h>
#include <poll.h>
#include <starpu.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>

#include "support/child_process.hpp"
#include "support/detail/peer_common.hpp"
#include "support/peers.hpp"
#include "support/unique_fd.hpp"

namespace tandem::bench {

namespace {

// Fixed-size report the child writes first, followed by sync_count then async_count doubles.
struct ChildReport {
  uint32_t status;  // tandem::Status wire value
  uint32_t workers;
  uint64_t sync_count;
  uint64_t async_count;
  char scheduler[32];
  char message[160];
};

void copy_text(char* dst, std::size_t size, const char* src) {
  std::snprintf(dst, size, "%s", src != nullptr ? src : "");
}

void empty_kernel(void* /*buffers*/[], void* /*arg*/) {}

// A temporary directory for STARPU_HOME, removed with everything StarPU wrote into it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
                          "/tandem-starpu-XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ignored;
      std::filesystem::remove_all(path_, ignored);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return true;
}

// Reads exactly `size` bytes unless the deadline (now_ns() clock) passes or the writer goes away.
Status read_all_until(int fd, void* data, std::size_t size, int64_t deadline_ns) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const int64_t left_ms = (deadline_ns - now_ns()) / 1'000'000;
    if (left_ms <= 0) return Status::timeout;
    pollfd pfd{fd, POLLIN, 0};
    const int ready = poll(&pfd, 1, static_cast<int>(std::min<int64_t>(left_ms, 1'000)));
    if (ready < 0 && errno != EINTR) return Status::io_error;
    if (ready <= 0) continue;
    const ssize_t n = read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::io_error;
    if (n == 0) return Status::disconnected;
    p += n;
    size -= static_cast<std::size_t>(n);
  }
  return Status::ok;
}

// Everything StarPU, inside the child. Returns the child's exit code.
int run_starpu_child(int out_fd, const PeerOptions& options, const StarpuOptions& starpu,
                     const std::string& home, const detail::Placement& where) {
  ChildReport report{};
  report.status = to_wire(Status::ok);
  Samples sync_rtt;
  Samples async_task;
  auto fail = [&](Status status, const char* message) {
    report.status = to_wire(status);
    copy_text(report.message, sizeof(report.message), message);
  };

  // The child's own environment: the caller's stays untouched.
  setenv("STARPU_HOME", home.c_str(), 1);
  setenv("STARPU_SILENT", "1", 1);
  // StarPU probes OpenCL platforms even with nopencl = 0; an ICD such as PoCL then writes its kernel
  // cache under $HOME/.cache. Keep that in the temporary home too.
  setenv("POCL_CACHE_DIR", (home + "/pocl-cache").c_str(), 1);
  if (where.cpu_a >= 0) pin_this_thread(where.cpu_a);

  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = 1;  // one worker: the submitter needs the other core (see peers.hpp)
  conf.ncuda = 0;
  conf.nopencl = 0;
  conf.nmic = 0;
  conf.nmpi_ms = 0;
  conf.calibrate = 0;
  conf.bus_calibrate = 0;
  conf.catch_signals = 0;
  conf.precedence_over_environment_variables = 1;  // STARPU_NCPU etc. in the user's shell do not apply
  if (where.cpu_b >= 0) {
    conf.use_explicit_workers_bindid = 1;
    conf.workers_bindid[0] = static_cast<unsigned>(where.cpu_b);
  }
  if (!starpu.scheduler.empty()) conf.sched_policy_name = starpu.scheduler.c_str();

  const int init_rc = starpu_init(&conf);
  if (init_rc != 0) {
    fail(Status::device_error, init_rc == -ENODEV ? "starpu_init: no worker available" : "starpu_init failed");
  } else {
    report.workers = starpu_worker_get_count();
    const starpu_sched_policy* policy = starpu_sched_ctx_get_sched_policy(0);
    copy_text(report.scheduler, sizeof(report.scheduler),
              policy != nullptr ? policy->policy_name : starpu.scheduler.c_str());

    starpu_codelet codelet;
    starpu_codelet_init(&codelet);
    codelet.where = STARPU_CPU;
    codelet.cpu_funcs[0] = empty_kernel;
    codelet.nbuffers = 0;
    codelet.name = "tandem_empty";

    // task->destroy is set by starpu_task_create: StarPU frees each task once it has completed.
    auto submit_one = [&](bool synchronous) {
      starpu_task* task = starpu_task_create();
      task->cl = &codelet;
      task->synchronous = synchronous ? 1 : 0;
      return starpu_task_submit(task) == 0 ? Status::ok : Status::device_error;
    };

    if (starpu.measure_sync) {
      Result<Samples> got = sample_loop_status(detail::sample_plan(options), [&] { return submit_one(true); });
      if (got.ok()) {
        sync_rtt = std::move(got).value();
      } else {
        fail(got.status(), "synchronous task submission failed");
      }
    }
    if (starpu.measure_async && report.status == to_wire(Status::ok)) {
      const std::size_t batch = std::max<std::size_t>(1, starpu.tasks_per_batch);
      // One untimed batch first, like the warm-up of the other peers.
      const SamplePlan plan{1, starpu.async_batches, 1};
      Result<Samples> got = sample_loop_status(plan, [&] {
        for (std::size_t i = 0; i < batch; ++i) {
          if (Status st = submit_one(false); st != Status::ok) return st;
        }
        return starpu_task_wait_for_all() == 0 ? Status::ok : Status::device_error;
      });
      if (got.ok()) {
        async_task = std::move(got).value();
        for (double& ns : async_task) ns /= static_cast<double>(batch);
      } else {
        fail(got.status(), "asynchronous task submission failed");
      }
    }
    starpu_task_wait_for_all();
    starpu_shutdown();
  }

  report.sync_count = sync_rtt.size();
  report.async_count = async_task.size();
  const bool sent = write_all(out_fd, &report, sizeof(report)) &&
                    write_all(out_fd, sync_rtt.data(), sync_rtt.size() * sizeof(double)) &&
                    write_all(out_fd, async_task.data(), async_task.size() * sizeof(double));
  return sent ? 0 : 2;
}

}  // namespace

Result<StarpuResult> starpu_task_costs(const PeerOptions& options, const StarpuOptions& starpu) {
  TempDir home;
  if (home.path().empty()) return {Status::io_error, "StarPU: cannot create a temporary STARPU_HOME"};
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {Status::io_error, "StarPU: pipe2 failed"};
  UniqueFd from_child(fds[0]);
  UniqueFd to_parent(fds[1]);
  const detail::Placement where = detail::resolve_placement(options);

  Result<ChildProcess> child = ChildProcess::spawn([&] {
    from_child.reset();
    return run_starpu_child(to_parent.get(), options, starpu, home.path(), where);
  });
  to_parent.reset();  // so a child that dies early shows up as end-of-file
  if (!child.ok()) return {child.status(), "StarPU: " + child.message()};

  const int64_t deadline = now_ns() + std::chrono::nanoseconds(starpu.total_timeout).count();
  auto give_up = [&](Status status, const std::string& what) -> Result<StarpuResult> {
    child->kill_and_reap();
    return {status, "StarPU: " + what};
  };
  ChildReport report{};
  if (Status st = read_all_until(from_child.get(), &report, sizeof(report), deadline); st != Status::ok) {
    return give_up(st, st == Status::timeout ? "no result before the deadline; child killed"
                                             : "the measuring child died before reporting");
  }
  report.scheduler[sizeof(report.scheduler) - 1] = '\0';
  report.message[sizeof(report.message) - 1] = '\0';
  constexpr uint64_t kMaxSamples = uint64_t{1} << 28;
  if (report.sync_count > kMaxSamples || report.async_count > kMaxSamples) {
    return give_up(Status::protocol_error, "malformed report from the child");
  }
  StarpuResult result;
  result.scheduler = report.scheduler;
  result.workers = report.workers;
  result.sync_rtt.resize(report.sync_count);
  result.async_task.resize(report.async_count);
  if (Status st = read_all_until(from_child.get(), result.sync_rtt.data(),
                                 result.sync_rtt.size() * sizeof(double), deadline);
      st != Status::ok) {
    return give_up(st, "incomplete samples from the child");
  }
  if (Status st = read_all_until(from_child.get(), result.async_task.data(),
                                 result.async_task.size() * sizeof(double), deadline);
      st != Status::ok) {
    return give_up(st, "incomplete samples from the child");
  }
  const int64_t left_ns = std::max<int64_t>(deadline - now_ns(), 1'000'000);
  Result<int> exit_code = child->wait_for(std::chrono::milliseconds(left_ns / 1'000'000));
  const Status child_status = from_wire(report.status);
  if (child_status != Status::ok) return {child_status, std::string("StarPU: ") + report.message};
  if (!exit_code.ok()) return {exit_code.status(), "StarPU: " + exit_code.message()};
  if (exit_code.value() != 0) return {Status::io_error, "StarPU: the measuring child failed"};
  return result;
}

}  // namespace tandem::bench
