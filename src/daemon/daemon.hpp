// tandemd: many processes, one fabric. The daemon is another driver around the same engine,
// dispatcher and devices as the embedded runtime: a control thread accepts clients on a Unix socket and
// speaks the control protocol (src/abi/control.hpp); the dispatcher thread serves every session's rings.
//
// Each connection is a session with a daemon-assigned address-space id (ASID). Its rings and the
// memory it registers are memfds the daemon maps; every address a packet carries is translated through
// the session's regions (engine::Translator) before any access. A session can never name another
// session's memory: the ASID comes from the connection, never from anything the client writes.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "engine/translation.hpp"
#include "rt/control_channel.hpp"
#include "rt/dispatcher.hpp"
#include "rt/shm.hpp"
#include "rt/trace.hpp"

namespace tandem::daemon {

struct DaemonOptions {
  std::string socket_path;  // "" = config's daemon.socket, else rt::default_socket_path()
  config::Config config;
  bool log = true;          // log to stderr
};

class SessionMemory;
class MetricsServer;
struct Figures;

class Daemon {
 public:
  // Binds the socket (refusing if another daemon owns it), starts the dispatcher.
  static Result<std::unique_ptr<Daemon>> start(const DaemonOptions& options);
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Serves clients until SIGTERM/SIGINT (when `handle_signals`) or request_stop(); then stops accepting,
  // drains in-flight jobs, closes every session and removes the socket. Returns the exit code.
  int run(bool handle_signals);
  // Handles whatever is ready within `timeout_ms` (-1: wait): one step of run(), for tests and fuzzers.
  // False once a stop was requested.
  bool serve(int timeout_ms);
  size_t connection_count() const { return connections_.size(); }
  // Thread-safe.
  void request_stop();
  // Blocks SIGTERM and SIGINT (delivered through a signalfd by run()) and ignores SIGPIPE. Call before
  // start(), so that no thread of the process takes the default action.
  static sigset_t block_stop_signals();

  const std::string& socket_path() const { return socket_path_; }
  // The status report (`tandem status`), as JSON text.
  std::string status_json();
  // What status_json and /metrics report, taken from threads that may be read from any thread.
  Figures figures();
  // /metrics (any thread).
  std::string prometheus_text();
  // Where /metrics is served ("" when it is not).
  std::string metrics_address() const;

 private:
  struct Queue {
    uint32_t engine_ring = 0;
    std::shared_ptr<rt::Mapping> memory;
    uint32_t capacity = 0;
  };
  struct RegionEntry {
    std::shared_ptr<rt::Mapping> memory;
    uint64_t bytes = 0;
  };
  struct Connection {
    rt::UniqueFd fd;
    rt::FrameReader reader;
    rt::FrameWriter writer;     // replies the client has not read yet (bounded: limits.output_buffer_kib)
    bool writing = false;       // EPOLLOUT is armed
    bool broken = false;        // to be closed: the peer went away or let its replies pile up
    int64_t hello_deadline_ns = 0;
    uid_t uid = 0;
    pid_t pid = 0;
    uint64_t id = 0;
    bool hello = false;
    engine::SessionId session = engine::kNone;  // == the ASID
    std::shared_ptr<SessionMemory> memory;
    std::map<uint32_t, Queue> queues;
    std::map<uint32_t, RegionEntry> regions;
    uint32_t next_queue = 1;
    uint64_t registered_bytes = 0;
    int64_t connected_ns = 0;
  };

  explicit Daemon(const DaemonOptions& options);
  Status open_socket();
  std::string open_socket_error_;  // open_socket()'s reason where errno does not say it
  void accept_clients();
  void on_readable(Connection& c);
  // Handles one request; false when the connection must be closed.
  bool handle(Connection& c, rt::Frame& f);
  void reply_error(Connection& c, uint32_t request_id, Status s, const std::string& message);
  // Queues a reply and sends what the socket takes now; never waits for the client.
  void reply(Connection& c, abi::control::MessageType type, uint32_t request_id, const void* payload, size_t bytes,
             int fd = -1);
  template <class T>
  void reply_struct(Connection& c, abi::control::MessageType type, uint32_t request_id, const T& payload, int fd = -1) {
    reply(c, type, request_id, &payload, sizeof payload, fd);
  }
  void on_writable(Connection& c);
  void watch(Connection& c);  // epoll interest: input, and output while replies are queued
  // Handles at most a round's share of the frames the connection has buffered; false if it must close.
  bool handle_frames(Connection& c);
  // Closes the oldest connection that has not said hello (of `uid`, or of anyone if `any_uid`) to make
  // room for a new one. False if there is none.
  bool evict_idle(uid_t uid, bool any_uid);
  void expire_hello_deadlines(int64_t now);
  int next_timeout_ms(int timeout_ms, int64_t now) const;
  void refuse(rt::UniqueFd fd, Status s, const std::string& why, pid_t pid, uid_t uid);
  void log_limited(const char* what, const std::string& detail);
  // status_json(), made at most once per 10 ms (answers to requests in between share it).
  const std::string& recent_status();
  void close_connection(int fd);
  void shutdown();
  void log(const char* fmt, ...) __attribute__((format(printf, 2, 3)));

  bool on_hello(Connection& c, const rt::Frame& f);
  bool on_create_queue(Connection& c, const rt::Frame& f);
  bool on_destroy_queue(Connection& c, const rt::Frame& f);
  bool on_attach_service(Connection& c, rt::Frame& f);
  bool on_register(Connection& c, rt::Frame& f);
  bool on_unregister(Connection& c, const rt::Frame& f);
  bool on_trace_attach(Connection& c, const rt::Frame& f);
  bool on_trace_control(Connection& c, const rt::Frame& f);
  bool on_trace_dump(Connection& c, const rt::Frame& f);

  DaemonOptions options_;
  std::string socket_path_;
  std::string lock_path_;
  rt::UniqueFd lock_fd_;
  rt::UniqueFd listen_fd_;
  rt::UniqueFd epoll_fd_;
  rt::UniqueFd stop_fd_;     // eventfd: request_stop()
  rt::UniqueFd signal_fd_;
  std::unique_ptr<rt::Dispatcher> dispatcher_;
  std::unique_ptr<engine::Translator> translator_;  // used on the dispatcher thread only
  std::unique_ptr<rt::TraceCollector> tracer_;      // per-job records (docs/tracing.md)
  std::unique_ptr<MetricsServer> metrics_server_;   // /metrics, when asked for
  std::shared_ptr<rt::Mapping> metrics_memory_;
  rt::UniqueFd metrics_fd_;  // read-only descriptor handed to clients
  std::map<int, std::unique_ptr<Connection>> connections_;
  std::map<uid_t, uint32_t> connections_per_uid_;
  std::vector<int> unfinished_;   // connections with buffered frames left over from the last round
  int64_t accept_paused_until_ = 0;  // out of descriptors: accept again from then on
  int64_t next_limited_log_ns_ = 0;
  std::string status_text_;
  int64_t status_made_ns_ = 0;
  bool sessions_changed_ = false;  // a session began or ended since status_text_ was made
  uint64_t limited_logs_suppressed_ = 0;
  uint64_t next_connection_ = 1;
  uint64_t sessions_served_ = 0;
  uint64_t protocol_errors_ = 0;
  int64_t started_ns_ = 0;
  bool stopped_ = false;
};

}  // namespace tandem::daemon
