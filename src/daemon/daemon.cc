#include "daemon/daemon.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "abi/metrics.hpp"
#include "abi/ring.hpp"
#include "abi/trace.hpp"
#include "daemon/metrics_server.hpp"
#include "daemon/prometheus.hpp"
#include "funcs/function.hpp"
#include "model/access_model.hpp"
#include "base/clock.hpp"
#include "funcs/throughput.hpp"
#include "rt/host_access.hpp"
#include "rt/runtime_setup.hpp"

namespace tandem::daemon {

using abi::control::MessageType;

// A session's memory as the dispatcher sees it: translation through the session's regions, and the
// mappings retired while jobs may still use them (released once the session is quiescent or drained).
class SessionMemory final : public rt::AddressSpace {
 public:
  explicit SessionMemory(engine::Translator& translator) : translator_(translator) {}
  void bind(engine::Asid asid) { asid_ = asid; }
  engine::Asid asid() const { return asid_; }

  void* translate(uint64_t address, uint64_t bytes, bool write) override {
    return reinterpret_cast<void*>(translator_.translate(asid_, address, bytes, write));
  }
  void quiescent() override { retired_.clear(); }
  // Scatter-gather: the client process's own pages (the pid the kernel gave at connect time).
  std::shared_ptr<const rt::ProcessMemory> remote() const override { return process_; }
  void set_process(std::shared_ptr<const rt::ProcessMemory> process) { process_ = std::move(process); }
  // Dispatcher thread only.
  void retire(std::shared_ptr<rt::Mapping> mapping) { retired_.push_back(std::move(mapping)); }

 private:
  engine::Translator& translator_;
  engine::Asid asid_ = UINT32_MAX;
  std::shared_ptr<const rt::ProcessMemory> process_;
  std::vector<std::shared_ptr<rt::Mapping>> retired_;
};

namespace {

bool page_aligned(uint64_t v) { return v % rt::page_size() == 0; }

// A memfd of `bytes`, mapped writable here: what the daemon makes and hands a client (a ring, a trace
// area, a trace dump).
struct SharedMemory {
  rt::UniqueFd fd;
  std::shared_ptr<rt::Mapping> mapping;
};

Result<SharedMemory> shared_memory(const char* name, size_t bytes) {
  auto memfd = rt::create_memfd(name, bytes, true);
  if (!memfd) return Result<SharedMemory>(memfd.status(), memfd.message());
  auto mapping = rt::map_fd(memfd.value().get(), bytes, 0, true);
  if (!mapping) return Result<SharedMemory>(mapping.status(), mapping.message());
  return SharedMemory{std::move(memfd).value(), std::move(mapping).value()};
}

const std::vector<std::byte>& host_payload();

// HelloOk and the device list that follows it (abi/control.hpp): what each device can hold, and how fast.
std::vector<std::byte> hello_payload(abi::control::HelloOk ok, const rt::Dispatcher& dispatcher) {
  namespace ctl = abi::control;
  std::vector<std::byte> out;
  const auto append = [&out](const auto& record) {
    const auto* bytes = reinterpret_cast<const std::byte*>(&record);
    out.insert(out.end(), bytes, bytes + sizeof record);
  };
  ok.device_count = static_cast<uint32_t>(std::min<size_t>(dispatcher.device_count(), ctl::kMaxDevices));
  append(ok);
  for (uint32_t d = 0; d < ok.device_count; ++d) {
    const devices::DeviceInfo& info = dispatcher.device_info(d);
    ctl::DeviceEntry e;
    std::strncpy(e.kind, info.kind.c_str(), sizeof e.kind - 1);
    std::strncpy(e.name, info.name.c_str(), sizeof e.name - 1);
    e.first_slot = dispatcher.first_slot(d);
    e.slots = info.slots;
    e.function_count = static_cast<uint32_t>(info.loadable.count());
    const devices::DeviceMemoryInfo& memory = info.memory;
    e.copy_engines = memory.copy_engines;
    e.local_bytes = memory.local_bytes;
    e.copy_engine_bps = memory.copy_engine_bps;
    e.copy_engine_setup_s = memory.copy_engine_setup_s;
    e.link_bps = memory.transfer.link_bps;
    e.dma_setup_s = memory.transfer.dma_setup_s;
    e.sg_bps = memory.transfer.sg_bps;
    e.sg_setup_s = memory.transfer.sg_setup_s;
    e.sg_page_s = memory.transfer.sg_page_s;
    e.local_bps = memory.transfer.local_bps;
    e.max_job_buffer_bytes = memory.max_job_buffer_bytes;
    append(e);
    for (uint16_t f = 0; f < TANDEM_FN_MAX; ++f) {
      if (!info.loadable[f]) continue;
      const model::AccelModel& m = info.models[f];
      ctl::FunctionEntry fe;
      fe.function = f;
      fe.throughput = m.throughput;
      fe.latency_s = m.latency_s;
      fe.reconfig_s = m.reconfig_s;
      fe.bandwidth_bps = m.bandwidth_bps;
      fe.copy_throughput = info.copy_models[f].throughput;
      fe.copy_latency_s = info.copy_models[f].latency_s;
      append(fe);
    }
  }
  const std::vector<std::byte>& host = host_payload();
  out.insert(out.end(), host.begin(), host.end());
  return out;
}

// The HostEntry and HostRate records that end every hello_ok: this machine's CPU figures, measured
// once per daemon (the first call, from Daemon::start).
const std::vector<std::byte>& host_payload() {
  static const std::vector<std::byte> bytes = [] {
    namespace ctl = abi::control;
    ctl::HostEntry host;
    host.cycles_per_s = funcs::cycles_per_second();
    const model::HostAccessCosts& access = rt::host_access_costs();
    host.memcpy_bps = access.memcpy_bps;
    host.gather_bps = access.gather_bps;
    host.gather_page_s = access.gather_page_s;
    std::vector<ctl::HostRate> rates;
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
      if (fn->id == TANDEM_FN_WORK || (fn->id >= TANDEM_FN_WORK_BASE && fn->id < TANDEM_FN_WORK_BASE + TANDEM_WORK_FUNCTIONS)) {
        continue;  // a `work` unit is a cycle: the TSC's rate says it
      }
      const double rate = funcs::software_throughput(fn->id);
      if (rate > 0) rates.push_back(ctl::HostRate{fn->id, {}, rate});
    }
    host.function_count = static_cast<uint32_t>(rates.size());
    std::vector<std::byte> b(sizeof host + rates.size() * sizeof(ctl::HostRate));
    std::memcpy(b.data(), &host, sizeof host);
    if (!rates.empty()) std::memcpy(b.data() + sizeof host, rates.data(), rates.size() * sizeof(ctl::HostRate));
    return b;
  }();
  return bytes;
}

}  // namespace

Daemon::Daemon(const DaemonOptions& options) : options_(options) {}

Daemon::~Daemon() { shutdown(); }

void Daemon::log(const char* fmt, ...) {
  if (!options_.log) return;
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  tm t;
  localtime_r(&ts.tv_sec, &t);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%H:%M:%S", &t);
  std::fprintf(stderr, "tandemd %s.%03ld ", stamp, ts.tv_nsec / 1'000'000);
  va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
}

Result<std::unique_ptr<Daemon>> Daemon::start(const DaemonOptions& options) {
  std::unique_ptr<Daemon> d(new Daemon(options));
  d->socket_path_ = !options.socket_path.empty()   ? options.socket_path
                    : !options.config.daemon.socket.empty() ? options.config.daemon.socket
                                                            : rt::default_socket_path();
  d->started_ns_ = tandem::now_ns();
  if (const std::string& listen = options.config.metrics.listen; !listen.empty()) {
    std::string error;
    if (Status s = MetricsServer::check_listen(listen, error); s != Status::ok) return Result<std::unique_ptr<Daemon>>(s, error);
  }
  if (Status s = d->open_socket(); s != Status::ok) {
    return Result<std::unique_ptr<Daemon>>(s, "cannot listen on " + d->socket_path_ + ": " +
                                                  (!d->open_socket_error_.empty()       ? d->open_socket_error_
                                                   : s == Status::permission_denied ? "another tandemd owns it"
                                                                                    : std::string(std::strerror(errno))));
  }
  // The metrics page lives in a memfd: the daemon writes it, clients map a read-only descriptor of it.
  const size_t metrics_bytes = rt::round_to_pages(sizeof(tandem_metrics_page_t));
  auto shared = shared_memory("tandem-metrics", metrics_bytes);
  if (!shared) return Result<std::unique_ptr<Daemon>>(shared.status(), shared.message());
  const SharedMemory& memory = shared.value();
  auto ro = rt::reopen_read_only(memory.fd.get());
  if (!ro) return Result<std::unique_ptr<Daemon>>(ro.status(), ro.message());
  d->metrics_memory_ = memory.mapping;
  d->metrics_fd_ = std::move(ro).value();
  std::shared_ptr<tandem_metrics_page_t> page(d->metrics_memory_,
                                              static_cast<tandem_metrics_page_t*>(d->metrics_memory_->address));
  rt::SetupOptions setup;
  setup.max_jobs_per_session = options.config.daemon.jobs_in_flight_per_session;
  setup.metrics_page = page;
  d->translator_ = std::make_unique<engine::Translator>();
  try {
    d->dispatcher_ = rt::build_dispatcher(options.config, setup);  // throws for a device this build lacks
  } catch (const Error& e) {
    return Result<std::unique_ptr<Daemon>>(e.status(), e.what());
  }
  d->dispatcher_->start();
  (void)host_payload();  // the host figures every hello carries: measured now, not in the first client's hello
  // Per-job records (docs/tracing.md): the collector reads the dispatcher's ring and each session's area.
  const config::TraceSettings& trace = options.config.trace;
  rt::TraceSettings ts;
  ts.dispatcher_records = trace.dispatcher_records;
  ts.max_records = trace.max_records;
  ts.drain_period_ns = static_cast<int64_t>(trace.drain_s * 1e9);
  d->tracer_ = std::make_unique<rt::TraceCollector>(ts);
  d->tracer_->attach(*d->dispatcher_);
  if (trace.enabled) d->tracer_->start();
  if (const std::string& listen = options.config.metrics.listen; !listen.empty()) {
    Daemon* self = d.get();
    auto server = MetricsServer::start(listen, [self] { return self->prometheus_text(); },
                                       static_cast<int64_t>(options.config.metrics.min_interval_s * 1e9));
    if (!server) return Result<std::unique_ptr<Daemon>>(server.status(), server.message());
    d->metrics_server_ = std::move(server).value();
    d->log("metrics on http://%s/metrics", d->metrics_server_->address().c_str());
  }
  std::string device_list;
  for (size_t i = 0; i < d->dispatcher_->device_count(); ++i) {
    const devices::DeviceInfo& info = d->dispatcher_->device_info(i);
    device_list += (i == 0 ? "" : ", ") + info.name + " x" + std::to_string(info.slots);
  }
  d->log("listening on %s (%u slots: %s; config %s)", d->socket_path_.c_str(), d->dispatcher_->engine_config().slots,
         device_list.c_str(), options.config.source.c_str());
  return d;
}

Status Daemon::open_socket() {
  // One daemon per socket: an exclusive lock on a file beside it decides, so a stale socket (a daemon
  // that was killed) is replaced while a live one is never stolen.
  // Only a stale socket and an empty lock file are tandemd's to replace: another file at either path
  // is someone's data, which a mistyped --socket must not delete.
  struct stat st {};
  if (lstat(socket_path_.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    open_socket_error_ = "it exists and is not a socket (tandemd replaces only a socket a killed tandemd left)";
    return Status::invalid_argument;
  }
  lock_path_ = socket_path_ + ".lock";
  if (lstat(lock_path_.c_str(), &st) == 0 && (!S_ISREG(st.st_mode) || st.st_size != 0)) {
    open_socket_error_ = lock_path_ + " exists and is not tandemd's lock file (an empty regular file)";
    lock_path_.clear();  // not ours to remove
    return Status::invalid_argument;
  }
  lock_fd_.reset(open(lock_path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!lock_fd_.valid()) {
    lock_path_.clear();
    return Status::io_error;
  }
  if (flock(lock_fd_.get(), LOCK_EX | LOCK_NB) != 0) {
    lock_fd_.reset();
    lock_path_.clear();  // not ours to remove
    return Status::permission_denied;
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof addr.sun_path) {
    errno = ENAMETOOLONG;
    return Status::invalid_argument;
  }
  std::memcpy(addr.sun_path, socket_path_.c_str(), socket_path_.size() + 1);
  listen_fd_.reset(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_.valid()) return Status::io_error;
  unlink(socket_path_.c_str());  // stale: we hold the lock
  const mode_t old_mask = umask(0177);  // the socket is created 0600
  const int rc = bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  umask(old_mask);
  if (rc != 0 || chmod(socket_path_.c_str(), 0600) != 0 || listen(listen_fd_.get(), 128) != 0) return Status::io_error;
  epoll_fd_.reset(epoll_create1(EPOLL_CLOEXEC));
  stop_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!epoll_fd_.valid() || !stop_fd_.valid()) return Status::io_error;
  for (int fd : {listen_fd_.get(), stop_fd_.get()}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = fd;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &ev);
  }
  return Status::ok;
}

sigset_t Daemon::block_stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // threads started later inherit the mask
  signal(SIGPIPE, SIG_IGN);
  return set;
}

void Daemon::request_stop() {
  const uint64_t one = 1;
  if (write(stop_fd_.get(), &one, sizeof one) < 0) {
    // The eventfd cannot overflow in practice; nothing better to do from a signal-safe path.
  }
}

int Daemon::run(bool handle_signals) {
  if (handle_signals) {
    sigset_t set = block_stop_signals();
    signal_fd_.reset(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = signal_fd_.get();
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, signal_fd_.get(), &ev);
  }
  while (serve(-1)) {
  }
  shutdown();
  return 0;
}

bool Daemon::serve(int timeout_ms) {
  epoll_event events[64];
  const int n = epoll_wait(epoll_fd_.get(), events, 64, next_timeout_ms(timeout_ms, tandem::now_ns()));
  if (n < 0) {
    if (errno == EINTR) return true;
    log("epoll_wait failed: %s", std::strerror(errno));
    return false;
  }
  bool running = true;
  for (int i = 0; i < n; ++i) {
    const int fd = events[i].data.fd;
    if (fd == listen_fd_.get()) {
      accept_clients();
    } else if (fd == stop_fd_.get() || (signal_fd_.valid() && fd == signal_fd_.get())) {
      if (fd == signal_fd_.get()) {
        signalfd_siginfo si;
        if (read(signal_fd_.get(), &si, sizeof si) == sizeof si) log("signal %u: stopping", si.ssi_signo);
      }
      running = false;
    } else if (auto it = connections_.find(fd); it != connections_.end()) {
      if (events[i].events & EPOLLOUT) on_writable(*it->second);
      if (connections_.count(fd) && (events[i].events & EPOLLIN)) on_readable(*it->second);
      // The read above may have closed the connection already.
      if (connections_.count(fd) && (events[i].events & (EPOLLHUP | EPOLLERR | EPOLLRDHUP))) close_connection(fd);
    }
  }
  // Frames a connection sent beyond its share of the last round: one more share each.
  std::vector<int> unfinished;
  unfinished.swap(unfinished_);
  for (int fd : unfinished) {
    auto it = connections_.find(fd);
    if (it != connections_.end() && !handle_frames(*it->second)) close_connection(fd);
  }
  const int64_t now = tandem::now_ns();
  expire_hello_deadlines(now);
  if (accept_paused_until_ != 0 && now >= accept_paused_until_) {
    accept_paused_until_ = 0;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = listen_fd_.get();
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &ev);
  }
  return running;
}

int Daemon::next_timeout_ms(int timeout_ms, int64_t now) const {
  if (!unfinished_.empty()) return 0;
  int64_t until = INT64_MAX;
  for (const auto& [fd, c] : connections_) {
    if (!c->hello) until = std::min(until, c->hello_deadline_ns);
  }
  if (accept_paused_until_ != 0) until = std::min(until, accept_paused_until_);
  if (until == INT64_MAX) return timeout_ms;
  const int64_t ms = std::clamp<int64_t>((until - now + 999'999) / 1'000'000, 0, INT32_MAX);
  return timeout_ms < 0 ? static_cast<int>(ms) : static_cast<int>(std::min<int64_t>(ms, timeout_ms));
}

void Daemon::expire_hello_deadlines(int64_t now) {
  std::vector<int> expired;
  for (const auto& [fd, c] : connections_) {
    if (!c->hello && now >= c->hello_deadline_ns) expired.push_back(fd);
  }
  for (int fd : expired) {
    Connection& c = *connections_[fd];
    reply_error(c, 0, Status::timeout,
                "no hello within " + std::to_string(options_.config.daemon.hello_timeout_ms) +
                    " ms (limits.hello_timeout_ms)");
    log_limited("closed connections without hello", "pid " + std::to_string(c.pid));
    close_connection(fd);
  }
}

void Daemon::log_limited(const char* what, const std::string& detail) {
  // A client that opens connections in a loop must not turn the log into the bottleneck.
  const int64_t now = tandem::now_ns();
  if (now < next_limited_log_ns_) {
    ++limited_logs_suppressed_;
    return;
  }
  next_limited_log_ns_ = now + 1'000'000'000;
  log("%s: %s (%lu more like it in the last second)", what, detail.c_str(),
      static_cast<unsigned long>(limited_logs_suppressed_));
  limited_logs_suppressed_ = 0;
}

void Daemon::refuse(rt::UniqueFd fd, Status s, const std::string& why, pid_t pid, uid_t uid) {
  Connection c;  // never registered: told why (if its socket takes it now), then closed
  c.fd = std::move(fd);
  reply_error(c, 0, s, why);
  log_limited("refused", "pid " + std::to_string(pid) + " uid " + std::to_string(uid) + ": " + why);
}

bool Daemon::evict_idle(uid_t uid, bool any_uid) {
  int oldest = -1;
  int64_t oldest_ns = INT64_MAX;
  for (const auto& [fd, c] : connections_) {
    if (!c->hello && (any_uid || c->uid == uid) && c->connected_ns < oldest_ns) {
      oldest = fd;
      oldest_ns = c->connected_ns;
    }
  }
  if (oldest < 0) return false;
  Connection& c = *connections_[oldest];
  reply_error(c, 0, Status::limit_exceeded, "closed to make room for a new connection: no hello yet");
  log_limited("closed connections without hello to make room", "pid " + std::to_string(c.pid));
  close_connection(oldest);
  return true;
}

void Daemon::watch(Connection& c) {
  const bool want = c.writer.pending();
  if (want == c.writing) return;
  c.writing = want;
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP | (want ? EPOLLOUT : 0u);
  ev.data.fd = c.fd.get();
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, c.fd.get(), &ev);
}

void Daemon::reply(Connection& c, MessageType type, uint32_t request_id, const void* payload, size_t bytes, int fd) {
  if (c.broken) return;
  Status s = c.writer.queue(type, request_id, payload, bytes, fd);
  if (s == Status::ok) s = c.writer.flush(c.fd.get());
  if (s != Status::ok) {
    c.broken = true;
    return;
  }
  if (c.writer.pending_bytes() > size_t{options_.config.daemon.output_buffer_kib} << 10) {
    log_limited("dropped a client that does not read its replies",
                "pid " + std::to_string(c.pid) + ", " + std::to_string(c.writer.pending_bytes()) + " bytes unread");
    c.broken = true;
    return;
  }
  if (connections_.count(c.fd.get())) watch(c);
}

void Daemon::on_writable(Connection& c) {
  if (c.writer.flush(c.fd.get()) != Status::ok) {
    close_connection(c.fd.get());
    return;
  }
  watch(c);
}

void Daemon::accept_clients() {
  const config::DaemonSettings& limits = options_.config.daemon;
  for (;;) {
    rt::UniqueFd fd(accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: the listening socket would stay readable and spin this loop. Pause.
        log_limited("accept paused", std::strerror(errno));
        epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, listen_fd_.get(), nullptr);
        accept_paused_until_ = tandem::now_ns() + 100'000'000;
      } else if (errno != EAGAIN && errno != EINTR) {
        log("accept failed: %s", std::strerror(errno));
      }
      return;
    }
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(fd.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) continue;
    const auto& allowed = limits.allowed_uids;
    const bool uid_ok = cred.uid == 0 || cred.uid == getuid() ||
                        std::find(allowed.begin(), allowed.end(), cred.uid) != allowed.end();
    if (!uid_ok) {
      refuse(std::move(fd), Status::permission_denied, "uid " + std::to_string(cred.uid) + " is not allowed",
             cred.pid, cred.uid);
      continue;
    }
    // Limits: per user, then in all. A connection that has not said hello yet gives way to a new one.
    if (connections_per_uid_[cred.uid] >= limits.connections_per_uid && !evict_idle(cred.uid, false)) {
      refuse(std::move(fd), Status::limit_exceeded,
             "uid " + std::to_string(cred.uid) + " already holds " + std::to_string(limits.connections_per_uid) +
                 " connections (limits.connections_per_uid)",
             cred.pid, cred.uid);
      continue;
    }
    if (connections_.size() >= limits.max_sessions && !evict_idle(cred.uid, true)) {
      refuse(std::move(fd), Status::limit_exceeded,
             "too many sessions: " + std::to_string(limits.max_sessions) + " connections (limits.sessions)", cred.pid,
             cred.uid);
      continue;
    }
    auto c = std::make_unique<Connection>();
    c->uid = cred.uid;
    c->pid = cred.pid;
    c->id = next_connection_++;
    c->connected_ns = tandem::now_ns();
    c->hello_deadline_ns = c->connected_ns + int64_t{limits.hello_timeout_ms} * 1'000'000;
    const int raw = fd.get();
    c->fd = std::move(fd);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = raw;
    epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, raw, &ev);
    ++connections_per_uid_[c->uid];
    connections_[raw] = std::move(c);
  }
}

void Daemon::reply_error(Connection& c, uint32_t request_id, Status s, const std::string& message) {
  std::vector<std::byte> payload(sizeof(abi::control::ErrorReply) + std::min<size_t>(message.size(), 1024));
  abi::control::ErrorReply e;
  e.status = to_wire(s);
  std::memcpy(payload.data(), &e, sizeof e);
  std::memcpy(payload.data() + sizeof e, message.data(), payload.size() - sizeof e);
  reply(c, MessageType::error, request_id, payload.data(), payload.size());
}

void Daemon::on_readable(Connection& c) {
  const int fd = c.fd.get();
  Status s = c.reader.read_some(fd);
  if (s == Status::protocol_error) {
    ++protocol_errors_;
    reply_error(c, 0, s, "malformed stream (too many descriptors, or too much unread input)");
  }
  const bool keep = s == Status::ok && handle_frames(c);
  if (!keep) close_connection(fd);
}

bool Daemon::handle_frames(Connection& c) {
  // A round's share per connection, so that one client's backlog of requests cannot hold up others;
  // the rest waits for the next round (serve() comes back at once).
  constexpr int kFramesPerRound = 16;
  for (int handled = 0; !c.broken; ++handled) {
    if (handled == kFramesPerRound) {
      unfinished_.push_back(c.fd.get());
      return true;
    }
    rt::Frame f;
    auto got = c.reader.next(f);
    if (!got) {  // framing errors cannot be recovered from: say why, then hang up
      ++protocol_errors_;
      reply_error(c, 0, got.status(), got.message());
      log_limited("closed a connection", "session " + std::to_string(c.session) + " (pid " + std::to_string(c.pid) +
                                             "): " + got.message());
      return false;
    }
    if (!got.value()) return true;
    if (!handle(c, f)) return false;
  }
  return false;  // broken: the peer is gone or does not read its replies
}

bool Daemon::handle(Connection& c, rt::Frame& f) {
  const uint32_t id = f.header.request_id;
  if (!c.hello && f.type() != MessageType::hello && f.type() != MessageType::status && f.type() != MessageType::bye &&
      f.type() != MessageType::trace_control && f.type() != MessageType::trace_dump) {
    ++protocol_errors_;
    reply_error(c, id, Status::protocol_error, "the first message must be hello");
    return true;
  }
  switch (f.type()) {
    case MessageType::hello: return on_hello(c, f);
    case MessageType::create_queue: return on_create_queue(c, f);
    case MessageType::destroy_queue: return on_destroy_queue(c, f);
    case MessageType::register_memory: return on_register(c, f);
    case MessageType::unregister_memory: return on_unregister(c, f);
    case MessageType::alloc_local: {
      const auto req = f.as<abi::control::AllocLocal>();
      auto address = dispatcher_->alloc_local(c.session, req.bytes);
      if (!address) {
        reply_error(c, id, address.status(), address.message());
        return true;
      }
      abi::control::LocalOk ok;
      ok.device_address = address.value();
      rt::send_struct(c.fd.get(), MessageType::local_ok, id, ok);
      return true;
    }
    case MessageType::free_local: {
      const auto req = f.as<abi::control::LocalOk>();
      if (Status s = dispatcher_->free_local(c.session, req.device_address); s != Status::ok) {
        reply_error(c, id, s, "no such device buffer of this session");
        return true;
      }
      rt::send_frame(c.fd.get(), MessageType::ok, id, nullptr, 0);
      return true;
    }
    case MessageType::set_address_mode: {
      const auto req = f.as<abi::control::SetAddressMode>();
      if (req.reserved != 0 || req.mode >= TANDEM_ADDRESS_MODE_COUNT_ ||
          dispatcher_->set_address_mode(c.session, static_cast<uint8_t>(req.mode)) != Status::ok) {
        reply_error(c, id, Status::invalid_argument, "address mode must be TANDEM_ADDRESS_AISLE or TANDEM_ADDRESS_PHASEV");
        return true;
      }
      rt::send_frame(c.fd.get(), MessageType::ok, id, nullptr, 0);
      return true;
    }
    case MessageType::attach_service: return on_attach_service(c, f);
    case MessageType::status: {
      const std::string& text = recent_status();
      reply(c, MessageType::status_reply, id, text.data(), std::min<size_t>(text.size(), abi::control::kMaxPayload));
      return true;
    }
    case MessageType::trace_attach: return on_trace_attach(c, f);
    case MessageType::trace_control: return on_trace_control(c, f);
    case MessageType::trace_dump: return on_trace_dump(c, f);
    case MessageType::bye: return false;
    default:
      ++protocol_errors_;
      reply_error(c, id, Status::protocol_error, "not a request");
      return true;
  }
}

const std::string& Daemon::recent_status() {
  // A report costs two trips to the dispatcher thread; a flood of status requests must not turn the
  // control thread into a waiter on it. Requests within kStatusReuseNs of a report share it, unless a
  // session began or ended since: a tool that checks tandemd is up, runs clients for a few ms and asks
  // again (`tandem demo`) got the first report back, with none of its clients in it.
  constexpr int64_t kStatusReuseNs = 10'000'000;
  const int64_t now = tandem::now_ns();
  if (status_text_.empty() || now - status_made_ns_ >= kStatusReuseNs || sessions_changed_) {
    sessions_changed_ = false;
    status_text_ = status_json();
    status_made_ns_ = tandem::now_ns();
  }
  return status_text_;
}

bool Daemon::on_hello(Connection& c, const rt::Frame& f) {
  const auto hello = f.as<abi::control::Hello>();
  if (c.hello) {
    reply_error(c, f.header.request_id, Status::protocol_error, "hello sent twice");
    return true;
  }
  if (hello.abi_version != TANDEM_ABI_VERSION) {
    ++protocol_errors_;
    reply_error(c, f.header.request_id, Status::protocol_error,
                "ABI version " + std::to_string(hello.abi_version) + " is not " + std::to_string(TANDEM_ABI_VERSION));
    return false;
  }
  c.memory = std::make_shared<SessionMemory>(*translator_);
  c.memory->set_process(std::make_shared<rt::ProcessMemory>(c.pid));  // before any ring can name its pages
  engine::Translator* translator = translator_.get();
  auto memory = c.memory;
  c.session = dispatcher_->open_session(c.memory, [translator, memory] { translator->drop(memory->asid()); });
  c.memory->bind(c.session);  // no ring is attached yet: nothing translates before this
  c.hello = true;
  ++sessions_served_;
  sessions_changed_ = true;
  abi::control::HelloOk ok;
  ok.asid = c.session;
  ok.slot_count = dispatcher_->engine_config().slots;
  ok.metrics_bytes = metrics_memory_->bytes;
  ok.max_queues = options_.config.daemon.queues_per_session;
  ok.max_jobs_in_flight = options_.config.daemon.jobs_in_flight_per_session;
  ok.max_registered_bytes = options_.config.daemon.registered_bytes_per_session;
  ok.max_job_ns = dispatcher_->engine_config().max_job_ns;
  const std::vector<std::byte> payload = hello_payload(ok, *dispatcher_);
  reply(c, MessageType::hello_ok, f.header.request_id, payload.data(), payload.size(), metrics_fd_.get());
  log("session %u: pid %d uid %u connected", c.session, c.pid, c.uid);
  return true;
}

bool Daemon::on_create_queue(Connection& c, const rt::Frame& f) {
  const auto req = f.as<abi::control::CreateQueue>();
  const uint32_t id = f.header.request_id;
  if (!abi::is_power_of_two(req.capacity) || req.capacity < TANDEM_RING_MIN_CAPACITY ||
      req.capacity > options_.config.daemon.max_queue_capacity) {
    reply_error(c, id, Status::invalid_argument,
                "queue capacity must be a power of two in [2, " +
                    std::to_string(options_.config.daemon.max_queue_capacity) + "]");
    return true;
  }
  if (c.queues.size() >= options_.config.daemon.queues_per_session) {
    reply_error(c, id, Status::limit_exceeded,
                "session limit: " + std::to_string(options_.config.daemon.queues_per_session) + " queues");
    return true;
  }
  const size_t bytes = rt::round_to_pages(TANDEM_RING_BYTES(req.capacity));
  auto shared = shared_memory("tandem-ring", bytes);
  if (!shared) {
    reply_error(c, id, shared.status(), shared.message());
    return true;
  }
  const SharedMemory& memory = shared.value();
  const uint32_t queue_id = c.next_queue++;
  abi::format_ring(memory.mapping->address, bytes, req.capacity, queue_id);
  auto ring = dispatcher_->attach_ring(c.session, memory.mapping->address, req.capacity, memory.mapping);
  if (!ring) {
    reply_error(c, id, ring.status(), ring.message());
    return true;
  }
  c.queues[queue_id] = Queue{ring.value(), memory.mapping, req.capacity};
  abi::control::QueueOk ok;
  ok.queue_id = queue_id;
  ok.capacity = req.capacity;
  ok.ring_bytes = bytes;
  reply_struct(c, MessageType::queue_ok, id, ok, memory.fd.get());
  return true;
}

bool Daemon::on_destroy_queue(Connection& c, const rt::Frame& f) {
  const auto req = f.as<abi::control::DestroyQueue>();
  auto it = c.queues.find(req.queue_id);
  if (it == c.queues.end()) {
    reply_error(c, f.header.request_id, Status::invalid_argument, "no such queue");
    return true;
  }
  dispatcher_->detach_ring(it->second.engine_ring);  // returns once the dispatcher let go of it
  c.queues.erase(it);
  reply(c, MessageType::ok, f.header.request_id, nullptr, 0);
  return true;
}

// The session's service-request ring: a memfd the client formatted. Sealed before it is mapped (the
// client cannot shrink it under us); the engine's side keeps its own geometry and validates every word
// it reads back (abi/service.hpp).
bool Daemon::on_attach_service(Connection& c, rt::Frame& f) {
  const auto req = f.as<abi::control::AttachService>();
  const uint32_t id = f.header.request_id;
  if (!f.fd.valid()) {
    reply_error(c, id, Status::invalid_argument, "attach_service needs a memfd (none came with the request)");
    return true;
  }
  if (req.slots == 0 || req.slots > TANDEM_SERVICE_MAX_SLOTS || req.reserved != 0) {
    reply_error(c, id, Status::invalid_argument, "service ring: slots must be 1.." + std::to_string(TANDEM_SERVICE_MAX_SLOTS));
    return true;
  }
  const size_t bytes = rt::round_to_pages(TANDEM_SERVICE_BYTES(req.slots));
  if (Status s = rt::seal_against_shrinking(f.fd.get(), bytes); s != Status::ok) {
    reply_error(c, id, s, s == Status::permission_denied ? "service ring must be a sealable memfd" : "memfd is smaller than the ring");
    return true;
  }
  auto mapping = rt::map_fd(f.fd.get(), bytes, 0, true);
  if (!mapping) {
    reply_error(c, id, mapping.status(), mapping.message());
    return true;
  }
  void* base = mapping.value()->address;
  const Status s = dispatcher_->attach_service(c.session, base, bytes, req.slots, mapping.value());
  if (s != Status::ok) {
    reply_error(c, id, s, s == Status::invalid_argument ? "the session has a service ring already" : "not a formatted service ring");
    return true;
  }
  reply(c, MessageType::ok, id, nullptr, 0);
  return true;
}

bool Daemon::on_register(Connection& c, rt::Frame& f) {
  const auto req = f.as<abi::control::RegisterMemory>();
  const uint32_t id = f.header.request_id;
  if (!f.fd.valid()) {
    reply_error(c, id, Status::invalid_argument, "register_memory needs a memfd (none came with the request)");
    return true;
  }
  if (req.bytes == 0 || req.client_base == 0 || !page_aligned(req.client_base) || !page_aligned(req.bytes) ||
      !page_aligned(req.fd_offset) || req.client_base + req.bytes < req.client_base ||
      req.fd_offset + req.bytes < req.fd_offset || (req.flags & ~abi::control::kRegionWritable) != 0) {
    reply_error(c, id, Status::invalid_argument, "region must be non-empty, page aligned and not wrap");
    return true;
  }
  if (c.registered_bytes + req.bytes > options_.config.daemon.registered_bytes_per_session ||
      c.registered_bytes + req.bytes < c.registered_bytes) {
    reply_error(c, id, Status::limit_exceeded,
                "session limit: " + std::to_string(options_.config.daemon.registered_bytes_per_session >> 20) +
                    " MiB of registered memory");
    return true;
  }
  // Sealed against shrinking first: otherwise the client could truncate the file under our mapping.
  if (Status s = rt::seal_against_shrinking(f.fd.get(), req.fd_offset + req.bytes); s != Status::ok) {
    reply_error(c, id, s, s == Status::permission_denied ? "memory must be a sealable memfd"
                                                         : "memfd is smaller than the region");
    return true;
  }
  const bool writable = (req.flags & abi::control::kRegionWritable) != 0;
  auto mapping = rt::map_fd(f.fd.get(), req.bytes, req.fd_offset, writable);
  if (!mapping) {
    reply_error(c, id, mapping.status(), mapping.message());
    return true;
  }
  const uintptr_t local = reinterpret_cast<uintptr_t>(mapping.value()->address);
  engine::Translator* translator = translator_.get();
  const engine::Asid asid = c.session;
  auto region = dispatcher_->with_engine([&](engine::Engine&) {
    return translator->add_region(asid, req.client_base, req.bytes, local, writable);
  });
  if (!region) {
    reply_error(c, id, region.status(), region.message());
    return true;
  }
  c.regions[region.value()] = RegionEntry{mapping.value(), req.bytes};
  c.registered_bytes += req.bytes;
  abi::control::RegionOk ok;
  ok.region_id = region.value();
  reply_struct(c, MessageType::region_ok, id, ok);
  return true;
}

bool Daemon::on_unregister(Connection& c, const rt::Frame& f) {
  const auto req = f.as<abi::control::UnregisterMemory>();
  auto it = c.regions.find(req.region_id);
  if (it == c.regions.end()) {
    reply_error(c, f.header.request_id, Status::invalid_argument, "no such region");
    return true;
  }
  engine::Translator* translator = translator_.get();
  auto memory = c.memory;
  auto mapping = it->second.memory;
  const engine::Asid asid = c.session;
  // The translation goes at once; the mapping only once no job of the session can still use it.
  rt::Dispatcher* dispatcher = dispatcher_.get();
  dispatcher_->with_engine([&](engine::Engine&) {
    if (const auto* regions = translator->regions(asid)) {
      for (const engine::Region& r : *regions) {
        if (r.id == req.region_id) dispatcher->shoot_down(asid, r.client_base, r.bytes);  // the device TLBs too
      }
    }
    translator->remove_region(asid, req.region_id);
    memory->retire(std::move(mapping));
    return 0;
  });
  c.registered_bytes -= it->second.bytes;
  c.regions.erase(it);
  reply(c, MessageType::ok, f.header.request_id, nullptr, 0);
  return true;
}

// ---------------------------------------------------------------- tracing (docs/tracing.md)

// The session's trace area: a ring per client thread, in a memfd both map. Its records become the
// session's whatever they say (the collector sets the session from the connection).
bool Daemon::on_trace_attach(Connection& c, const rt::Frame& f) {
  const uint32_t id = f.header.request_id;
  const config::TraceSettings& t = options_.config.trace;
  if (t.client_threads == 0) {
    reply_error(c, id, Status::invalid_argument, "client records are off ([trace] client_threads = 0)");
    return true;
  }
  if (tracer_->has_session(c.session)) {
    reply_error(c, id, Status::invalid_argument, "the session's trace area is attached already");
    return true;
  }
  const size_t bytes = rt::round_to_pages(abi::trace::area_bytes(t.client_threads, t.client_records));
  auto shared = shared_memory("tandem-trace", bytes);
  if (!shared) {
    reply_error(c, id, shared.status(), shared.message());
    return true;
  }
  const SharedMemory& memory = shared.value();
  const abi::trace::AreaView area =
      abi::trace::format_area(memory.mapping->address, t.client_threads, t.client_records, tracer_->clock());
  tracer_->add_session(c.session, static_cast<uint32_t>(c.pid), area, memory.mapping);
  abi::control::TraceAreaOk ok;
  ok.bytes = bytes;
  ok.rings = t.client_threads;
  ok.capacity = t.client_records;
  reply_struct(c, MessageType::trace_area_ok, id, ok, memory.fd.get());
  return true;
}

namespace {

abi::control::TraceState trace_state(const rt::TraceCounters& t) {
  abi::control::TraceState s;
  s.enabled = t.enabled ? 1 : 0;
  s.sources = t.sources;
  s.records = t.records;
  s.collected = t.collected;
  s.dropped_full = t.dropped_full;
  s.dropped_store = t.dropped_store;
  s.dropped_unclaimed = t.dropped_unclaimed;
  s.dropped_corrupt = t.dropped_corrupt;
  s.started_ns = t.started_ns;
  return s;
}

}  // namespace

bool Daemon::on_trace_control(Connection& c, const rt::Frame& f) {
  const auto req = f.as<abi::control::TraceControl>();
  using Op = abi::control::TraceOp;
  switch (static_cast<Op>(req.op)) {
    case Op::query: break;
    case Op::start:
      if (!tracer_->enabled()) log("tracing started");
      tracer_->start();
      break;
    case Op::stop:
      if (tracer_->enabled()) log("tracing stopped");
      tracer_->stop();
      break;
    default:
      reply_error(c, f.header.request_id, Status::invalid_argument, "trace_control: op must be 0 (query), 1 (start) or 2 (stop)");
      return true;
  }
  reply_struct(c, MessageType::trace_state, f.header.request_id, trace_state(tracer_->counters()));
  return true;
}

// The records so far, in a memfd: a dump of at most [trace] max_records records is never too big for
// a control message's bounded payload, because it does not travel in one.
bool Daemon::on_trace_dump(Connection& c, const rt::Frame& f) {
  const uint32_t id = f.header.request_id;
  const auto req = f.as<abi::control::TraceDumpRequest>();
  rt::TraceDump dump = tracer_->dump(req.clear != 0);
  rt::TraceFile file;
  abi::trace::DumpHeader& h = file.header;
  h.daemon_pid = static_cast<uint32_t>(getpid());
  h.enabled = dump.counters.enabled ? 1 : 0;
  h.dropped_full = dump.counters.dropped_full;
  h.dropped_store = dump.counters.dropped_store;
  h.dropped_unclaimed = dump.counters.dropped_unclaimed;
  h.dropped_corrupt = dump.counters.dropped_corrupt;
  h.started_ns = dump.counters.started_ns;
  h.taken_ns = dump.taken_ns;
  file.sessions = std::move(dump.sessions);
  for (size_t d = 0; d < dispatcher_->device_count(); ++d) {
    const devices::DeviceInfo& info = dispatcher_->device_info(d);
    for (uint32_t i = 0; i < info.slots; ++i) {
      abi::trace::DumpSlot slot;
      slot.slot = dispatcher_->first_slot(d) + i;
      slot.device = static_cast<uint32_t>(d);
      std::strncpy(slot.device_name, info.name.c_str(), sizeof slot.device_name - 1);
      file.slots.push_back(slot);
    }
  }
  file.records = std::move(dump.records);
  const size_t bytes = rt::dump_size(file);
  const size_t mapped = rt::round_to_pages(bytes);
  auto shared = shared_memory("tandem-trace-dump", mapped);
  if (!shared) {
    reply_error(c, id, shared.status(), shared.message());
    return true;
  }
  const SharedMemory& memory = shared.value();
  rt::write_dump(file, {reinterpret_cast<std::byte*>(memory.mapping->address), mapped});
  abi::control::TraceState state = trace_state(dump.counters);
  state.dump_bytes = bytes;
  reply_struct(c, MessageType::trace_dump_ok, id, state, memory.fd.get());
  return true;
}

void Daemon::close_connection(int fd) {
  auto it = connections_.find(fd);
  if (it == connections_.end()) return;
  Connection& c = *it->second;
  epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, fd, nullptr);
  if (c.hello) sessions_changed_ = true;
  if (c.hello && dispatcher_) {
    // Running jobs may still write into the session's memory: hand every mapping to the dispatcher's
    // copy of the session, which lives until the session has drained. The control thread does not
    // wait for it (a busy dispatcher must not hold up other clients).
    auto memory = c.memory;
    std::vector<std::shared_ptr<rt::Mapping>> mappings;
    for (auto& [rid, r] : c.regions) mappings.push_back(r.memory);
    dispatcher_->close_session_later(c.session, [memory, mappings = std::move(mappings)]() mutable {
      for (auto& m : mappings) memory->retire(std::move(m));
    });
    if (tracer_) tracer_->remove_session(c.session);  // its client threads' last records
    log("session %u: pid %d disconnected", c.session, c.pid);
  }
  if (auto u = connections_per_uid_.find(c.uid); u != connections_per_uid_.end() && --u->second == 0) {
    connections_per_uid_.erase(u);
  }
  connections_.erase(it);
}

void Daemon::shutdown() {
  if (stopped_) return;
  stopped_ = true;
  metrics_server_.reset();  // its thread reads the dispatcher
  if (listen_fd_.valid()) {
    listen_fd_.reset();
    unlink(socket_path_.c_str());  // new clients see no daemon from here on
  }
  if (tracer_) tracer_->stop();
  tracer_.reset();  // it holds the dispatcher
  if (dispatcher_) {
    dispatcher_->stop();  // stops taking packets, drains accepted jobs, closes sessions
    log("drained; %lu sessions served", static_cast<unsigned long>(sessions_served_));
  }
  connections_.clear();
  dispatcher_.reset();
  if (!lock_path_.empty()) {
    unlink(lock_path_.c_str());
    lock_fd_.reset();
  }
}

Figures Daemon::figures() {
  Figures f;
  f.snapshot = dispatcher_->snapshot();
  f.tlb = dispatcher_->with_engine([&](engine::Engine&) { return translator_->stats(); });
  const tandem_metrics_page_t& page = dispatcher_->metrics_page();
  for (const auto& fc : f.snapshot.functions) {
    abi::FunctionMetrics m;
    abi::read_metrics(page, fc.first, m);
    f.functions.emplace_back(fc.first, m);
  }
  if (tracer_) f.trace = tracer_->counters();
  f.uptime_s = static_cast<double>(tandem::now_ns() - started_ns_) / 1e9;
  return f;
}

std::string Daemon::prometheus_text() { return daemon::prometheus_text(figures()); }

std::string Daemon::metrics_address() const { return metrics_server_ ? metrics_server_->address() : std::string(); }

std::string Daemon::status_json() {
  using nlohmann::json;
  json j;
  const Figures fig = figures();
  const rt::Snapshot& snap = fig.snapshot;
  const engine::TlbStats& tlb = fig.tlb;
  const double uptime = fig.uptime_s;
  j["daemon"] = {{"pid", getpid()},
                 {"socket", socket_path_},
                 {"uptime_s", uptime},
                 {"config", options_.config.source},
                 {"sessions_served", sessions_served_},
                 {"protocol_errors", protocol_errors_}};
  // Slots grouped by device: each device with its own slots (their numbers are the engine's).
  json devices = json::array();
  json slots = json::array();
  for (const rt::DeviceView& dv : snap.devices) {
    json device_slots = json::array();
    for (uint32_t i = 0; i < dv.info.slots; ++i) {
      const size_t s = dv.first_slot + i;
      const auto& v = snap.slots[s];
      const double busy =
          static_cast<double>(v.busy_total + (v.state == engine::SlotState::busy ? snap.now_ns - v.busy_since : 0));
      json entry = {{"slot", s},
                    {"device", dv.info.name},
                    {"state", slot_state_name(v.state)},
                    {"function", v.state == engine::SlotState::empty ? "" : function_name(v.function)},
                    {"jobs_done", v.jobs_done},
                    {"utilization", uptime > 0 ? busy / 1e9 / uptime : 0.0},
                    {"in_service", dv.health[i].in_service}};
      if (!dv.health[i].last_error.empty()) entry["last_error"] = dv.health[i].last_error;
      device_slots.push_back(entry);
      slots.push_back(entry);
    }
    devices.push_back({{"name", dv.info.name},
                       {"kind", dv.info.kind},
                       {"description", dv.info.description},
                       {"first_slot", dv.first_slot},
                       {"slot_count", dv.info.slots},
                       {"max_job_buffer_bytes", dv.info.memory.max_job_buffer_bytes},  // 0: any size
                       {"slots", device_slots}});
    if (!dv.activity.empty()) devices.back()["activity"] = dv.activity;
    if (!dv.info.found.empty()) devices.back()["found"] = dv.info.found;  // every platform/device discovered
    // What the device measured (or models) of each function it can hold; the work variants share
    // work's figures.
    json models = json::array();
    for (uint16_t f = 0; f < TANDEM_FN_WORK_BASE && f < TANDEM_FN_MAX; ++f) {
      if (!dv.info.loadable[f]) continue;
      const model::AccelModel& m = dv.info.models[f];
      json entry = {{"function", function_name(f)},
                    {"xa_units_per_s", m.throughput},
                    {"da_us", m.latency_s * 1e6},
                    {"reconfig_us", m.reconfig_s * 1e6}};
      const model::AccelModel& copied = dv.info.copy_models[f];
      if (copied.latency_s > 0) {  // measured with copies as well (OpenCL access = "job")
        entry["copied_xa_units_per_s"] = copied.throughput;
        entry["copied_da_us"] = copied.latency_s * 1e6;
      }
      models.push_back(entry);
    }
    devices.back()["models"] = models;
  }
  j["devices"] = devices;
  j["slots"] = slots;
  json sessions = json::array();
  for (const auto& [fd, c] : connections_) {
    if (!c->hello) continue;
    const rt::SessionStats* stats = nullptr;
    for (const rt::SessionStats& ss : snap.session_stats) {
      if (ss.session == c->session) stats = &ss;
    }
    sessions.push_back({{"asid", c->session},
                        {"pid", c->pid},
                        {"uid", c->uid},
                        {"queues", c->queues.size()},
                        {"regions", c->regions.size()},
                        {"registered_bytes", c->registered_bytes},
                        {"jobs", stats != nullptr ? stats->jobs : 0},
                        {"rejected_jobs", stats != nullptr ? stats->refused : 0},
                        {"bytes_in", stats != nullptr ? stats->bytes_in : 0},
                        {"bytes_out", stats != nullptr ? stats->bytes_out : 0},
                        {"busy_callers", stats != nullptr ? stats->busy_callers : 0},
                        {"connected_s", static_cast<double>(tandem::now_ns() - c->connected_ns) / 1e9}});
  }
  j["sessions"] = sessions;
  // The device TLBs (PHASE/V sessions): hits, misses (page walks) and faults served, per session and
  // per function.
  const auto tlb_json = [](const devices::TlbCounts& t) {
    const uint64_t lookups = t.hits + t.misses;
    return nlohmann::json{{"hits", t.hits},
                          {"misses", t.misses},
                          {"walks", t.misses},
                          {"faults", t.faults},
                          {"hit_rate", lookups > 0 ? static_cast<double>(t.hits) / static_cast<double>(lookups) : 0.0}};
  };
  json tlb_sessions = json::array();
  for (const rt::Snapshot::SessionTlb& st : snap.tlb_sessions) {
    json e = tlb_json(st.tlb);
    e["asid"] = st.session;
    e["address_mode"] = st.address_mode == TANDEM_ADDRESS_PHASEV ? "phasev" : "aisle";
    tlb_sessions.push_back(e);
  }
  json tlb_functions = json::array();
  for (const auto& [f, t] : snap.tlb_functions) {
    json e = tlb_json(t);
    e["function"] = function_name(f);
    tlb_functions.push_back(e);
  }
  j["device_tlb"] = {{"sessions", tlb_sessions}, {"functions", tlb_functions}};
  json queues = json::array();
  for (size_t q = 0; q < snap.queues.size(); ++q) {
    const auto& v = snap.queues[q];
    if (!v.routed) continue;
    queues.push_back({{"queue", q}, {"function", function_name(v.function)}, {"jobs", v.jobs}, {"work", v.work}});
  }
  j["queues"] = queues;
  json functions = json::array();
  for (size_t i = 0; i < snap.functions.size(); ++i) {
    const auto& [f, counters] = snap.functions[i];
    const abi::FunctionMetrics& m = fig.functions[i].second;
    functions.push_back({{"function", function_name(f)},
                         {"accelerators", m.accelerators},
                         {"submitted_jobs", counters.submitted_jobs},
                         {"completed_jobs", counters.completed_jobs},
                         {"rejected_jobs", snap.refused[f]},
                         {"demand_requests", counters.demand_requests},
                         {"queued_jobs", m.queued_jobs},
                         {"queue_wait_us", std::isfinite(m.queue_wait_s) ? m.queue_wait_s * 1e6 : -1.0},
                         {"utilization", m.utilization},
                         {"demand", m.demand}});
  }
  j["functions"] = functions;
  // Data moved and energy, per function and access method (docs/access.md).
  json access = json::array();
  double energy_total = 0;
  for (const auto& [f, by_method] : snap.usage) {
    for (size_t m = 0; m < by_method.size(); ++m) {
      const rt::AccessUsage& u = by_method[m];
      if (u.jobs == 0) continue;
      energy_total += u.energy_j;
      access.push_back({{"function", function_name(f)},
                        {"method", model::access_method_name(static_cast<uint8_t>(m))},
                        {"jobs", u.jobs},
                        {"host_bytes", u.host_bytes},
                        {"local_bytes", u.local_bytes},
                        {"device_s", u.device_s},
                        {"energy_j", u.energy_j}});
    }
  }
  j["access"] = access;
  if (!snap.local.device.empty()) {
    j["local_memory"] = {{"device", snap.local.device},
                         {"capacity_bytes", snap.local.capacity_bytes},
                         {"used_bytes", snap.local.used_bytes},
                         {"buffers", snap.local.buffers}};
  }
  const devices::CopyStats copies = dispatcher_->copy_stats();
  j["copy_engines"] = {{"transfers", copies.transfers},
                       {"bytes_to_device", copies.bytes_to_device},
                       {"bytes_from_device", copies.bytes_from_device},
                       {"bytes_on_device", copies.bytes_on_device}};
  j["energy_j"] = energy_total;
  const uint64_t lookups = tlb.hits + tlb.misses;
  j["tlb"] = {{"hits", tlb.hits},
              {"misses", tlb.misses},
              {"faults", tlb.faults},
              {"flushes", tlb.flushes},
              {"hit_rate", lookups > 0 ? static_cast<double>(tlb.hits) / static_cast<double>(lookups) : 0.0}};
  j["dispatcher"] = {{"packets", snap.stats.packets},
                     {"jobs_started", snap.stats.jobs_started},
                     {"completions", snap.stats.completions},
                     {"rejected", snap.stats.rejected},
                     {"dropped", snap.stats.dropped},
                     {"translation_faults", snap.stats.translation_faults},
                     {"sleeps", snap.stats.sleeps},
                     {"jobs_in_flight", snap.jobs_in_flight},
                     {"max_lateness_ns", snap.stats.max_lateness_ns},
                     {"reconfigurations", snap.stats.reconfigurations}};
  const rt::TraceCounters& t = fig.trace;
  j["trace"] = {{"enabled", t.enabled},
                {"records", t.records},
                {"collected", t.collected},
                {"dropped_ring_full", t.dropped_full},
                {"dropped_store_full", t.dropped_store},
                {"dropped_no_ring", t.dropped_unclaimed},
                {"dropped_corrupt", t.dropped_corrupt}};
  j["daemon"]["metrics"] = metrics_address();
  return j.dump();
}

}  // namespace tandem::daemon
