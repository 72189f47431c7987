// tandemd's /metrics endpoint: a minimal HTTP/1.1 responder on a thread of its own, so that no scraper,
// slow or malicious, can hold up the daemon's control thread or its dispatcher.
//
// It answers GET (and HEAD) /metrics with the Prometheus text format and closes the connection; any
// other path is 404, any other method 405, a malformed request 400, a request head over 8 KiB 431.
// Bounded everywhere: at most 16 connections (a new one evicts the oldest that has not finished its
// request), 2 s to send the request and 2 s to take the answer, non-blocking sockets throughout. The
// figures are made at most once per `min_interval` (later scrapes get the same text), so a scraper
// in a loop costs the dispatcher one snapshot per interval.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "abi/status.hpp"
#include "rt/shm.hpp"

namespace tandem::daemon {

class MetricsServer {
 public:
  // Listens on `listen`: "HOST:PORT" with an IPv4 or bracketed IPv6 literal or "localhost", or just
  // "PORT" (127.0.0.1). Port 0 takes a free one (address() says which). `render` makes the body; it
  // runs on the server's thread.
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& listen, std::function<std::string()> render,
                                                      int64_t min_interval_ns);
  // start()'s error for a `listen` that is not such an address, or ok: checked before a daemon sets up
  // its devices, so that a typo fails at once.
  static Status check_listen(const std::string& listen, std::string& error);
  ~MetricsServer();
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Where it listens, as "HOST:PORT".
  const std::string& address() const { return address_; }

 private:
  MetricsServer() = default;
  void run();

  rt::UniqueFd listen_fd_;
  rt::UniqueFd stop_fd_;  // eventfd: the destructor wakes the thread
  std::string address_;
  std::function<std::string()> render_;
  int64_t min_interval_ns_ = 0;
  std::thread thread_;
};

}  // namespace tandem::daemon
