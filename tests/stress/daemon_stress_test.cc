// tandemd in this process (control thread + dispatcher thread) with several client threads, each its
// own session: jobs, memory registration and queue churn all at once. Under TSan this checks the
// daemon's two threads and the shared-memory protocol between the sessions and the dispatcher.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include "client/runtime.hpp"
#include "daemon/daemon.hpp"
#include "rt/completion.hpp"

namespace tandem {
namespace {

#ifdef TANDEM_TSAN
constexpr int kRounds = 40;
#else
constexpr int kRounds = 300;
#endif

TEST(DaemonStress, SessionsChurnWhileJobsRun) {
  char dir[] = "/tmp/tandem-stress-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  daemon::DaemonOptions options;
  options.socket_path = std::string(dir) + "/tandem.sock";
  options.config = config::load_config("");
  options.log = false;
  auto started = daemon::Daemon::start(options);
  ASSERT_TRUE(started.ok()) << started.message();
  daemon::Daemon& d = *started.value();
  std::atomic<bool> clients_done{false};
  std::thread server([&] {
    // Serve until the clients are done and the daemon has seen every one of them leave (bounded).
    for (int idle = 0; d.serve(20) && idle < 250;) {
      if (clients_done.load()) idle = d.connection_count() == 0 ? 250 : idle + 1;
    }
  });

  std::atomic<int> bad{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      client::RuntimeOptions o;
      o.socket_path = options.socket_path;
      o.mode = client::Mode::hw;
      for (int session = 0; session < 3; ++session) {  // sessions come and go
        auto rt = client::Runtime::open(o);
        if (!rt) {
          bad.fetch_add(1);
          return;
        }
        auto q = rt.value()->create_queue(16);
        auto* data = static_cast<int32_t*>(rt.value()->alloc(256 * sizeof(int32_t)));
        auto* recs = static_cast<tandem_completion_t*>(rt.value()->alloc(8 * sizeof(tandem_completion_t)));
        if (!q || data == nullptr || recs == nullptr) {
          bad.fetch_add(1);
          return;
        }
        for (int i = 0; i < 256; ++i) data[i] = c + 1;
        for (int r = 0; r < kRounds; ++r) {
          for (int k = 0; k < 8; ++k) {
            rt::reset_record(&recs[k]);
            const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), 256};
            if (q.value()->dispatch(TANDEM_FN_ACCUMULATE, args, 2, 1024, &recs[k]) != Status::ok) bad.fetch_add(1);
          }
          for (int k = 0; k < 8; ++k) {
            if (rt.value()->wait(&recs[k], {}) != Status::ok || recs[k].value != 256 * (c + 1)) bad.fetch_add(1);
          }
          if (r % 50 == 0) {  // memory churn: a chunk of its own, registered and unregistered
            void* big = rt.value()->alloc(5u << 20);
            rt.value()->free(big);
          }
        }
        rt.value()->free(recs);
        rt.value()->free(data);
      }
    });
  }
  for (auto& t : clients) t.join();
  clients_done = true;
  server.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(d.connection_count(), 0u);
  started.value().reset();
  rmdir(dir);
}

}  // namespace
}  // namespace tandem
