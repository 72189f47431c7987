#include "daemon/metrics_server.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>
#include <vector>

#include "base/clock.hpp"

namespace tandem::daemon {

namespace {

constexpr size_t kMaxConnections = 16;
constexpr size_t kMaxRequestBytes = 8192;
constexpr int64_t kRequestTimeoutNs = 2'000'000'000;   // to send the request head
constexpr int64_t kResponseTimeoutNs = 2'000'000'000;  // to take the answer

struct Connection {
  rt::UniqueFd fd;
  std::string in;
  std::string out;
  size_t sent = 0;
  bool answering = false;  // the request was read; `out` is being sent
  int64_t deadline = 0;
  int64_t accepted = 0;
};

std::string response(int code, std::string_view reason, std::string_view type, const std::string& body, bool head) {
  std::string r = "HTTP/1.1 " + std::to_string(code) + " " + std::string(reason) + "\r\n";
  r += "Content-Type: " + std::string(type) + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (code == 405) r += "Allow: GET, HEAD\r\n";
  r += "Connection: close\r\n\r\n";
  if (!head) r += body;
  return r;
}

std::string plain(int code, std::string_view reason, std::string_view text) {
  return response(code, reason, "text/plain; charset=utf-8", std::string(text) + "\n", false);
}

// Parses "HOST:PORT" (or "PORT") into a socket address.
bool parse_listen(const std::string& listen, sockaddr_storage& addr, socklen_t& len, std::string& error) {
  std::string host = "127.0.0.1", port = listen;
  if (!listen.empty() && listen.front() == '[') {  // [v6]:port
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      error = "expected [ADDRESS]:PORT";
      return false;
    }
    host = listen.substr(1, close - 1);
    port = listen.substr(close + 2);
  } else if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    host = listen.substr(0, colon);
    port = listen.substr(colon + 1);
  }
  if (host == "localhost") host = "127.0.0.1";
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    error = "the port must be a number in [0, 65535]";
    return false;
  }
  std::memset(&addr, 0, sizeof addr);
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(p));
    len = sizeof *v4;
    return true;
  }
  if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(p));
    len = sizeof *v6;
    return true;
  }
  error = "'" + host + "' is not an IP address (or localhost)";
  return false;
}

std::string format_address(const sockaddr_storage& addr) {
  char host[INET6_ADDRSTRLEN] = {};
  if (addr.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
    return "[" + std::string(host) + "]:" + std::to_string(ntohs(v6->sin6_port));
  }
  const auto* v4 = reinterpret_cast<const sockaddr_in*>(&addr);
  inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
  return std::string(host) + ":" + std::to_string(ntohs(v4->sin_port));
}

}  // namespace

Status MetricsServer::check_listen(const std::string& listen, std::string& error) {
  sockaddr_storage addr;
  socklen_t len = 0;
  std::string why;
  if (parse_listen(listen, addr, len, why)) return Status::ok;
  error = "metrics listen '" + listen + "': " + why;
  return Status::invalid_argument;
}

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& listen,
                                                            std::function<std::string()> render,
                                                            int64_t min_interval_ns) {
  using R = Result<std::unique_ptr<MetricsServer>>;
  sockaddr_storage addr;
  socklen_t len = 0;
  std::string error;
  if (!parse_listen(listen, addr, len, error)) return R(Status::invalid_argument, "metrics listen '" + listen + "': " + error);
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->listen_fd_.reset(socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!s->listen_fd_.valid()) return R(Status::io_error, "metrics: socket: " + std::string(std::strerror(errno)));
  const int one = 1;
  setsockopt(s->listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(s->listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(s->listen_fd_.get(), 16) != 0) {
    return R(Status::io_error, "metrics: cannot listen on " + listen + ": " + std::strerror(errno));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof bound;
  getsockname(s->listen_fd_.get(), reinterpret_cast<sockaddr*>(&bound), &bound_len);
  s->address_ = format_address(bound);
  s->stop_fd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!s->stop_fd_.valid()) return R(Status::io_error, "metrics: eventfd");
  s->render_ = std::move(render);
  s->min_interval_ns_ = min_interval_ns;
  MetricsServer* self = s.get();
  s->thread_ = std::thread([self] { self->run(); });
  return s;
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    (void)!write(stop_fd_.get(), &one, sizeof one);
    thread_.join();
  }
}

void MetricsServer::run() {
  pthread_setname_np(pthread_self(), "tandem-metrics");
  std::vector<Connection> conns;
  std::string cached;
  int64_t cached_at = 0;
  bool have_cache = false;
  std::vector<pollfd> fds;
  for (;;) {
    const int64_t now = now_ns();
    // Close what ran out of time or finished (what the client still sent is read first: closing a
    // socket with unread bytes resets it, and the client could lose the answer).
    std::erase_if(conns, [&](const Connection& c) {
      if (c.deadline <= now) return true;
      if (!c.answering || c.sent < c.out.size()) return false;
      shutdown(c.fd.get(), SHUT_WR);
      char sink[512];
      for (int i = 0; i < 16 && recv(c.fd.get(), sink, sizeof sink, 0) > 0; ++i) {
      }
      return true;
    });
    fds.clear();
    fds.push_back({stop_fd_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    int64_t next = INT64_MAX;
    for (const Connection& c : conns) {
      fds.push_back({c.fd.get(), static_cast<short>(c.answering ? POLLOUT : POLLIN), 0});
      next = std::min(next, c.deadline);
    }
    const int timeout_ms = next == INT64_MAX ? -1 : static_cast<int>(std::max<int64_t>(1, (next - now) / 1'000'000 + 1));
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) return;  // stop
    // Serve the connections before accepting more: `fds` indexes them as they are now.
    for (size_t i = 0; i < conns.size(); ++i) {
      Connection& c = conns[i];
      const short ev = fds[i + 2].revents;
      if (ev == 0) continue;
      if (!c.answering) {
        char buf[2048];
        const ssize_t n = recv(c.fd.get(), buf, sizeof buf, 0);
        if (n <= 0) {
          if (n == 0 || (errno != EAGAIN && errno != EINTR)) c.deadline = 0;  // gone: closed next round
          continue;
        }
        c.in.append(buf, static_cast<size_t>(n));
        const size_t end = c.in.find("\r\n\r\n");
        if (end == std::string::npos) {
          if (c.in.size() > kMaxRequestBytes) {
            c.out = plain(431, "Request Header Fields Too Large", "request head over 8 KiB");
            c.answering = true;
            c.deadline = now_ns() + kResponseTimeoutNs;
          }
          continue;
        }
        // "METHOD TARGET HTTP/1.x": nothing else of the request matters.
        const std::string_view line(c.in.data(), c.in.find("\r\n"));
        const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
        if (sp1 == std::string_view::npos || sp2 == sp1 || line.substr(sp2 + 1).substr(0, 5) != "HTTP/") {
          c.out = plain(400, "Bad Request", "malformed request line");
        } else {
          const std::string_view method = line.substr(0, sp1);
          std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
          target = target.substr(0, target.find('?'));
          if (method != "GET" && method != "HEAD") {
            c.out = plain(405, "Method Not Allowed", "only GET and HEAD");
          } else if (target != "/metrics") {
            c.out = plain(404, "Not Found", "tandemd serves /metrics only");
          } else {
            const int64_t t = now_ns();
            if (!have_cache || t - cached_at >= min_interval_ns_) {
              cached = render_();
              cached_at = t;
              have_cache = true;
            }
            c.out = response(200, "OK", "text/plain; version=0.0.4; charset=utf-8", cached, method == "HEAD");
          }
        }
        c.answering = true;
        c.deadline = now_ns() + kResponseTimeoutNs;
      } else {
        const ssize_t n = send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n > 0) {
          c.sent += static_cast<size_t>(n);
        } else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          c.deadline = 0;
        }
      }
    }
    if (fds[1].revents & POLLIN) {
      for (int k = 0; k < 16; ++k) {
        const int fd = accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) break;
        if (conns.size() >= kMaxConnections) {
          // Full: the oldest connection still sending its request makes room (a slow client cannot
          // keep others out); if every one is being answered, the newcomer is turned away.
          auto oldest = std::min_element(conns.begin(), conns.end(), [](const Connection& a, const Connection& b) {
            return (a.answering ? INT64_MAX : a.accepted) < (b.answering ? INT64_MAX : b.accepted);
          });
          if (oldest->answering) {
            close(fd);
            continue;
          }
          conns.erase(oldest);
        }
        Connection c;
        c.fd.reset(fd);
        c.accepted = now_ns();
        c.deadline = c.accepted + kRequestTimeoutNs;
        conns.push_back(std::move(c));
      }
    }
  }
}

}  // namespace tandem::daemon
