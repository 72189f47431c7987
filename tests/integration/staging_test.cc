// Buffers the dispatcher gathers from a client's process (scatter-gather, and PHASE/V demand paging of
// memory outside the session's windows) reach the device in a staging block. Each must keep the
// alignment its caller gave it: issue 12's failure was a matmul job whose int32 output, packed right
// after an odd count of int16s, lay 2 bytes off (UBSan stopped tandemd; x86 silently tolerates it).
// The client here is this very process (process_vm_readv of our own pid), so it runs in any build.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "abi/ring.hpp"
#include "devices/completion_inbox.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/matmul_ref.hpp"
#include "rt/address_space.hpp"
#include "rt/completion.hpp"
#include "rt/dispatcher.hpp"
#include "rt/mover.hpp"

namespace tandem {
namespace {

using devices::DeviceCompletion;
using devices::DeviceJob;

// Runs matmul with the real kernel on whatever pointers the dispatcher hands it, and records them.
class RecordingDevice final : public devices::Device {
 public:
  RecordingDevice() {
    info_.kind = "recording";
    info_.name = "recording";
    info_.description = "test device: runs the kernel in place, records its buffer pointers";
    info_.slots = 1;
    info_.loadable.set(TANDEM_FN_MATMUL);
    info_.models[TANDEM_FN_MATMUL].throughput = 1e9;
  }
  const devices::DeviceInfo& info() const override { return info_; }
  void configure(uint32_t, uint16_t) override {}
  void submit(uint32_t slot, const DeviceJob& job) override {
    {
      std::lock_guard lock(mutex_);
      seen_.push_back(job.call.buffers);
    }
    DeviceCompletion c;
    c.token = job.token;
    c.slot = slot;
    c.value = funcs::find_function(job.call.function)->run_accel(job.call, 0, job.call.workload);
    inbox_.push(c);
  }
  void poll(int64_t, std::vector<DeviceCompletion>& out) override { inbox_.take(out); }
  int64_t next_deadline() const override { return INT64_MAX; }
  const uint32_t* wake_word() const override { return inbox_.wake_word(); }

  std::vector<std::array<void*, funcs::kMaxBuffers>> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  devices::DeviceInfo info_;
  devices::CompletionInbox inbox_;
  std::mutex mutex_;
  std::vector<std::array<void*, funcs::kMaxBuffers>> seen_;
};

// tandemd's view of a client, with this process as the client: one window (the completion record,
// reached in place) and every other page only through the process's memory.
class ClientMemory final : public rt::AddressSpace {
 public:
  explicit ClientMemory(const tandem_completion_t* record)
      : record_(reinterpret_cast<uintptr_t>(record)), process_(std::make_shared<rt::ProcessMemory>(getpid())) {}
  void* translate(uint64_t address, uint64_t bytes, bool) override {
    if (address < record_ || address + bytes > record_ + sizeof(tandem_completion_t)) return nullptr;
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }
  std::shared_ptr<const rt::ProcessMemory> remote() const override { return process_; }

 private:
  uintptr_t record_;
  std::shared_ptr<const rt::ProcessMemory> process_;
};

struct Rig {
  Rig() {
    auto dev = std::make_unique<RecordingDevice>();
    device = dev.get();
    std::vector<std::unique_ptr<devices::Device>> devices;
    devices.push_back(std::move(dev));
    engine::EngineConfig ec;
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) ec.known.set(fn->id);
    dispatcher = std::make_unique<rt::Dispatcher>(ec, std::move(devices), rt::DispatcherOptions{});
    EXPECT_TRUE(dispatcher->preload(0, TANDEM_FN_MATMUL));
    dispatcher->start();
    record = static_cast<tandem_completion_t*>(std::aligned_alloc(alignof(tandem_completion_t), sizeof *record));
    session = dispatcher->open_session(std::make_shared<ClientMemory>(record));
    const size_t bytes = TANDEM_RING_BYTES(kCapacity);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ring = std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
    abi::format_ring(p, bytes, kCapacity, 0);
    EXPECT_TRUE(dispatcher->attach_ring(session, p, kCapacity, ring).ok());
    producer = abi::RingProducer(p);
  }
  ~Rig() {
    dispatcher->stop();
    std::free(record);
  }

  Status matmul(const int16_t* a, const int16_t* b, int32_t* c, uint32_t m, uint32_t k, uint32_t n, uint8_t method) {
    rt::reset_record(record);
    const uint64_t index = producer.reserve();
    tandem_packet_t& p = producer.packet(index);
    p.flags = TANDEM_FLAG_ACCESS(method);
    p.body.dispatch.workload = uint64_t{m} * n * std::max<uint32_t>(k, 1);
    p.body.dispatch.args[0] = reinterpret_cast<uintptr_t>(a);
    p.body.dispatch.args[1] = reinterpret_cast<uintptr_t>(b);
    p.body.dispatch.args[2] = reinterpret_cast<uintptr_t>(c);
    p.body.dispatch.args[3] = TANDEM_MATMUL_DIMS(m, k, n);
    p.user_data = 0;
    p.completion = reinterpret_cast<uintptr_t>(record);
    producer.submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_MATMUL, false));
    rt::WaitPolicy w;
    w.timeout_ns = 5'000'000'000;
    return rt::wait_record(record, w, nullptr);
  }

  static constexpr uint32_t kCapacity = 8;
  RecordingDevice* device = nullptr;
  std::unique_ptr<rt::Dispatcher> dispatcher;
  engine::SessionId session = 0;
  tandem_completion_t* record = nullptr;
  std::shared_ptr<void> ring;
  abi::RingProducer producer;
};

TEST(Staging, LayoutKeepsEachClientAddressOffsetWithinALineAndNeverOverlaps) {
  // Client addresses as a heap hands them out, with byte counts that leave the next buffer off its line.
  const rt::RemoteBuffer buffers[] = {{0, 0x6180000000a0, 1122, false},  // 17x33 int16
                                      {1, 0x619000000312, 594, false},   // 33x9 int16, 2 mod 4
                                      {2, 0x61a000000044, 612, true},    // 17x9 int32
                                      {3, 0x7f0000000fff, 1, true}};
  uint64_t offsets[4] = {};
  const uint64_t size = rt::staging_layout(buffers, offsets);
  uint64_t end = 0;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(offsets[i] % rt::kStagingLine, buffers[i].address % rt::kStagingLine) << i;
    EXPECT_GE(offsets[i], end) << i;                  // after the previous buffer
    EXPECT_LT(offsets[i], end + rt::kStagingLine) << i;  // and no further than a line on
    end = offsets[i] + buffers[i].bytes;
  }
  EXPECT_EQ(size, end);
}

// Every job's buffers, as the device got them, sit at the client's offset within a line (so at least as
// aligned as the client's, which the function checked), and the outputs scattered back are right.
TEST(Staging, GatheredMatmulBuffersKeepTheirAlignmentOnTheDevice) {
  Rig rig;
  // m x k odd puts B (and k x n odd puts C) two bytes past a 4-byte boundary when packed end to end.
  const std::tuple<uint32_t, uint32_t, uint32_t> sizes[] = {{2, 33, 9}, {17, 33, 9}, {3, 5, 7}, {1, 1, 1}, {5, 3, 4}};
  std::mt19937_64 rng(12);
  size_t jobs = 0;
  for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
    ASSERT_EQ(rig.dispatcher->set_address_mode(rig.session, mode), Status::ok);
    // AISLE reaches the heap by scatter-gather; PHASE/V faults the same pages in for a zero-copy job.
    const uint8_t method = mode == TANDEM_ADDRESS_PHASEV ? TANDEM_ACCESS_ZERO_COPY : TANDEM_ACCESS_SCATTER_GATHER;
    for (auto [m, k, n] : sizes) {
      const std::string what = std::string(mode == TANDEM_ADDRESS_PHASEV ? "phasev " : "sg ") + std::to_string(m) +
                               "x" + std::to_string(k) + "x" + std::to_string(n);
      std::vector<int16_t> a(size_t{m} * k), b(size_t{k} * n);
      std::vector<int32_t> c(size_t{m} * n, -1), expected(size_t{m} * n);
      for (int16_t& v : a) v = static_cast<int16_t>(rng());
      for (int16_t& v : b) v = static_cast<int16_t>(rng());
      ASSERT_EQ(funcs::ref::matmul(a, b, expected, m, k, n), Status::ok);
      ASSERT_EQ(rig.matmul(a.data(), b.data(), c.data(), m, k, n, method), Status::ok) << what;
      EXPECT_EQ(c, expected) << what;
      const auto seen = rig.device->seen();
      ASSERT_EQ(seen.size(), ++jobs) << what;
      const void* client[] = {a.data(), b.data(), c.data()};
      for (size_t i = 0; i < 3; ++i) {
        const auto got = reinterpret_cast<uintptr_t>(seen.back()[i]);
        EXPECT_NE(got, reinterpret_cast<uintptr_t>(client[i])) << what << ": buffer " << i << " was not staged";
        EXPECT_EQ(got % rt::kStagingLine, reinterpret_cast<uintptr_t>(client[i]) % rt::kStagingLine)
            << what << ": buffer " << i;
      }
      EXPECT_EQ(reinterpret_cast<uintptr_t>(seen.back()[2]) % alignof(int32_t), 0u) << what;
    }
  }
}

}  // namespace
}  // namespace tandem
