// Helpers for multi-process tests: children that report through their exit status, raw status queries.
#pragma once

#include <nlohmann/json.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <vector>

#include "daemon_harness.hpp"

namespace tandem::testing {

// Runs fn() in a forked child; returns the child's pid. The child exits with fn()'s value.
inline pid_t spawn(const std::function<int()>& fn) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = fn();
    } catch (...) {
      rc = 99;
    }
    _exit(rc);
  }
  return pid;
}

// Exit code of a child (or 128 + signal).
inline int join(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

inline nlohmann::json daemon_status(const DaemonProcess& d) {
  rt::UniqueFd fd(d.connect_raw());
  if (!fd.valid()) return {};
  if (rt::send_frame(fd.get(), abi::control::MessageType::status, 7, nullptr, 0) != Status::ok) return {};
  auto reply = rt::recv_frame(fd.get(), 5'000'000'000);
  if (!reply || reply.value().type() != abi::control::MessageType::status_reply) return {};
  const auto& p = reply.value().payload;
  return nlohmann::json::parse(std::string(reinterpret_cast<const char*>(p.data()), p.size()));
}

// Polls the daemon's status until pred(status) holds, at most `seconds`.
template <class Pred>
bool eventually(const DaemonProcess& d, double seconds, Pred pred) {
  const int64_t until = tandem::now_ns() + static_cast<int64_t>(seconds * 1e9);
  while (tandem::now_ns() < until) {
    auto j = daemon_status(d);
    if (!j.is_null() && pred(j)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

}  // namespace tandem::testing
