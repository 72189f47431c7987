#include "client/runtime.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include <unistd.h>

#include "abi/atomics.hpp"
#include "client/daemon_runtime.hpp"
#include "rt/shm.hpp"
#include "client/embedded.hpp"
#include "client/trace.hpp"
#include "funcs/ref/service_chain_ref.hpp"
#include "funcs/throughput.hpp"
#include "client/partitioned_call.hpp"
#include "base/clock.hpp"

namespace tandem::client {

namespace {

std::atomic<uint64_t> next_serial{1};

struct ThreadRecordSlot {
  uint64_t serial = 0;
  tandem_completion_t* records = nullptr;
};
// A few runtimes per thread at once is plenty; older entries are evicted round-robin (their blocks
// stay owned by their runtime, so nothing leaks past the runtime's life).
thread_local std::array<ThreadRecordSlot, 4> thread_slots;
thread_local uint32_t thread_slot_victim = 0;

}  // namespace

bool parse_mode(std::string_view v, Mode& mode, double& alpha) {
  if (v == "auto") {
    mode = Mode::auto_mode;
  } else if (v == "sw") {
    mode = Mode::sw;
  } else if (v == "hw") {
    mode = Mode::hw;
  } else if (v.starts_with("alpha=")) {
    const std::string number(v.substr(6));
    char* end = nullptr;
    errno = 0;
    const double a = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size() || errno != 0 || !(a >= 0 && a <= 1)) return false;
    mode = Mode::alpha;
    alpha = a;
  } else {
    return false;
  }
  return true;
}

std::string mode_name(Mode mode, double alpha) {
  switch (mode) {
    case Mode::auto_mode: return "auto";
    case Mode::sw: return "sw";
    case Mode::hw: return "hw";
    case Mode::alpha: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "alpha=%g", alpha);
      return buf;
    }
  }
  return "?";
}

Mode resolve_mode(Mode requested, double& alpha) {
  if (requested != Mode::auto_mode) return requested;
  const char* env = std::getenv("TANDEM_MODE");
  if (env == nullptr) return Mode::auto_mode;
  Mode m = Mode::auto_mode;
  double a = alpha;
  if (!parse_mode(env, m, a)) return Mode::auto_mode;
  alpha = a;
  return m;
}

// ---------------------------------------------------------------- Queue

Queue::Queue(Runtime& runtime, abi::RingProducer producer, std::shared_ptr<void> memory, uint32_t ring_id)
    : runtime_(runtime), link_(runtime.link_), producer_(producer), memory_(std::move(memory)), ring_id_(ring_id) {}

Queue::~Queue() {
  std::lock_guard lock(link_->mutex);
  if (link_->runtime != nullptr) link_->runtime->release_ring(ring_id_);  // else: the engine is gone
}

bool Queue::engine_writes(const tandem_completion_t* record) const {
  return record == nullptr || runtime_.in_session_memory(record, sizeof *record);
}

Status Queue::reserve(uint64_t& index, uint32_t count) {
  if (count == 0 || count > producer_.capacity() || !runtime_open()) return Status::invalid_argument;
  rt::Liveness* liveness = runtime_.liveness();
  if (liveness != nullptr && liveness->known_lost()) return Status::disconnected;  // nobody would consume it
  index = producer_.reserve(count);
  // Back-pressure: the indices are ours, but a slot is free only once the dispatcher consumed it.
  // Spin briefly, then sleep in short steps, asking whether the daemon lives every kLivenessPeriodNs.
  int64_t next_check = 0;
  for (uint32_t spins = 0; !producer_.has_space(index + count - 1); ++spins) {
    if (spins < 1024) {
      abi::cpu_relax();
      continue;
    }
    if (liveness != nullptr) {
      const int64_t now = tandem::now_ns();
      if (next_check == 0) next_check = now + rt::kLivenessPeriodNs;
      if (now >= next_check) {
        if (Status alive = liveness->check(); alive != Status::ok) return alive;
        next_check = now + rt::kLivenessPeriodNs;
      }
    }
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
  return Status::ok;
}

Status Queue::dispatch(uint16_t function, const uint64_t* args, uint32_t arg_count, uint64_t workload,
                       tandem_completion_t* record, bool barrier, uint32_t flags, uint64_t user_data) {
  if (arg_count > TANDEM_INLINE_ARGS || (arg_count > 0 && args == nullptr)) return Status::invalid_argument;
  uint64_t index;
  Status s = reserve(index);
  if (s != Status::ok) return s;
  tandem_packet_t& p = producer_.packet(index);
  p.flags = flags;
  p.body.dispatch.workload = workload;
  for (uint32_t i = 0; i < TANDEM_INLINE_ARGS; ++i) p.body.dispatch.args[i] = i < arg_count ? args[i] : 0;
  p.user_data = user_data;
  p.completion = reinterpret_cast<uintptr_t>(record);
  producer_.submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, function, barrier));
  return Status::ok;
}

Status Queue::cancel(const tandem_completion_t* target, tandem_completion_t* record) {
  if (target == nullptr) return Status::invalid_argument;
  uint64_t index;
  Status s = reserve(index);
  if (s != Status::ok) return s;
  tandem_packet_t& p = producer_.packet(index);
  p.flags = 0;
  p.body.cancel.target = reinterpret_cast<uintptr_t>(target);
  for (uint64_t& w : p.body.cancel.reserved) w = 0;
  p.user_data = 0;
  p.completion = reinterpret_cast<uintptr_t>(record);
  producer_.submit(index, abi::make_header(TANDEM_PACKET_CANCEL, 0));
  return Status::ok;
}

Status Queue::barrier_and(const tandem_completion_t* const* deps, uint32_t dep_count, tandem_completion_t* record) {
  if (dep_count > TANDEM_BARRIER_DEPS || (dep_count > 0 && deps == nullptr)) return Status::invalid_argument;
  uint64_t index;
  Status s = reserve(index);
  if (s != Status::ok) return s;
  tandem_packet_t& p = producer_.packet(index);
  p.flags = 0;
  for (uint32_t i = 0; i < TANDEM_BARRIER_DEPS; ++i) {
    p.body.barrier.deps[i] = i < dep_count ? reinterpret_cast<uintptr_t>(deps[i]) : 0;
  }
  p.user_data = 0;
  p.completion = reinterpret_cast<uintptr_t>(record);
  producer_.submit(index, abi::make_header(TANDEM_PACKET_BARRIER_AND, 0, true));
  return Status::ok;
}

// ---------------------------------------------------------------- Runtime

Runtime::Runtime(const RuntimeOptions& options)
    : options_(options), alpha_(options.alpha), tuning_(options.partition), serial_(next_serial.fetch_add(1)) {
  mode_ = resolve_mode(options.mode, alpha_);
  AccessChoice access = options.access;
  if (const char* env = std::getenv("TANDEM_ACCESS"); env != nullptr && access == AccessChoice::automatic) {
    (void)parse_access(env, access);  // an unknown name leaves the choice to the runtime
  }
  access_.store(access);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) cores_ = CPU_COUNT(&set);
  if (const char* env = std::getenv("TANDEM_AUTO_ADAPT"); env != nullptr && std::string_view(env) == "0") adaptive_ = false;
  if (!(alpha_ >= 0)) alpha_ = 0;
  if (alpha_ > 1) alpha_ = 1;
  trace_area_ = disabled_trace_area();
  link_->runtime = this;
}

Mode Runtime::mode() const {
  std::lock_guard lock(policy_mutex_);
  return mode_;
}

double Runtime::fixed_alpha() const {
  std::lock_guard lock(policy_mutex_);
  return alpha_;
}

void Runtime::set_mode(Mode m, double alpha) {
  std::lock_guard lock(policy_mutex_);
  mode_ = m;
  alpha_ = alpha >= 0 ? (alpha <= 1 ? alpha : 1) : 0;
  policy_version_.fetch_add(1, std::memory_order_acq_rel);
}

void Runtime::set_partition_tuning(const PartitionTuning& tuning) {
  std::lock_guard lock(policy_mutex_);
  tuning_ = tuning;
  policy_version_.fetch_add(1, std::memory_order_acq_rel);
}

model::CostParams Runtime::cost_params(uint16_t function) const {
  std::lock_guard lock(policy_mutex_);
  return function < TANDEM_FN_MAX ? params_[function] : model::CostParams{};
}

void Runtime::set_cost_params(uint16_t function, const model::CostParams& params) {
  if (function >= TANDEM_FN_MAX) return;
  std::lock_guard lock(policy_mutex_);
  params_[function] = params;
  if (params_[function].granularity == 0) params_[function].granularity = 1;
  learned_.seed(function, params_[function]);  // the application's figures are the new starting point
  restored_on_[function].reset();  // nothing of a learnt file is left to keep its stamp
  restored_samples_[function] = SampleCounts{};
  policy_version_.fetch_add(1, std::memory_order_acq_rel);
}

std::string Runtime::calibration_source() const {
  std::lock_guard lock(policy_mutex_);
  return calibration_source_;
}

const DeviceSummary* Runtime::host_device(uint16_t function) const {
  if (function >= TANDEM_FN_MAX) return nullptr;
  for (const DeviceSummary& d : devices_) {
    if (d.loadable[function]) return &d;
  }
  return nullptr;
}

void Runtime::init_devices(std::vector<DeviceSummary> devices, int64_t max_job_ns) {
  devices_ = std::move(devices);
  // The engine bounds a job by its host device's model (engine::Engine::submit): the same bisection.
  for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
    const uint64_t over = accel_model(f).first_workload_over(max_job_ns);
    max_job_units_by_time_[f] = over == UINT64_MAX ? UINT64_MAX : (over > 0 ? over - 1 : 0);
  }
}

uint64_t Runtime::max_job_buffer_bytes(uint16_t function) const {
  uint64_t bound = 0;
  if (function >= TANDEM_FN_MAX) return bound;
  for (const DeviceSummary& d : devices_) {
    const uint64_t b = d.memory.max_job_buffer_bytes;
    if (d.loadable[function] && b > 0) bound = bound == 0 ? b : std::min(bound, b);
  }
  return bound;
}

model::AccelModel Runtime::accel_model(uint16_t function) const {
  const DeviceSummary* d = host_device(function);
  return d != nullptr ? d->models[function] : model::AccelModel{};
}

std::string_view Runtime::device_kind(uint16_t function) const {
  const DeviceSummary* d = host_device(function);
  return d != nullptr ? std::string_view(d->kind) : std::string_view{};
}

void Runtime::init_cost_params(const Calibration* calibration, const model::HostAccessCosts* daemon_host) {
  std::lock_guard lock(policy_mutex_);
  if (calibration != nullptr && calibration->access) {
    access_costs_ = calibration->access;
  } else if (daemon_host != nullptr) {
    access_costs_ = *daemon_host;
  } else {
    // Measured once per process (about 8 ms): here, with the runtime's start-up, rather than inside the
    // first accelerated call, where it made that call 500x slower than the next.
    (void)rt::host_access_costs();
  }
  funcs::prepare_work_loop();  // its own loop's speed (under 1 ms): not inside the first `work` call
  bool used = false;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    const DeviceSummary* host = host_device(fn->id);
    // A calibration belongs to one device kind; another device's figures would mislead the partitioner.
    if (calibration != nullptr && host != nullptr && calibration->device == host->kind && calibration->functions[fn->id]) {
      params_[fn->id] = *calibration->functions[fn->id];
      used = true;
    } else {
      params_[fn->id] = default_cost_params(*fn, host != nullptr ? host->models[fn->id] : model::AccelModel{},
                                            funcs::software_throughput(fn->id));
    }
  }
  calibration_source_ = used ? (calibration->source.empty() ? "<in memory>" : calibration->source) : "";
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) learned_.seed(fn->id, params_[fn->id]);
  // What earlier runs learnt on the same device kinds, for the functions those devices host.
  std::vector<std::string> kinds;
  for (const DeviceSummary& d : devices_) {
    if (std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end()) continue;
    kinds.push_back(d.kind);
    std::string warning;
    std::optional<Calibration> learnt = load_learned_costs(learned_costs_path(d.kind), d.kind, warning);
    if (!warning.empty()) std::fprintf(stderr, "tandem: %s\n", warning.c_str());
    if (!learnt) continue;
    std::string refit;  // functions whose device now measures far from what they were learnt on
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
      const DeviceSummary* host = host_device(f);
      if (host == nullptr || host->kind != d.kind) {
        learnt->functions[f].reset();
      } else if (learnt->functions[f] && learnt->learnt_on[f] &&
                 !learnt_figures_fit(*learnt->learnt_on[f], host->models[f])) {
        const funcs::FunctionInfo* fn = funcs::find_function(f);
        const std::string name = fn != nullptr ? std::string(fn->name) : std::to_string(f);
        const std::string units = fn != nullptr ? std::string(fn->units) : "units";
        char figures[160];
        std::snprintf(figures, sizeof figures, " (X_a %.3g %s/s, D_a %.3g us; now %.3g and %.3g us)",
                      learnt->learnt_on[f]->xa, units.c_str(), learnt->learnt_on[f]->da_s * 1e6,
                      host->models[f].throughput, host->models[f].latency_s * 1e6);
        refit += (refit.empty() ? "" : ", ") + name + figures;
        learnt->functions[f].reset();
      }
      if (learnt->functions[f]) {
        restored_on_[f] = learnt->learnt_on[f];
        restored_samples_[f] = learnt->samples[f];
      }
    }
    if (!refit.empty()) {
      std::fprintf(stderr,
                   "tandem: ignoring the learnt cost figures of %s in '%s': the device measures far from what "
                   "they were learnt on\n",
                   refit.c_str(), learnt->source.c_str());
    }
    learned_.restore(*learnt);
  }
  policy_version_.fetch_add(1, std::memory_order_acq_rel);
}

void Runtime::note_software_choice(uint16_t function) {
  if (function < TANDEM_FN_MAX) exploration_[function].streak.fetch_add(1, std::memory_order_relaxed);
}

bool Runtime::explore_due(uint16_t function) {
  if (function >= TANDEM_FN_MAX) return false;
  Exploration& e = exploration_[function];
  const uint32_t interval = e.interval.load(std::memory_order_relaxed);
  if (e.streak.load(std::memory_order_relaxed) < interval) return false;
  e.streak.store(0, std::memory_order_relaxed);
  e.interval.store(std::min(2 * interval, kMaxExploreInterval), std::memory_order_relaxed);
  return true;
}

void Runtime::note_hardware_used(uint16_t function) {
  if (function >= TANDEM_FN_MAX) return;
  Exploration& e = exploration_[function];
  if (e.interval.load(std::memory_order_relaxed) != 1) e.interval.store(1, std::memory_order_relaxed);
  if (e.streak.load(std::memory_order_relaxed) != 0) e.streak.store(0, std::memory_order_relaxed);
}

double Runtime::busy_callers() const {
  const Queue& q = *default_queue_;
  return static_cast<double>(q.busy_callers()) + static_cast<double>(q.other_callers());
}

double Runtime::cpu_share() const {
  model::CpuLoad load;
  load.cores = cores_;
  load.runnable_threads = std::max(busy_callers(), 1.0);
  load.engine_cores = abi::load_relaxed(metrics_page().k_engine_cores);
  return model::cpu_share(load);
}

bool Runtime::waiting_may_spin() const {
  const double engine = abi::load_relaxed(metrics_page().k_engine_cores);
  return busy_callers() + engine <= cores_;
}

Status Runtime::save_learned() const {
  if (!learned_.learnt_anything()) return Status::ok;
  std::vector<std::string> kinds;
  Status result = Status::ok;
  for (const DeviceSummary& d : devices_) {
    if (std::find(kinds.begin(), kinds.end(), d.kind) != kinds.end()) continue;
    kinds.push_back(d.kind);
    const std::string path = learned_costs_path(d.kind);
    if (path.empty()) continue;
    Calibration c = learned_.snapshot(d.kind);
    bool any = false;
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
      const DeviceSummary* host = host_device(f);
      if (host == nullptr || host->kind != d.kind) c.functions[f].reset();
      if (c.functions[f]) {
        // Jobs observed this run (only they teach X_a and D_a): learnt against this device. Else the
        // device figures are still the file's, whatever this run's software calls taught X_c.
        const bool observed = c.samples[f].jobs != restored_samples_[f].jobs;
        const model::AccelModel& m = host->models[f];
        const bool plausible = std::isfinite(m.throughput) && m.throughput >= 0 && std::isfinite(m.latency_s) &&
                               m.latency_s >= 0;
        if (!observed) {
          c.learnt_on[f] = restored_on_[f];
        } else if (plausible) {
          c.learnt_on[f] = LearntOnDevice{m.throughput, m.latency_s};
        }
      }
      any = any || c.functions[f].has_value();
    }
    if (!any) continue;
    try {
      save_calibration(c, path);
    } catch (const Error& e) {
      result = e.status();
    }
  }
  return result;
}

Runtime::CallPolicy Runtime::call_policy(uint16_t function, uint64_t& version) const {
  std::lock_guard lock(policy_mutex_);
  version = policy_version_.load(std::memory_order_relaxed);
  CallPolicy p;
  p.params = function < TANDEM_FN_MAX ? params_[function] : model::CostParams{};
  engine::PartitionerConfig& c = p.config;
  switch (mode_) {
    case Mode::auto_mode: c.policy = engine::PartitionPolicy::automatic; break;
    case Mode::sw: c.policy = engine::PartitionPolicy::sw_only; break;
    case Mode::hw: c.policy = engine::PartitionPolicy::hw_only; break;
    case Mode::alpha: c.policy = engine::PartitionPolicy::fixed_alpha; break;
  }
  c.fixed_alpha = alpha_;
  c.jobs_per_round = tuning_.jobs_per_round;
  c.cowork_max_seconds = tuning_.cowork_max_seconds;
  c.rebalance = tuning_.rebalance;
  c.min_split_gain = tuning_.min_split_gain;
  c.replica_predictions = tuning_.replica_predictions;
  c.max_outstanding_jobs = std::max(kDefaultCallJobs, std::min(kMaxCallJobs, 2 * std::max(tuning_.jobs_per_round, 1u)));
  return p;
}

void Runtime::close_default_queue() {
  default_queue_.reset();
  std::lock_guard lock(link_->mutex);
  link_->runtime = nullptr;
  link_->open.store(false, std::memory_order_release);
}

Runtime::~Runtime() { (void)save_learned(); }  // a read-only home loses the figures, not the program

void Runtime::release_thread_records() {
  std::lock_guard lock(records_mutex_);
  for (tandem_completion_t* block : record_blocks_) free(block);
  record_blocks_.clear();
  staging_.clear();  // gives its chunks back while the runtime's memory is still there
}

Runtime::Staging::~Staging() {
  for (auto& [memory, bytes] : chunks_) rt_.free(memory);
}

void* Runtime::Staging::take(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  while (chunk_ < chunks_.size() && chunks_[chunk_].second - used_ < bytes) {
    ++chunk_;
    used_ = 0;
  }
  if (chunk_ == chunks_.size()) {
    const size_t size = std::max<size_t>(bytes, size_t{1} << 20);
    auto* memory = static_cast<char*>(rt_.alloc(size));
    if (memory == nullptr) return nullptr;
    chunks_.emplace_back(memory, size);
    used_ = 0;
  }
  char* p = chunks_[chunk_].first + used_;
  used_ += bytes;
  return p;
}

namespace {
struct ThreadStagingSlot {
  uint64_t serial = 0;
  Runtime::Staging* staging = nullptr;
};
thread_local std::array<ThreadStagingSlot, 4> staging_slots;
thread_local uint32_t staging_slot_victim = 0;
}  // namespace

Runtime::Staging* Runtime::thread_staging() {
  for (ThreadStagingSlot& s : staging_slots) {
    if (s.serial == serial_) return s.staging;
  }
  auto staging = std::make_unique<Staging>(*this);
  Staging* raw = staging.get();
  {
    std::lock_guard lock(records_mutex_);
    staging_.push_back(std::move(staging));
  }
  staging_slots[staging_slot_victim++ % staging_slots.size()] = ThreadStagingSlot{serial_, raw};
  return raw;
}

Status Runtime::copy_local(uint64_t dst, uint64_t src, size_t bytes) {
  if (bytes == 0) return Status::ok;
  const bool dst_local = (dst & TANDEM_DEVICE_ADDRESS_BIT) != 0, src_local = (src & TANDEM_DEVICE_ADDRESS_BIT) != 0;
  if (!dst_local && !src_local) return Status::invalid_argument;  // a host copy needs no engine
  // The host side: in place when the engine reaches it, else the engine's process gathers it.
  const uint64_t host = dst_local ? src : dst;
  uint32_t flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_DEVICE_LOCAL);
  if (!(dst_local && src_local)) {
    flags = TANDEM_FLAG_ACCESS(in_session_memory(reinterpret_cast<const void*>(static_cast<uintptr_t>(host)), bytes)
                                   ? TANDEM_ACCESS_ZERO_COPY
                                   : TANDEM_ACCESS_SCATTER_GATHER);
  }
  tandem_completion_t* records = thread_records();
  if (records == nullptr) return Status::no_memory;
  tandem_completion_t* rec = &records[kThreadRecords - 2];  // the partitioner's jobs and cancel use others
  rt::reset_record(rec);
  const uint64_t args[3] = {dst, src, bytes};
  if (Status s = default_queue().dispatch(TANDEM_FN_COPY, args, 3, bytes, rec, false, flags); s != Status::ok) return s;
  rt::WaitPolicy policy = options_.wait;
  policy.timeout_ns = -1;
  return wait(rec, policy);
}

Status Runtime::register_memory(void* address, size_t bytes, int memfd, uint64_t offset, std::string* why) {
  std::string reason;
  const uintptr_t base = reinterpret_cast<uintptr_t>(address);
  const uint64_t page = rt::page_size();
  Status s = Status::ok;
  if (address == nullptr || bytes == 0) {
    s = Status::invalid_argument;
    reason = "the region is empty";
  } else if (base % page != 0 || bytes % page != 0 || offset % page != 0) {
    s = Status::invalid_argument;
    reason = "address, size and offset must be multiples of the page size";
  } else if (base + bytes < base || offset + bytes < offset) {
    s = Status::invalid_argument;
    reason = "the region wraps around";
  } else {
    s = rt::check_shareable_memfd(memfd, offset + bytes, reason);
  }
  if (s == Status::ok) s = attach_memory(address, bytes, memfd, offset, reason);
  if (why != nullptr) *why = std::move(reason);
  return s;
}

Status Runtime::init_default_queue() {
  auto q = create_queue(1024);
  if (!q) return q.status();
  default_queue_ = std::move(q).value();
  return Status::ok;
}

Result<std::unique_ptr<Runtime>> Runtime::open(const RuntimeOptions& options) {
  if (!options.embedded) {
    // An explicit socket must work; the default one is used only if a daemon is there.
    std::string path = options.socket_path;
    if (path.empty()) {
      if (const char* env = std::getenv("TANDEM_SOCKET"); env != nullptr && *env != '\0') path = env;
    }
    if (!path.empty()) return DaemonRuntime::connect(options, path);
    const std::string fallback = rt::default_socket_path();
    if (access(fallback.c_str(), F_OK) == 0) {
      auto daemon = DaemonRuntime::connect(options, fallback);
      if (daemon.ok() || daemon.status() != Status::disconnected) return daemon;  // stale socket: embedded
    }
  }
  return EmbeddedRuntime::create(options);
}

tandem_completion_t* Runtime::thread_records() {
  for (ThreadRecordSlot& s : thread_slots) {
    if (s.serial == serial_) return s.records;
  }
  auto* block = static_cast<tandem_completion_t*>(alloc(kThreadRecords * sizeof(tandem_completion_t)));
  if (block == nullptr) return nullptr;
  {
    std::lock_guard lock(records_mutex_);
    record_blocks_.push_back(block);
  }
  ThreadRecordSlot& victim = thread_slots[thread_slot_victim++ % thread_slots.size()];
  victim = ThreadRecordSlot{serial_, block};
  return block;
}

Status Runtime::run(const funcs::FunctionInfo& fn, funcs::Call& call, int64_t& value, CallReport* report) {
  // A session whose daemon died fails every call at once, in every mode; a call that never waits on
  // the daemon still notices within kLivenessPeriodNs (the check is one coarse clock read otherwise).
  if (rt::Liveness* l = liveness(); l != nullptr) {
    if (Status alive = l->check_at_most_every(rt::kLivenessPeriodNs); alive != Status::ok) return alive;
  }
  return run_partitioned(*this, fn, call, value, report);
}

Status Runtime::start_service(uint32_t flags) {
  if (flags == 0 || (flags & ~(kServicePoll | kServiceSleep)) != 0) return Status::invalid_argument;
  std::lock_guard lock(service_mutex_);
  if (service_.started()) return Status::invalid_argument;
  std::shared_ptr<void> memory;
  void* base = nullptr;
  if (Status s = attach_service_ring(kServiceSlots, memory, base); s != Status::ok) return s;
  service_.start(base, kServiceSlots, std::move(memory), flags, liveness());
  return Status::ok;
}

Status Runtime::service_chain(uint32_t service, uint64_t steps, uint64_t seed, uint64_t& value) {
  const funcs::FunctionInfo* fn = funcs::find_function(TANDEM_FN_SERVICE_CHAIN);
  const uint64_t args[3] = {service, steps, seed};
  uint64_t workload = 0;
  funcs::BufferList buffers;
  if (fn == nullptr || fn->describe(std::span<const uint64_t>(args, 3), workload, buffers) != Status::ok) return Status::invalid_argument;
  stats_.calls.fetch_add(1, std::memory_order_relaxed);
  auto software = [&] {
    bool answered = true;
    value = funcs::ref::service_chain(steps, seed, [&](const funcs::ref::ServiceArgs& a) {
      uint64_t answer = 0;
      answered = answered && service_.call(service, a.data(), answer);
      return answer;
    });
    stats_.sw_calls.fetch_add(1, std::memory_order_relaxed);
    return answered ? Status::ok : Status::service_failed;
  };
  if (mode() == Mode::sw || !service_.started()) return software();
  auto* record = static_cast<tandem_completion_t*>(alloc(sizeof(tandem_completion_t)));
  if (record == nullptr) return Status::no_memory;
  rt::reset_record(record);
  Status s = default_queue().dispatch(TANDEM_FN_SERVICE_CHAIN, args, 3, workload, record);
  if (s == Status::ok) {
    stats_.hw_jobs.fetch_add(1, std::memory_order_relaxed);
    if (service_.flags() & kServicePoll) {
      // Serve while waiting: this thread is the client's side of the job's requests.
      const rt::WaitPolicy& policy = options_.wait;
      const int64_t until = policy.timeout_ns >= 0 ? now_ns() + policy.timeout_ns : INT64_MAX;
      for (;;) {
        s = from_wire(rt::record_status(record));
        if (s != Status::pending) break;
        if (service_.poll() == 0) abi::cpu_relax();
        if (rt::Liveness* l = liveness(); l != nullptr && l->check_at_most_every(rt::kLivenessPeriodNs) != Status::ok) {
          s = Status::disconnected;
          break;
        }
        if (now_ns() > until) {
          s = Status::timeout;
          break;
        }
      }
    } else {
      s = wait(record, options_.wait);
    }
  }
  const int64_t result = abi::load_relaxed(record->value);
  if (s != Status::disconnected) free(record);  // a lost engine may still hold it: leak one record
  if (s == Status::not_accelerated) {
    stats_.fallbacks.fetch_add(1, std::memory_order_relaxed);
    return software();
  }
  if (s != Status::ok) return s;
  stats_.accelerated_calls.fetch_add(1, std::memory_order_relaxed);
  stats_.hw_units.fetch_add(steps, std::memory_order_relaxed);
  value = static_cast<uint64_t>(result);
  return Status::ok;
}

}  // namespace tandem::client
