// Fuzzes tandemd's control protocol: the input is what a client writes on its socket, after an optional
// well-formed hello (first input byte, bit 0). The real daemon handles it, in process; afterwards it
// must still serve a well-behaved client.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include "daemon/daemon.hpp"
#include "rt/control_channel.hpp"

namespace {

tandem::daemon::Daemon& daemon_instance() {
  static std::unique_ptr<tandem::daemon::Daemon> d = [] {
    char dir[] = "/tmp/tandem-fuzz-XXXXXX";
    tandem::daemon::DaemonOptions o;
    o.socket_path = std::string(mkdtemp(dir)) + "/tandem.sock";
    o.config = tandem::config::load_config("");
    o.log = false;
    auto started = tandem::daemon::Daemon::start(o);
    if (!started) std::abort();
    return std::move(started).value();
  }();
  return *d;
}

int connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) std::abort();
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  daemon::Daemon& d = daemon_instance();
  rt::UniqueFd fd(connect_to(d.socket_path()));
  d.serve(100);  // accept
  if (size > 0 && (data[0] & 1)) {
    abi::control::Hello h;
    h.abi_version = TANDEM_ABI_VERSION;
    rt::send_struct(fd.get(), abi::control::MessageType::hello, 1, h);
  }
  if (size > 1) {
    const ssize_t n = send(fd.get(), data + 1, std::min<size_t>(size - 1, 200'000), MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)n;
  }
  shutdown(fd.get(), SHUT_WR);
  // Let the daemon handle it all and hang up.
  for (int i = 0; i < 200 && d.connection_count() > 0; ++i) d.serve(10);
  if (d.connection_count() != 0) std::abort();  // a connection the daemon never let go of
  return 0;
}
