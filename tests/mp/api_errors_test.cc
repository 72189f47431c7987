// Bad arguments to the C API fail that call alone, with a clear tandem_last_error(), and leave the
// session usable: allocation sizes that overflow or exceed the session's limit, descriptors that are
// not memfds. Embedded and through tandemd.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <vector>
#include <thread>
#include <cstring>
#include <atomic>
#include <string>

#include "mp_util.hpp"
#include "tandem/tandem.h"

namespace tandem {
namespace {

using testing::DaemonProcess;

struct Opened {
  tandem_runtime_t* rt = nullptr;
  ~Opened() { tandem_close(rt); }
};

void open_c(Opened& o, const DaemonProcess* d) {
  tandem_options_t options;
  tandem_options_init(&options);
  options.embedded = d == nullptr;
  if (d != nullptr) options.socket_path = d->socket().c_str();
  ASSERT_EQ(tandem_open(&options, &o.rt), TANDEM_OK) << tandem_last_error();
}

// The session still works: a queue, memory, a job.
void expect_usable(tandem_runtime_t* rt) {
  tandem_queue_t* q = nullptr;
  ASSERT_EQ(tandem_queue_create(rt, 8, &q), TANDEM_OK) << tandem_last_error();
  auto* rec = static_cast<tandem_completion_t*>(tandem_alloc(rt, sizeof(tandem_completion_t)));
  ASSERT_NE(rec, nullptr) << tandem_last_error();
  tandem_completion_init(rec);
  ASSERT_EQ(tandem_dispatch(q, TANDEM_FN_NOP, nullptr, 0, 0, rec), TANDEM_OK);
  EXPECT_EQ(tandem_wait(rt, rec, TANDEM_WAIT_SPIN_THEN_BLOCK, 20000, 5'000'000'000), TANDEM_OK);
  tandem_free(rt, rec);
  tandem_queue_destroy(q);
}

void expect_alloc_errors(tandem_runtime_t* rt, const char* limit_word) {
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 60, SIZE_MAX / 2 + 1}) {
    EXPECT_EQ(tandem_alloc(rt, bytes), nullptr) << bytes;
    const std::string message = tandem_last_error();
    EXPECT_NE(message.find("tandem_alloc"), std::string::npos) << message;
    EXPECT_NE(message.find(limit_word), std::string::npos) << message;
  }
  // The failures left nothing behind: two small allocations are distinct and usable.
  void* a = tandem_alloc(rt, 64);
  void* b = tandem_alloc(rt, 64);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  std::memset(a, 1, 64);
  std::memset(b, 2, 64);
  EXPECT_EQ(static_cast<unsigned char*>(a)[63], 1);
  tandem_free(rt, a);
  tandem_free(rt, b);
}

TEST(ApiErrors, AllocSizesThatOverflowReturnNullWithAMessageEmbedded) {
  Opened o;
  open_c(o, nullptr);
  expect_alloc_errors(o.rt, "bytes");
  expect_usable(o.rt);
}

TEST(ApiErrors, AllocSizesThatOverflowOrExceedTheLimitReturnNullUnderTheDaemon) {
  DaemonProcess d("[limits]\nregistered_mib_per_session = 64\n");
  Opened o;
  open_c(o, &d);
  expect_alloc_errors(o.rt, "limit");
  EXPECT_EQ(tandem_alloc(o.rt, 65u << 20), nullptr);
  EXPECT_NE(std::string(tandem_last_error()).find("64 MiB"), std::string::npos) << tandem_last_error();
  expect_usable(o.rt);
}

// A memfd region of `bytes`, mapped; fd -1 if that failed.
struct Region {
  int fd = -1;
  void* base = nullptr;
  size_t bytes = 0;
  explicit Region(size_t n, unsigned flags = MFD_CLOEXEC | MFD_ALLOW_SEALING) : bytes(n) {
    fd = memfd_create("tandem-test", flags);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(n)) != 0) return;
    base = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  }
  ~Region() {
    if (base != nullptr && base != MAP_FAILED) munmap(base, bytes);
    if (fd >= 0) close(fd);
  }
};

void expect_register_errors(tandem_runtime_t* rt) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Region good(4 * page);
  ASSERT_GE(good.fd, 0);
  const auto fails = [&](void* address, size_t bytes, int fd, uint64_t offset, const char* why) {
    EXPECT_EQ(tandem_register(rt, address, bytes, fd, offset), TANDEM_INVALID_ARGUMENT) << why;
    EXPECT_NE(std::string(tandem_last_error()).find("tandem_register"), std::string::npos)
        << why << ": " << tandem_last_error();
  };
  fails(good.base, good.bytes, -1, 0, "fd -1");
  fails(good.base, good.bytes, 9999, 0, "fd 9999, not open");
  const int pipe_fds[2] = {-1, -1};
  ASSERT_EQ(pipe(const_cast<int*>(pipe_fds)), 0);
  fails(good.base, good.bytes, pipe_fds[0], 0, "a pipe");
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  const int file = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  fails(good.base, good.bytes, file, 0, "a file that is not a memfd");
  close(file);
  Region unsealable(4 * page, MFD_CLOEXEC);  // no MFD_ALLOW_SEALING: the daemon could not seal it
  fails(unsealable.base, unsealable.bytes, unsealable.fd, 0, "a memfd that cannot be sealed");
  fails(good.base, 8 * page, good.fd, 0, "a range past the end of the memfd");
  fails(good.base, good.bytes, good.fd, page, "offset + bytes past the end");
  fails(static_cast<char*>(good.base) + 1, page, good.fd, 0, "an unaligned address");
  fails(good.base, page + 1, good.fd, 0, "an unaligned size");
  fails(good.base, page, good.fd, 1, "an unaligned offset");
  // The good region registers, works and unregisters.
  EXPECT_EQ(tandem_register(rt, good.base, good.bytes, good.fd, 0), TANDEM_OK) << tandem_last_error();
  EXPECT_EQ(tandem_unregister(rt, good.base), TANDEM_OK) << tandem_last_error();
}

TEST(ApiErrors, RegisterWithABadDescriptorFailsThatCallAloneEmbedded) {
  Opened o;
  open_c(o, nullptr);
  expect_register_errors(o.rt);
  expect_usable(o.rt);
}

// fd -1 made the daemon close the session; fd 9999 marked the client disconnected.
TEST(ApiErrors, RegisterWithABadDescriptorFailsThatCallAloneUnderTheDaemon) {
  DaemonProcess d;
  Opened o;
  open_c(o, &d);
  expect_register_errors(o.rt);
  expect_usable(o.rt);
  const auto status = testing::daemon_status(d);
  ASSERT_FALSE(status.is_null());
  EXPECT_EQ(status["sessions"].size(), 1u) << "the session lives on";
}

// Under tandemd the engine writes completion records only in session memory: a packet naming one
// elsewhere (a record on the stack) would never complete, so it is refused at once, with a message
// that says so, and the session carries on. (A record nothing completes waits for ever.)
TEST(ApiErrors, ARecordOutsideSessionMemoryIsRefusedUnderTheDaemon) {
  DaemonProcess d;
  Opened o;
  open_c(o, &d);
  ASSERT_STREQ(tandem_runtime_kind(o.rt), "daemon");
  tandem_queue_t* q = nullptr;
  ASSERT_EQ(tandem_queue_create(o.rt, 16, &q), TANDEM_OK) << tandem_last_error();
  tandem_completion_t on_stack;
  tandem_completion_init(&on_stack);
  const uint64_t units = 1000;
  EXPECT_EQ(tandem_dispatch(q, TANDEM_FN_WORK, &units, 1, units, &on_stack), TANDEM_INVALID_ARGUMENT);
  EXPECT_NE(std::string(tandem_last_error()).find("not in session memory"), std::string::npos) << tandem_last_error();
  EXPECT_EQ(tandem_barrier_and(q, nullptr, 0, &on_stack), TANDEM_INVALID_ARGUMENT);
  auto* rec = static_cast<tandem_completion_t*>(tandem_alloc(o.rt, sizeof(tandem_completion_t)));
  ASSERT_NE(rec, nullptr);
  tandem_completion_init(rec);
  EXPECT_EQ(tandem_cancel(q, rec, &on_stack), TANDEM_INVALID_ARGUMENT);
  EXPECT_EQ(tandem_dispatch(q, TANDEM_FN_WORK, &units, 1, units, rec), TANDEM_OK) << tandem_last_error();
  EXPECT_EQ(tandem_wait(o.rt, rec, TANDEM_WAIT_BLOCK, 0, 5'000'000'000), TANDEM_OK);
  EXPECT_EQ(rec->value, static_cast<int64_t>(units));
  tandem_free(o.rt, rec);
  tandem_queue_destroy(q);
  expect_usable(o.rt);
}

// Session memory under tandemd grows by chunks (a memfd each, registered with the daemon) and gives an
// emptied chunk back. Threads allocating and freeing blocks larger than a chunk at once, while another
// dispatches jobs whose records are checked against the session's memory, all succeed, and every
// chunk they added is gone afterwards (the daemon's region count is back where it was).
TEST(ApiErrors, SessionMemoryGrowsAndShrinksUnderConcurrentUse) {
  DaemonProcess d;
  Opened o;
  open_c(o, &d);
  void* first = tandem_alloc(o.rt, 64);  // the first chunk, which stays
  ASSERT_NE(first, nullptr);
  const auto regions = [&] {
    const nlohmann::json status = testing::daemon_status(d);  // kept: the loop reads into it
    for (const auto& s : status["sessions"]) return s["regions"].get<size_t>();
    return size_t{0};
  };
  const size_t before = regions();
  tandem_queue_t* q = nullptr;
  ASSERT_EQ(tandem_queue_create(o.rt, 64, &q), TANDEM_OK) << tandem_last_error();
  auto* rec = static_cast<tandem_completion_t*>(tandem_alloc(o.rt, sizeof(tandem_completion_t)));
  ASSERT_NE(rec, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> failures{0};
  std::thread dispatcher([&] {
    while (!stop.load()) {
      tandem_completion_init(rec);
      if (tandem_dispatch(q, TANDEM_FN_NOP, nullptr, 0, 0, rec) != TANDEM_OK ||
          tandem_wait(o.rt, rec, TANDEM_WAIT_SPIN_THEN_BLOCK, 20000, 5'000'000'000) != TANDEM_OK) {
        ++failures;
      }
    }
  });
  std::vector<std::thread> allocators;
  for (int t = 0; t < 3; ++t) {
    allocators.emplace_back([&, t] {
      for (int i = 0; i < 4; ++i) {
        const size_t bytes = (6u << 20) + static_cast<size_t>(t) * 4096;
        auto* p = static_cast<unsigned char*>(tandem_alloc(o.rt, bytes));
        if (p == nullptr) {
          ++failures;
          continue;
        }
        std::memset(p, t + 1, bytes);
        if (p[bytes - 1] != t + 1) ++failures;
        tandem_free(o.rt, p);
      }
    });
  }
  for (auto& a : allocators) a.join();
  stop.store(true);
  dispatcher.join();
  EXPECT_EQ(failures.load(), 0) << tandem_last_error();
  EXPECT_EQ(regions(), before) << "every chunk added was given back";
  tandem_free(o.rt, rec);
  tandem_free(o.rt, first);
  tandem_queue_destroy(q);
}

}  // namespace
}  // namespace tandem
