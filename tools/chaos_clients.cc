// The client processes of `tandem chaos`: correct clients that check every result through the public C
// API, and trouble-makers. Each runs until the board says stop or it is killed; everything it observes
// goes into its slot of the shared board at once, so a SIGKILL loses nothing already counted.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "abi/control.hpp"
#include "base/clock.hpp"
#include "chaos.hpp"
#include "rt/completion.hpp"
#include "rt/control_channel.hpp"
#include "rt/shm.hpp"
#include "tandem/tandem.h"

namespace tandem::tools::chaos {

namespace {

constexpr auto relaxed = std::memory_order_relaxed;
// A status the engine never writes: a consumed record is marked with it, so a second completion of the
// same job (which would overwrite it) is seen when the record is reused.
constexpr uint32_t kConsumed = 0xC0DEu;
constexpr int64_t kLostAfterNs = 10'000'000'000;  // a job not completed in 10 s while the daemon lives

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }
bool stopping(const Board& b) { return b.stop_clients.load(relaxed) != 0; }

int connect_raw(const Board& b) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  static_assert(sizeof b.socket <= sizeof addr.sun_path, "the board holds a socket path");
  std::memcpy(addr.sun_path, b.socket, sizeof b.socket);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// A session of the C API, opened until it works or the round ends.
class Session {
 public:
  Session(Board& b, ClientSlot& slot, bool correct) : board_(b), slot_(slot), correct_(correct) {}
  ~Session() { close_session(); }
  bool open() {
    while (!stopping(board_)) {
      tandem_options_t o;
      tandem_options_init(&o);
      o.socket_path = board_.socket;
      o.mode = static_cast<tandem_mode_t>(board_.mode.load(relaxed));
      o.alpha = 0.5;  // TANDEM_MODE_ALPHA's share; the other modes ignore it
      o.wait_mode = TANDEM_WAIT_SPIN_THEN_BLOCK;
      if (tandem_open(&o, &rt_) == TANDEM_OK) {
        if (correct_) slot_.connected.store(1, relaxed);
        return true;
      }
      pause_ms(20);  // the daemon is down or restarting
    }
    return false;
  }
  // A call returned DISCONNECTED: count it, remember when the streak began, and close.
  void lost_daemon() {
    slot_.disconnects.fetch_add(1, relaxed);
    slot_.last_disconnect_ns.store(tandem::now_ns(), relaxed);
    close_session();
  }
  void close_session() {
    if (correct_) slot_.connected.store(0, relaxed);
    tandem_close(rt_);
    rt_ = nullptr;
  }
  tandem_runtime_t* rt() const { return rt_; }

 private:
  Board& board_;
  ClientSlot& slot_;
  bool correct_;
  tandem_runtime_t* rt_ = nullptr;
};

// ---------------------------------------------------------------- correct clients

int high_level(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  Session s(b, slot, true);
  std::vector<int32_t> heap(1 << 16);  // not session memory: its access method moves it, still right
  while (s.open()) {
    constexpr size_t kMax = 1 << 18;
    auto* data = static_cast<int32_t*>(tandem_alloc(s.rt(), kMax * sizeof(int32_t)));
    if (data == nullptr) {
      // The daemon may have died during the allocation: that is a DISCONNECTED, not an error (an empty
      // call asks the runtime whether its session lives).
      if (tandem_work(s.rt(), 0) == TANDEM_DISCONNECTED) {
        s.lost_daemon();
        continue;
      }
      slot.other_errors.fetch_add(1, relaxed);
      s.close_session();
      pause_ms(50);
      continue;
    }
    for (uint64_t round = 0; !stopping(b); ++round) {
      const bool on_heap = rng() % 16 == 0;
      int32_t* buffer = on_heap ? heap.data() : data;
      const size_t n = on_heap ? heap.size() : 1 + rng() % kMax;
      const int32_t base = static_cast<int32_t>(rng() % 1000) - 500;
      int64_t expected = 0;
      for (size_t i = 0; i < n; ++i) expected += buffer[i] = base + static_cast<int32_t>(i % 4099);
      int64_t sum = 0;
      const bool work = rng() % 8 == 0;  // tandem_work has no value to check, only its status
      slot.in_call_since_ns.store(tandem::now_ns(), relaxed);
      const tandem_status_t st =
          work ? tandem_work(s.rt(), 20'000 + rng() % 200'000) : tandem_accumulate(s.rt(), buffer, n, &sum);
      slot.in_call_since_ns.store(0, relaxed);
      slot.calls.fetch_add(1, relaxed);
      if (st == TANDEM_DISCONNECTED) {
        s.lost_daemon();
        break;
      }
      if (st != TANDEM_OK) {
        slot.other_errors.fetch_add(1, relaxed);
      } else if (!work && sum != expected) {
        slot.wrong.fetch_add(1, relaxed);
      } else {
        slot.ok.fetch_add(1, relaxed);
      }
      if (rng() % 4 == 0) pause_ms(1);  // an application, not a CPU burner: the cores are shared
    }
  }
  return 0;
}

int low_level(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  constexpr uint32_t kWindow = 16, kSlice = 64;
  Session s(b, slot, true);
  while (s.open()) {
    tandem_queue_t* q = nullptr;
    auto* recs = static_cast<tandem_completion_t*>(tandem_alloc(s.rt(), kWindow * sizeof(tandem_completion_t)));
    auto* data = static_cast<int32_t*>(tandem_alloc(s.rt(), kWindow * kSlice * sizeof(int32_t)));
    if (recs == nullptr || data == nullptr || tandem_queue_create(s.rt(), 64, &q) != TANDEM_OK) {
      if (tandem_queue_create(s.rt(), 8, &q) == TANDEM_DISCONNECTED) {
        s.lost_daemon();
      } else {
        slot.other_errors.fetch_add(1, relaxed);
        s.close_session();
      }
      pause_ms(20);
      continue;
    }
    for (uint32_t w = 0; w < kWindow; ++w) abi::store_relaxed(recs[w].status, kConsumed);
    // Bad arguments fail their call alone: a size that overflows, descriptors that are no memfd.
    if (tandem_alloc(s.rt(), SIZE_MAX - rng() % 64) != nullptr) slot.other_errors.fetch_add(1, relaxed);
    const int bad_fd = rng() % 2 ? -1 : 1000 + static_cast<int>(rng() % 1000);
    if (tandem_register(s.rt(), data, 4096, bad_fd, 0) != TANDEM_INVALID_ARGUMENT) slot.other_errors.fetch_add(1, relaxed);
    int64_t expected[kWindow];
    bool alive = true;
    while (alive && !stopping(b)) {
      uint32_t sent = 0;
      for (uint32_t w = 0; w < kWindow; ++w, ++sent) {
        if (rt::record_status(&recs[w]) != kConsumed) slot.duplicated.fetch_add(1, relaxed);
        int32_t* slice = data + w * kSlice;
        const int32_t base = static_cast<int32_t>(rng() % 100000);
        expected[w] = 0;
        for (uint32_t i = 0; i < kSlice; ++i) expected[w] += slice[i] = base + static_cast<int32_t>(i * 7);
        tandem_completion_init(&recs[w]);
        const uint64_t args[2] = {reinterpret_cast<uintptr_t>(slice), kSlice};
        const tandem_status_t st = tandem_dispatch(q, TANDEM_FN_ACCUMULATE, args, 2, kSlice * 4, &recs[w]);
        if (st != TANDEM_OK) {
          if (st == TANDEM_DISCONNECTED) alive = false;
          else slot.other_errors.fetch_add(1, relaxed);
          abi::store_relaxed(recs[w].status, kConsumed);
          break;
        }
      }
      for (uint32_t w = 0; w < sent; ++w) {
        const int64_t t0 = tandem::now_ns();
        const int64_t paused0 = b.daemon_paused_ns.load(relaxed);
        slot.in_call_since_ns.store(t0, relaxed);
        const tandem_status_t st = tandem_wait(s.rt(), &recs[w], TANDEM_WAIT_SPIN_THEN_BLOCK, 20'000, kLostAfterNs);
        slot.in_call_since_ns.store(0, relaxed);
        const int64_t value = recs[w].value;
        switch (st) {
          case TANDEM_OK:
            slot.calls.fetch_add(1, relaxed);
            (value == expected[w] ? slot.ok : slot.wrong).fetch_add(1, relaxed);
            break;
          case TANDEM_QUEUE_FULL:
            slot.calls.fetch_add(1, relaxed);
            slot.queue_full.fetch_add(1, relaxed);
            break;
          case TANDEM_DISCONNECTED:
            alive = false;
            break;
          case TANDEM_TIMEOUT: {
            // Lost if the daemon had 10 s to answer (time it spent stopped does not count); else wait on.
            const int64_t waited = tandem::now_ns() - t0 - (b.daemon_paused_ns.load(relaxed) - paused0);
            if (waited >= kLostAfterNs) {
              slot.calls.fetch_add(1, relaxed);
              slot.lost.fetch_add(1, relaxed);
              abi::store_relaxed(recs[w].status, kConsumed);  // given up on: the next job reuses it
              continue;
            }
            break;
          }
          case TANDEM_DEVICE_ERROR:
          case TANDEM_NO_MEMORY:
            // A job the device failed has no fallback at this level: its status is the right answer
            // where faults are injected (a high-level call runs such a job's work on the CPU).
            slot.calls.fetch_add(1, relaxed);
            (b.device_faults.load(relaxed) != 0 ? slot.device_errors : slot.other_errors).fetch_add(1, relaxed);
            break;
          default:
            slot.calls.fetch_add(1, relaxed);
            slot.other_errors.fetch_add(1, relaxed);
        }
        if (!alive) break;
        if (st != TANDEM_TIMEOUT) abi::store_relaxed(recs[w].status, kConsumed);
        else --w;  // wait again for the same job
      }
    }
    tandem_queue_destroy(q);
    if (!alive) {
      s.lost_daemon();
    } else {
      s.close_session();
    }
  }
  return 0;
}

// ---------------------------------------------------------------- trouble-makers

int flooder(Board& b, ClientSlot& slot, std::mt19937_64&) {
  constexpr uint32_t kInFlight = 1536;  // more than a function queue holds
  Session s(b, slot, false);
  while (s.open()) {
    tandem_queue_t* q = nullptr;
    auto* recs = static_cast<tandem_completion_t*>(tandem_alloc(s.rt(), kInFlight * sizeof(tandem_completion_t)));
    constexpr uint64_t kElements = 1 << 16;  // 256 KiB jobs: the queue drains slowly enough to stay full
    auto* data = static_cast<int32_t*>(tandem_alloc(s.rt(), kElements * sizeof(int32_t)));
    if (recs == nullptr || data == nullptr || tandem_queue_create(s.rt(), 2048, &q) != TANDEM_OK) {
      s.close_session();
      pause_ms(50);
      continue;
    }
    const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), kElements};
    for (uint32_t i = 0; i < kInFlight; ++i) abi::store_relaxed(recs[i].status, uint32_t{TANDEM_OK});
    bool alive = true;
    while (alive && !stopping(b)) {
      for (uint32_t i = 0; i < kInFlight && alive; ++i) {
        const uint32_t st = rt::record_status(&recs[i]);
        if (st == TANDEM_PENDING) continue;
        if (st == TANDEM_QUEUE_FULL) slot.queue_full.fetch_add(1, relaxed);  // evidence the queue was full
        tandem_completion_init(&recs[i]);
        alive = tandem_dispatch(q, TANDEM_FN_ACCUMULATE, args, 2, kElements * 4, &recs[i]) == TANDEM_OK;
        slot.actions.fetch_add(1, relaxed);
      }
      // A dead daemon completes nothing: notice it (an empty call asks, at most every 50 ms).
      if (alive && tandem_work(s.rt(), 0) == TANDEM_DISCONNECTED) alive = false;
      pause_ms(2);  // a flood, not a busy loop: the machine's two cores are shared with the daemon
    }
    tandem_queue_destroy(q);
    s.close_session();
  }
  return 0;
}

int reserver(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  Session s(b, slot, false);
  while (s.open()) {
    tandem_queue_t* q = nullptr;
    if (tandem_queue_create(s.rt(), 8, &q) == TANDEM_OK) {
      uint64_t index;
      while (tandem_try_reserve(q, &index) == TANDEM_OK) slot.actions.fetch_add(1, relaxed);  // never published
    }
    for (int i = static_cast<int>(5 + rng() % 20); i > 0 && !stopping(b); --i) pause_ms(100);
    tandem_queue_destroy(q);
    s.close_session();
  }
  return 0;
}

int garbage_packets(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  Session s(b, slot, false);
  while (s.open()) {
    tandem_queue_t* q = nullptr;
    auto* recs = static_cast<tandem_completion_t*>(tandem_alloc(s.rt(), 64 * sizeof(tandem_completion_t)));
    if (recs == nullptr || tandem_queue_create(s.rt(), 64, &q) != TANDEM_OK) {
      s.close_session();
      pause_ms(50);
      continue;
    }
    for (int burst = 0; burst < 200 && !stopping(b); ++burst) {
      for (int i = 0; i < 16; ++i) {
        uint64_t index;
        if (tandem_try_reserve(q, &index) != TANDEM_OK) break;  // a garbage barrier may block the ring
        tandem_packet_t* p = tandem_packet_at(q, index);
        auto* words = reinterpret_cast<uint64_t*>(p);
        for (int w = 0; w < 8; ++w) words[w] = rng();
        tandem_completion_t* rec = &recs[rng() % 64];
        tandem_completion_init(rec);
        switch (rng() % 5) {  // where the record is: ours, misaligned, anywhere, none
          case 0: p->completion = reinterpret_cast<uintptr_t>(rec) + 1; break;
          case 1: p->completion = rng(); break;
          case 2: p->completion = 0; break;
          default: p->completion = reinterpret_cast<uintptr_t>(rec);
        }
        if (rng() % 2) p->flags = 0;
        if (rng() % 3 == 0) {  // plausible: a real function on a buffer of ours, wrong sizes or not
          p->body.dispatch.args[0] = reinterpret_cast<uintptr_t>(recs) + rng() % 4096;
          p->body.dispatch.args[1] = rng() % 512;
        }
        const auto type = static_cast<tandem_packet_type_t>(rng() % 5);
        const auto function = static_cast<uint16_t>(rng() % 3 == 0 ? rng() : rng() % 40);
        tandem_publish(q, index, tandem_header(type, function, static_cast<int>(rng() % 2)));
        slot.actions.fetch_add(1, relaxed);
      }
      pause_ms(2);
    }
    tandem_queue_destroy(q);
    s.close_session();
  }
  return 0;
}

int garbage_control(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  using abi::control::MessageType;
  while (!stopping(b)) {
    rt::UniqueFd fd(connect_raw(b));
    if (!fd.valid()) {
      pause_ms(50);
      continue;
    }
    if (rng() % 2) {
      abi::control::Hello h;
      h.abi_version = rng() % 4 == 0 ? static_cast<uint32_t>(rng()) : TANDEM_ABI_VERSION;
      rt::send_struct(fd.get(), MessageType::hello, 1, h);
    }
    for (int i = static_cast<int>(rng() % 12); i >= 0; --i) {
      std::vector<uint8_t> bytes(rng() % 96);
      for (auto& x : bytes) x = static_cast<uint8_t>(rng());
      const auto type = static_cast<MessageType>(rng() % 16);
      switch (rng() % 4) {
        case 0:  // raw garbage
          (void)send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
          break;
        case 1: {  // a well-framed message of any type, with a stray descriptor now and then
          int pipe_fds[2] = {-1, -1};
          const bool with_fd = rng() % 4 == 0 && pipe(pipe_fds) == 0;
          rt::send_frame(fd.get(), type, static_cast<uint32_t>(rng()), bytes.data(), bytes.size(),
                         with_fd ? pipe_fds[0] : -1);
          if (with_fd) {
            close(pipe_fds[0]);
            close(pipe_fds[1]);
          }
          break;
        }
        case 2: {  // a request of the right size with random contents (and, for memory, a memfd)
          const size_t size = abi::control::known_type(static_cast<uint16_t>(type))
                                  ? abi::control::payload_size(type) : SIZE_MAX;
          bytes.resize(size == SIZE_MAX ? 8 : size);
          rt::UniqueFd memfd;
          if (type == MessageType::register_memory) {
            if (auto m = rt::create_memfd("chaos", 4096, false)) memfd = std::move(m).value();
          }
          rt::send_frame(fd.get(), type, 9, bytes.data(), bytes.size(), memfd.get());
          break;
        }
        default: {  // a truncated frame
          abi::control::FrameHeader h;
          h.type = static_cast<uint16_t>(type);
          h.length = 64;
          (void)send(fd.get(), &h, sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
      }
      slot.actions.fetch_add(1, relaxed);
    }
    // Read what came back (or not), then go.
    char buf[4096];
    for (pollfd p{fd.get(), POLLIN, 0}; poll(&p, 1, static_cast<int>(rng() % 50)) == 1;) {
      if (recv(fd.get(), buf, sizeof buf, MSG_DONTWAIT) <= 0) break;
    }
  }
  return 0;
}

int non_reader(Board& b, ClientSlot& slot, std::mt19937_64&) {
  while (!stopping(b)) {
    rt::UniqueFd fd(connect_raw(b));
    if (!fd.valid()) {
      pause_ms(50);
      continue;
    }
    abi::control::FrameHeader h;
    h.type = static_cast<uint16_t>(abi::control::MessageType::status);
    std::vector<abi::control::FrameHeader> burst(4000, h);
    (void)send(fd.get(), burst.data(), burst.size() * sizeof h, MSG_NOSIGNAL | MSG_DONTWAIT);
    slot.actions.fetch_add(1, relaxed);
    // Never read: the daemon must drop us (then the next connection), not wait for us.
    for (int i = 0; i < 40 && !stopping(b); ++i) {
      pollfd p{fd.get(), POLLRDHUP, 0};
      if (poll(&p, 1, 50) == 1) break;
    }
  }
  return 0;
}

int idle_connector(Board& b, ClientSlot& slot, std::mt19937_64& rng) {
  while (!stopping(b)) {
    std::vector<rt::UniqueFd> idle;
    for (int i = static_cast<int>(4 + rng() % 12); i > 0; --i) {
      idle.emplace_back(connect_raw(b));
      slot.actions.fetch_add(1, relaxed);
    }
    for (int i = static_cast<int>(5 + rng() % 20); i > 0 && !stopping(b); --i) pause_ms(100);
  }
  return 0;
}

}  // namespace

CpuTimes cpu_times(const std::string& schedstat_path) {
  std::ifstream in(schedstat_path);
  CpuTimes t;
  int64_t ran = 0, waited = 0;
  if (in >> ran >> waited) t = CpuTimes{ran, waited};
  return t;
}

const char* role_name(Role role) {
  switch (role) {
    case Role::high_level: return "high-level";
    case Role::low_level: return "low-level";
    case Role::flooder: return "flooder";
    case Role::reserver: return "reserver";
    case Role::garbage_packets: return "garbage-packets";
    case Role::garbage_control: return "garbage-control";
    case Role::non_reader: return "non-reader";
    case Role::idle_connector: return "idle-connector";
    case Role::count_: break;
  }
  return "?";
}

int run_client(Role role, Board& board, ClientSlot& slot, uint64_t seed) {
  std::mt19937_64 rng(seed);
  switch (role) {
    case Role::high_level: return high_level(board, slot, rng);
    case Role::low_level: return low_level(board, slot, rng);
    case Role::flooder: return flooder(board, slot, rng);
    case Role::reserver: return reserver(board, slot, rng);
    case Role::garbage_packets: return garbage_packets(board, slot, rng);
    case Role::garbage_control: return garbage_control(board, slot, rng);
    case Role::non_reader: return non_reader(board, slot, rng);
    case Role::idle_connector: return idle_connector(board, slot, rng);
    case Role::count_: break;
  }
  return 2;
}

// The machine's own share of a probe's time: a one-byte round trip to a sibling process that does
// nothing else, taken just before and just after each probe (the cores are shared with other work;
// this tells the machine's scheduling delay from the daemon's).
int64_t echo_round_trip(int sock) {
  const int64_t t0 = tandem::now_ns();
  char c = 'p';
  if (write(sock, &c, 1) != 1 || read(sock, &c, 1) != 1) return -1;
  return tandem::now_ns() - t0;
}

constexpr int64_t kWakeUpsPerAnswer = 4;

// Time spent runnable but waiting for a CPU (the second field of /proc/.../schedstat, ns), summed over
// the threads a status answer passes through: tandemd's control thread (its main thread) and its
// dispatcher. -1 when the kernel does not say. A thread that consumes CPU waits its turn in the run
// queue, which an idle echo process (woken with a sleeper's credit) does not show; this is that wait.
int64_t run_queue_wait_ns(const std::string& stat_path) { return cpu_times(stat_path).waited_ns; }

int64_t status_path_cpu_wait_ns(pid_t daemon) {
  const std::string task_dir = "/proc/" + std::to_string(daemon) + "/task";
  DIR* dir = opendir(task_dir.c_str());
  if (dir == nullptr) return -1;
  int64_t total = 0;
  bool found = false;
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const std::string thread = task_dir + "/" + e->d_name;
    std::string name;
    std::getline(std::ifstream(thread + "/comm"), name);
    if (std::to_string(daemon) != e->d_name && name.rfind("tandem-dispatch", 0) != 0) continue;
    const int64_t waited = run_queue_wait_ns(thread + "/schedstat");
    if (waited < 0) continue;
    total += waited;
    found = true;
  }
  closedir(dir);
  return found ? total : -1;
}

// The prober's own and the daemon's status-path threads' waits for a CPU, together.
int64_t answer_cpu_wait_ns(pid_t daemon) {
  const int64_t own = run_queue_wait_ns("/proc/thread-self/schedstat");
  const int64_t theirs = status_path_cpu_wait_ns(daemon);
  return own < 0 || theirs < 0 ? -1 : own + theirs;
}

int run_prober(Board& board) {
  using abi::control::MessageType;
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return 3;
  const pid_t echo = fork();
  if (echo == 0) {
    close(pair[0]);
    for (char c; read(pair[1], &c, 1) == 1 && write(pair[1], &c, 1) == 1;) {
    }
    _exit(0);
  }
  close(pair[1]);
  rt::UniqueFd echo_sock(pair[0]);
  while (board.stop_probe.load(relaxed) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const uint64_t generation = board.daemon_generation.load(std::memory_order_acquire);
    if (board.daemon_unavailable.load(std::memory_order_acquire) != 0) continue;
    const pid_t daemon = board.daemon_pid.load(relaxed);
    const int64_t echo_ns = echo_round_trip(echo_sock.get());
    const int64_t cpu_wait0 = answer_cpu_wait_ns(daemon);
    const int64_t t0 = tandem::now_ns();
    bool answered = false;
    {
      rt::UniqueFd fd(connect_raw(board));
      if (fd.valid() && rt::send_frame(fd.get(), MessageType::status, 1, nullptr, 0) == Status::ok) {
        auto reply = rt::recv_frame(fd.get(), 2'000'000'000);
        answered = reply.ok() && reply.value().type() == MessageType::status_reply;
      }
    }
    const int64_t took = tandem::now_ns() - t0;
    const int64_t cpu_wait1 = answer_cpu_wait_ns(daemon);
    const int64_t cpu_wait = cpu_wait0 >= 0 && cpu_wait1 >= cpu_wait0 ? cpu_wait1 - cpu_wait0 : -1;
    const int64_t noise = std::max(echo_ns, echo_round_trip(echo_sock.get()));
    // Only a probe the daemon could have answered all along counts.
    if (board.daemon_unavailable.load(std::memory_order_acquire) != 0 ||
        board.daemon_generation.load(std::memory_order_acquire) != generation) {
      continue;
    }
    ProbeStats& p = board.probes[board.round.load(relaxed) % kMaxRounds];
    p.samples.fetch_add(1, relaxed);
    if (!answered) {
      p.failures.fetch_add(1, relaxed);
      continue;
    }
    p.sum_ns.fetch_add(took, relaxed);
    const int64_t limit = board.probe_limit_ns.load(relaxed);
    if (took > limit) p.over_limit.fetch_add(1, relaxed);
    // The machine's share of the answer: what its threads spent waiting for a CPU, where the kernel
    // says (schedstat); else four wake-ups (the control thread, the dispatcher there and back, the
    // prober) of the echo's delay of the moment.
    const int64_t machine = cpu_wait >= 0 ? cpu_wait : kWakeUpsPerAnswer * noise;
    if (took > limit + machine) p.over_limit_beyond_noise.fetch_add(1, relaxed);
    const auto raise = [](std::atomic<int64_t>& max, int64_t v) {
      for (int64_t m = max.load(relaxed); v > m && !max.compare_exchange_weak(m, v, relaxed);) {
      }
    };
    raise(p.max_ns, took);
    raise(p.echo_max_ns, noise);
    raise(p.cpu_wait_max_ns, cpu_wait);
  }
  echo_sock.reset();  // the echo process reads EOF and exits
  waitpid(echo, nullptr, 0);
  return 0;
}

}  // namespace tandem::tools::chaos
