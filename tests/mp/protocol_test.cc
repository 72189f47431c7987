// The control protocol against malformed input: every bad message gets an error (or the connection is
// closed for a broken stream), and the daemon carries on serving everyone else.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <dirent.h>
#include <sys/stat.h>

#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "mp_util.hpp"
#include "rt/shm.hpp"

namespace tandem {
namespace {

using abi::control::FrameHeader;
using abi::control::MessageType;
using testing::DaemonProcess;

class Protocol : public ::testing::Test {
 protected:
  rt::UniqueFd connect() { return rt::UniqueFd(daemon.connect_raw()); }
  // Sends raw bytes; returns the reply frame (or the failure: DISCONNECTED when the daemon hung up).
  Result<rt::Frame> exchange(int fd, const void* bytes, size_t n) {
    if (send(fd, bytes, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) return Result<rt::Frame>(Status::io_error);
    return rt::recv_frame(fd, 3'000'000'000);
  }
  Result<rt::Frame> exchange(int fd, MessageType type, const void* payload, size_t bytes, int pass_fd = -1) {
    if (rt::send_frame(fd, type, 5, payload, bytes, pass_fd) != Status::ok) return Result<rt::Frame>(Status::io_error);
    return rt::recv_frame(fd, 3'000'000'000);
  }
  static Status error_of(const Result<rt::Frame>& r) {
    if (!r.ok()) return r.status();
    if (r.value().type() != MessageType::error) return Status::ok;
    return from_wire(r.value().prefix_as<abi::control::ErrorReply>().status);
  }
  // After every abuse: the daemon is alive and a well-behaved client works.
  void expect_healthy() {
    ASSERT_TRUE(daemon.alive());
    auto rt = daemon.open();
    ASSERT_TRUE(rt);
    auto* rec = static_cast<tandem_completion_t*>(rt->alloc(sizeof(tandem_completion_t)));
    rt::reset_record(rec);
    ASSERT_EQ(rt->default_queue().dispatch(TANDEM_FN_NOP, nullptr, 0, 0, rec), Status::ok);
    EXPECT_EQ(rt->wait(rec, {}), Status::ok);
  }
  void hello(int fd) {
    abi::control::Hello h;
    h.abi_version = TANDEM_ABI_VERSION;
    auto r = exchange(fd, MessageType::hello, &h, sizeof h);
    ASSERT_TRUE(r.ok());
    ASSERT_EQ(r.value().type(), MessageType::hello_ok);
  }

 public:
  // True if the daemon closes the connection (within 3 s), whatever it said before.
  static bool hung_up(int fd) {
    const int64_t until = tandem::now_ns() + 3'000'000'000;
    while (tandem::now_ns() < until) {
      pollfd p{fd, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      const ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN) return errno == ECONNRESET;
    }
    return false;
  }

 protected:
  DaemonProcess daemon;
};

// A daemon that is not tandemd of this build answers hello with a payload whose host figures are
// missing, cut short, too many or followed by more bytes: the client refuses the session with
// PROTOCOL_ERROR, never reads past the payload, and adopts nothing.
TEST(HelloFromAFakeDaemon, MalformedHostFiguresAreRefused) {
  namespace ctl = abi::control;
  const auto bytes_of = [](const auto& record) {
    const auto* b = reinterpret_cast<const std::byte*>(&record);
    return std::vector<std::byte>(b, b + sizeof record);
  };
  const size_t metrics_bytes = rt::round_to_pages(sizeof(tandem_metrics_page_t));
  ctl::HelloOk ok;
  ok.slot_count = 1;
  ok.metrics_bytes = metrics_bytes;
  ok.device_count = 1;
  ctl::DeviceEntry device;
  std::strncpy(device.kind, "emu", sizeof device.kind - 1);
  device.slots = 1;
  std::vector<std::byte> base = bytes_of(ok);
  const std::vector<std::byte> d = bytes_of(device);
  base.insert(base.end(), d.begin(), d.end());
  ctl::HostEntry host;
  host.cycles_per_s = 2e9;
  host.memcpy_bps = host.gather_bps = 1e10;
  ctl::HostRate rate{TANDEM_FN_SOBEL, {}, 1e8};
  const auto with = [&](ctl::HostEntry h, size_t rates, size_t extra) {
    std::vector<std::byte> p = base;
    const std::vector<std::byte> hb = bytes_of(h), rb = bytes_of(rate);
    p.insert(p.end(), hb.begin(), hb.end());
    for (size_t i = 0; i < rates; ++i) p.insert(p.end(), rb.begin(), rb.end());
    p.resize(p.size() + extra, std::byte{0});
    return p;
  };
  ctl::HostEntry too_many = host;
  too_many.function_count = TANDEM_FN_MAX + 1;
  ctl::HostEntry two = host;
  two.function_count = 2;
  std::vector<std::byte> cut = with(host, 0, 0);
  cut.resize(cut.size() - 8);
  const std::vector<std::pair<std::string, std::vector<std::byte>>> cases = {
      {"no host figures (protocol 3's payload)", base},
      {"HostEntry cut short", cut},
      {"more rates than functions", with(too_many, 0, 0)},
      {"fewer rates than announced", with(two, 1, 0)},
      {"bytes after the rates", with(two, 2, 3)},
  };
  for (const auto& [what, payload] : cases) {
    SCOPED_TRACE(what);
    char tmpl[] = "/tmp/tandem-fake-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string path = std::string(tmpl) + "/tandem.sock";
    rt::UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener.get(), 4), 0);
    std::thread fake([&, payload = payload] {
      rt::UniqueFd c(accept(listener.get(), nullptr, nullptr));
      auto hello = rt::recv_frame(c.get(), 5'000'000'000);
      if (!hello || hello.value().type() != MessageType::hello) return;
      rt::UniqueFd page(memfd_create("fake-metrics", MFD_CLOEXEC));
      if (ftruncate(page.get(), static_cast<off_t>(metrics_bytes)) != 0) return;
      (void)rt::send_frame(c.get(), MessageType::hello_ok, hello.value().header.request_id, payload.data(), payload.size(),
                           page.get());
      (void)Protocol::hung_up(c.get());  // until the client goes
    });
    client::RuntimeOptions o;
    o.socket_path = path;
    o.calibration = client::Calibration{};
    auto opened = client::Runtime::open(o);
    fake.join();
    EXPECT_FALSE(opened.ok());
    EXPECT_EQ(opened.status(), Status::protocol_error) << opened.message();
    unlink(path.c_str());
    rmdir(tmpl);
  }
}

// hello_ok ends with this machine's CPU figures (HostEntry), measured once by the daemon; a client of
// it takes the access costs from there instead of measuring its own.
TEST_F(Protocol, HelloEndsWithTheHostFiguresAndClientsUseThem) {
  namespace ctl = abi::control;
  auto fd = connect();
  abi::control::Hello h;
  h.abi_version = TANDEM_ABI_VERSION;
  auto r = exchange(fd.get(), MessageType::hello, &h, sizeof h);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r.value().type(), MessageType::hello_ok);
  const std::vector<std::byte>& payload = r.value().payload;
  size_t at = 0;
  const auto take = [&](auto& record) {
    ASSERT_LE(at + sizeof record, payload.size());
    std::memcpy(&record, payload.data() + at, sizeof record);
    at += sizeof record;
  };
  ctl::HelloOk ok;
  take(ok);
  for (uint32_t d = 0; d < ok.device_count; ++d) {
    ctl::DeviceEntry e;
    take(e);
    at += e.function_count * sizeof(ctl::FunctionEntry);
  }
  ctl::HostEntry host;
  take(host);
  EXPECT_GT(host.cycles_per_s, 1e8);
  EXPECT_GT(host.memcpy_bps, 0);
  EXPECT_GT(host.gather_bps, 0);
  EXPECT_GE(host.gather_page_s, 0);
  ASSERT_EQ(payload.size() - at, host.function_count * sizeof(ctl::HostRate)) << "the rates end the payload";
  std::set<uint16_t> rated;
  for (uint32_t i = 0; i < host.function_count; ++i) {
    ctl::HostRate rate;
    take(rate);
    EXPECT_LT(rate.function, TANDEM_FN_MAX);
    EXPECT_GT(rate.units_per_s, 0) << "function " << rate.function;
    rated.insert(rate.function);
  }
  for (uint16_t f : {TANDEM_FN_ACCUMULATE, TANDEM_FN_SOBEL, TANDEM_FN_LIST_WALK}) EXPECT_TRUE(rated.count(f)) << f;
  // The same daemon, so the same figures: the client took them rather than measuring. (An empty
  // calibration in memory: a user's calibration file with an [access] table would take precedence.)
  client::RuntimeOptions o;
  o.socket_path = daemon.socket();
  o.calibration = client::Calibration{};
  auto opened = client::Runtime::open(o);
  ASSERT_TRUE(opened.ok()) << opened.message();
  auto rt = std::move(opened).value();
  EXPECT_EQ(rt->access_costs().memcpy_bps, host.memcpy_bps);
  EXPECT_EQ(rt->access_costs().gather_bps, host.gather_bps);
  EXPECT_EQ(rt->access_costs().gather_page_s, host.gather_page_s);
}

TEST_F(Protocol, BadMagicVersionTypeAndLengthCloseTheConnection) {
  const FrameHeader good{};
  auto expect_rejected = [&](FrameHeader h) {
    auto fd = connect();
    auto r = exchange(fd.get(), &h, sizeof h);
    EXPECT_EQ(error_of(r), Status::protocol_error);
    EXPECT_TRUE(hung_up(fd.get()));
  };
  FrameHeader h = good;
  h.magic = 0xdeadbeef;
  h.type = static_cast<uint16_t>(MessageType::status);
  expect_rejected(h);
  h = good;
  h.version = 99;
  h.type = static_cast<uint16_t>(MessageType::status);
  expect_rejected(h);
  h = good;
  h.type = 999;
  expect_rejected(h);
  h = good;
  h.type = static_cast<uint16_t>(MessageType::status_reply);
  h.length = abi::control::kMaxPayload + 1;  // announces more than any frame may carry
  expect_rejected(h);
  h = good;
  h.type = static_cast<uint16_t>(MessageType::create_queue);
  h.length = 3;  // not the size of a create_queue request
  expect_rejected(h);
  expect_healthy();
}

TEST_F(Protocol, TruncatedFramesAndGarbageDoNotHurtTheDaemon) {
  {
    auto fd = connect();
    FrameHeader h;
    h.type = static_cast<uint16_t>(MessageType::hello);
    h.length = sizeof(abi::control::Hello);
    ASSERT_EQ(send(fd.get(), &h, sizeof h, MSG_NOSIGNAL), static_cast<ssize_t>(sizeof h));
    ASSERT_EQ(send(fd.get(), "ab", 2, MSG_NOSIGNAL), 2);  // half a payload, then gone
  }
  {
    auto fd = connect();
    ASSERT_EQ(send(fd.get(), "xy", 2, MSG_NOSIGNAL), 2);  // half a header
  }
  {
    auto fd = connect();
    std::vector<uint8_t> junk(100'000);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 131 + 7);
    send(fd.get(), junk.data(), junk.size(), MSG_NOSIGNAL);
    EXPECT_TRUE(hung_up(fd.get()));
  }
  expect_healthy();
}

TEST_F(Protocol, RequestsBeforeHelloAndWrongAbiVersion) {
  auto fd = connect();
  abi::control::CreateQueue cq;
  cq.capacity = 8;
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::create_queue, &cq, sizeof cq)), Status::protocol_error);
  abi::control::Hello h;
  h.abi_version = TANDEM_ABI_VERSION + 1;
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::hello, &h, sizeof h)), Status::protocol_error);
  EXPECT_TRUE(hung_up(fd.get()));
  auto fd2 = connect();
  hello(fd2.get());
  h.abi_version = TANDEM_ABI_VERSION;
  EXPECT_EQ(error_of(exchange(fd2.get(), MessageType::hello, &h, sizeof h)), Status::protocol_error) << "twice";
  EXPECT_EQ(error_of(exchange(fd2.get(), MessageType::ok, nullptr, 0)), Status::protocol_error) << "not a request";
  expect_healthy();
}

TEST_F(Protocol, BadQueueAndMemoryRequests) {
  auto fd = connect();
  hello(fd.get());
  abi::control::CreateQueue cq;
  for (uint32_t bad : {0u, 1u, 6u, 1u << 30}) {
    cq.capacity = bad;
    EXPECT_EQ(error_of(exchange(fd.get(), MessageType::create_queue, &cq, sizeof cq)), Status::invalid_argument) << bad;
  }
  abi::control::DestroyQueue dq;
  dq.queue_id = 42;
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::destroy_queue, &dq, sizeof dq)), Status::invalid_argument);
  abi::control::UnregisterMemory um;
  um.region_id = 9;
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::unregister_memory, &um, sizeof um)), Status::invalid_argument);
  auto memfd = rt::create_memfd("protocol", 1 << 16, false);
  ASSERT_TRUE(memfd.ok());
  abi::control::RegisterMemory rm;
  rm.client_base = 0x7000'0000'0000;
  rm.bytes = 1 << 16;
  rm.flags = abi::control::kRegionWritable;
  EXPECT_EQ(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get()).value().type(),
            MessageType::region_ok);
  rm.client_base += 4096;  // overlaps the region just registered
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get())),
            Status::invalid_argument);
  rm.client_base = 0x6000'0000'0000 + 12;  // unaligned
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get())),
            Status::invalid_argument);
  rm.client_base = 0x6000'0000'0000;
  rm.bytes = 1 << 20;  // longer than the memfd
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get())),
            Status::invalid_argument);
  rm.bytes = 4096;
  rm.flags = 0xff;  // unknown flag
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get())),
            Status::invalid_argument);
  rm.flags = 0;
  rm.client_base = ~uint64_t{0} - 4095;  // wraps
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm, memfd.value().get())),
            Status::invalid_argument);
  expect_healthy();
}

TEST_F(Protocol, DescriptorsWhereNoneBelongOrMissing) {
  auto fd = connect();
  hello(fd.get());
  abi::control::RegisterMemory rm;
  rm.client_base = 0x7000'0000'0000;
  rm.bytes = 4096;
  EXPECT_EQ(error_of(exchange(fd.get(), MessageType::register_memory, &rm, sizeof rm)), Status::invalid_argument)
      << "no memfd: an error for that request, the session lives on";
  abi::control::CreateQueue cq;
  cq.capacity = 8;
  auto queue = exchange(fd.get(), MessageType::create_queue, &cq, sizeof cq);
  ASSERT_TRUE(queue.ok());
  EXPECT_EQ(queue.value().type(), MessageType::queue_ok);
  // A flood of descriptors: they are closed, not leaked, and the stream is refused.
  auto fd2 = connect();
  hello(fd2.get());
  for (int i = 0; i < 8; ++i) {
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    rt::send_frame(fd2.get(), MessageType::status, 1, nullptr, 0, p[0]);
    close(p[0]);
    close(p[1]);
  }
  EXPECT_TRUE(hung_up(fd2.get()));
  expect_healthy();
  // The daemon leaked none of them: its open descriptors stay few.
  const std::string fds = "/proc/" + std::to_string(daemon.pid()) + "/fd";
  int count = 0;
  for (DIR* d = opendir(fds.c_str()); d != nullptr;) {
    dirent* e = readdir(d);
    if (e == nullptr) {
      closedir(d);
      break;
    }
    ++count;
  }
  EXPECT_LT(count, 24);
}

// Seconds one `status` request takes from a fresh connection (connect, send, reply); -1 if it failed.
double status_round_trip(const DaemonProcess& d) {
  const int64_t t0 = tandem::now_ns();
  const auto j = testing::daemon_status(d);
  return j.is_null() ? -1 : static_cast<double>(tandem::now_ns() - t0) / 1e9;
}

// A connection that asks for thousands of status reports and never reads them used to stall the
// control thread (1 s per reply it could not send): new clients timed out after 10 s. Its replies now
// queue in a bounded buffer; past the bound the connection is dropped, and nobody else waits.
TEST_F(Protocol, ClientThatNeverReadsIsDroppedAndNobodyWaitsForIt) {
  auto flooder = connect();
  FrameHeader h;
  h.type = static_cast<uint16_t>(MessageType::status);
  std::vector<FrameHeader> burst(4000, h);
  const char* bytes = reinterpret_cast<const char*>(burst.data());
  size_t sent = 0;
  const int64_t until = tandem::now_ns() + 2'000'000'000;
  while (sent < burst.size() * sizeof h && tandem::now_ns() < until) {
    const ssize_t n = send(flooder.get(), bytes + sent, burst.size() * sizeof h - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) sent += static_cast<size_t>(n);
    if (n < 0 && errno != EAGAIN) break;  // dropped already
    if (n < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    const double t = status_round_trip(daemon);
    ASSERT_GE(t, 0) << "status failed while a client does not read";
    worst = std::max(worst, t);
  }
  EXPECT_LT(worst, 0.5) << "the control plane answers others at once";
  EXPECT_TRUE(hung_up(flooder.get())) << "the client that does not read is dropped";
  expect_healthy();
}

TEST(ControlPlane, ConnectionsThatNeverSayHelloTimeOutAndLockNobodyOut) {
  DaemonProcess d("[limits]\nhello_timeout_ms = 500\n");
  std::vector<rt::UniqueFd> idle;
  for (int i = 0; i < 300; ++i) idle.emplace_back(d.connect_raw());  // never a hello
  // A real client gets in at once: the oldest idle connections make room for it.
  const int64_t t0 = tandem::now_ns();
  {
    auto rt = d.open();
    ASSERT_TRUE(rt);
    EXPECT_LT(static_cast<double>(tandem::now_ns() - t0) / 1e9, 1.0);
  }
  // Each idle connection is closed once its hello deadline passed.
  std::vector<pollfd> polls;
  for (auto& fd : idle) polls.push_back(pollfd{fd.get(), POLLRDHUP, 0});
  int closed = 0;
  for (const int64_t until = tandem::now_ns() + 3'000'000'000; tandem::now_ns() < until;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    poll(polls.data(), polls.size(), 0);
    closed = static_cast<int>(std::count_if(polls.begin(), polls.end(), [](const pollfd& p) {
      return (p.revents & (POLLRDHUP | POLLHUP)) != 0;
    }));
    if (closed == 300) break;
  }
  EXPECT_EQ(closed, 300);
}

TEST(ControlPlane, ConnectionsPerUidAreLimited) {
  DaemonProcess d("[limits]\nconnections_per_uid = 4\nhello_timeout_ms = 10000\n");
  std::vector<std::unique_ptr<client::Runtime>> sessions;
  for (int i = 0; i < 3; ++i) sessions.push_back(d.open());
  // A fourth connection that never says hello holds the last place ...
  rt::UniqueFd idle(d.connect_raw());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // ... until a client that does say hello needs it.
  sessions.push_back(d.open());
  ASSERT_TRUE(sessions.back());
  EXPECT_TRUE(Protocol::hung_up(idle.get())) << "the idle connection made room";
  client::RuntimeOptions o;
  o.socket_path = d.socket();
  auto fifth = client::Runtime::open(o);
  EXPECT_EQ(fifth.status(), Status::limit_exceeded);
  EXPECT_NE(fifth.message().find("connections"), std::string::npos) << fifth.message();
  sessions.pop_back();
  EXPECT_TRUE(testing::eventually(d, 2, [](const nlohmann::json& j) { return j["sessions"].size() == 3; }));
  auto again = client::Runtime::open(o);
  EXPECT_TRUE(again.ok()) << again.message();
}

TEST_F(Protocol, SocketIsPrivateAndForeignUsersAreRefused) {
  struct stat st;
  ASSERT_EQ(stat(daemon.socket().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  if (getuid() != 0) GTEST_SKIP() << "needs root to act as another user";
  auto as_nobody = [&]() -> int {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 2;
    rt::UniqueFd fd(daemon.connect_raw());
    return fd.valid() ? 1 : 0;  // mode 0600: connect() itself is denied
  };
  EXPECT_EQ(testing::join(testing::spawn(as_nobody)), 0);
  // Even when the socket is opened up, the daemon checks SO_PEERCRED against its allow list.
  ASSERT_EQ(chmod(daemon.directory().c_str(), 0711), 0);
  ASSERT_EQ(chmod(daemon.socket().c_str(), 0666), 0);
  auto refused = [&]() -> int {
    if (setgid(65534) != 0 || setuid(65534) != 0) return 2;
    rt::UniqueFd fd(daemon.connect_raw());
    if (!fd.valid()) return 3;
    auto r = rt::recv_frame(fd.get(), 3'000'000'000);
    return r.ok() && r.value().type() == MessageType::error &&
                   from_wire(r.value().prefix_as<abi::control::ErrorReply>().status) == Status::permission_denied
               ? 0
               : 4;
  };
  EXPECT_EQ(testing::join(testing::spawn(refused)), 0);
  chmod(daemon.socket().c_str(), 0600);
  expect_healthy();
}

}  // namespace
}  // namespace tandem
