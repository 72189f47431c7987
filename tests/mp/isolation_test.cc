// One session attacks another: every attack fails with the right status and touches nothing.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include "client/daemon_runtime.hpp"
#include "mp_util.hpp"
#include "rt/completion.hpp"
#include "rt/shm.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;

class Isolation : public ::testing::Test {
 protected:
  void SetUp() override {
    victim = daemon.open();
    attacker = daemon.open();
    ASSERT_TRUE(victim && attacker);
    secret = static_cast<int32_t*>(victim->alloc(1024 * sizeof(int32_t)));
    for (int i = 0; i < 1024; ++i) secret[i] = 7;
    victim_record = static_cast<tandem_completion_t*>(victim->alloc(sizeof(tandem_completion_t)));
    rt::reset_record(victim_record);
    own = static_cast<int32_t*>(attacker->alloc(256 * sizeof(int32_t)));
    for (int i = 0; i < 256; ++i) own[i] = 1;
    record = static_cast<tandem_completion_t*>(attacker->alloc(sizeof(tandem_completion_t)));
  }
  // The attacker's accumulate job on [address, count).
  Status attack_accumulate(uint64_t address, uint64_t count) {
    rt::reset_record(record);
    const uint64_t args[2] = {address, count};
    EXPECT_EQ(attacker->default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, count * 4, record), Status::ok);
    rt::WaitPolicy p;
    p.timeout_ns = 5'000'000'000;
    return attacker->wait(record, p);
  }
  bool victim_untouched() const {
    for (int i = 0; i < 1024; ++i) {
      if (secret[i] != 7) return false;
    }
    return abi::load_acquire(victim_record->status) == TANDEM_PENDING;
  }

  DaemonProcess daemon;
  std::unique_ptr<client::Runtime> victim, attacker;
  int32_t* secret = nullptr;
  tandem_completion_t* victim_record = nullptr;
  int32_t* own = nullptr;
  tandem_completion_t* record = nullptr;
};

TEST_F(Isolation, ForeignAddressFaults) {
  // Same process, so the address is even valid here: only the session's regions decide.
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(secret), 16), Status::translation_fault);
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(own), 256), Status::ok);
  EXPECT_EQ(record->value, 256) << "its own memory works";
  EXPECT_TRUE(victim_untouched());
}

TEST_F(Isolation, LengthRunningPastARegionFaults) {
  // A 64 KiB region of its own: a length that runs past its end is outside the session, even where
  // the process's address space continues (the next page is mapped too).
  auto fd = rt::create_memfd("edge", 1 << 17, false);
  ASSERT_TRUE(fd.ok());
  auto* m = static_cast<char*>(mmap(nullptr, 1 << 17, PROT_READ | PROT_WRITE, MAP_SHARED, fd.value().get(), 0));
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(attacker->register_memory(m, 1 << 16, fd.value().get(), 0), Status::ok);
  auto* tail = reinterpret_cast<int32_t*>(m + (1 << 16) - 64);
  for (int i = 0; i < 16; ++i) tail[i] = 1;
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(tail), 16), Status::ok) << "up to the last byte";
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(tail), 17), Status::translation_fault) << "one past";
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(tail), uint64_t{1} << 38), Status::translation_fault);
  EXPECT_TRUE(victim_untouched());
  munmap(m, 1 << 17);
}

TEST_F(Isolation, UnregisteredMemoryFaults) {
  std::vector<int32_t> heap(64, 1);
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(heap.data()), 64), Status::translation_fault);
  EXPECT_EQ(attack_accumulate(0x1000, 4), Status::translation_fault);
  EXPECT_EQ(attack_accumulate(~uint64_t{0} - 3, 4), Status::translation_fault) << "wrapping range";
}

TEST_F(Isolation, ForgedCompletionRecordIsNeverWritten) {
  // A packet naming the victim's completion record: nobody of this session can be told, so it is
  // dropped; the victim's record stays PENDING. The C API refuses to send one (the record is not in
  // its session memory), so the attacker writes the packet into its ring itself.
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(own), 4};
  client::Queue& q = attacker->default_queue();
  EXPECT_FALSE(q.engine_writes(victim_record));
  uint64_t index;
  ASSERT_EQ(q.reserve(index), Status::ok);
  tandem_packet_t& p = q.packet(index);
  p.flags = 0;
  p.body.dispatch.workload = 16;
  for (uint32_t i = 0; i < TANDEM_INLINE_ARGS; ++i) p.body.dispatch.args[i] = i < 2 ? args[i] : 0;
  p.user_data = 0;
  p.completion = reinterpret_cast<uintptr_t>(victim_record);
  q.submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_ACCUMULATE, false));
  rt::reset_record(record);
  ASSERT_EQ(attacker->default_queue().dispatch(TANDEM_FN_NOP, nullptr, 0, 0, record), Status::ok);
  ASSERT_EQ(attacker->wait(record, {}), Status::ok);  // ring order: the forged packet was handled first
  EXPECT_TRUE(victim_untouched());
  auto status = testing::daemon_status(daemon);
  EXPECT_GE(status["dispatcher"]["dropped"].get<uint64_t>(), 1u);
}

TEST_F(Isolation, ForgedBarrierDependencyOnAnotherSessionFaults) {
  const tandem_completion_t* deps[1] = {victim_record};
  rt::reset_record(record);
  ASSERT_EQ(attacker->default_queue().barrier_and(deps, 1, record), Status::ok);
  EXPECT_EQ(attacker->wait(record, {}), Status::translation_fault);
  EXPECT_TRUE(victim_untouched());
}

TEST_F(Isolation, ForgedIdsInTheRingChangeNothing) {
  // The ring header's fields and a packet's spare words are the only places a client could forge an
  // id; the session comes from the connection, so none of it matters.
  auto q = attacker->create_queue(8);
  ASSERT_TRUE(q.ok());
  auto* shared_header = reinterpret_cast<tandem_ring_header_t*>(reinterpret_cast<char*>(&q.value()->packet(0)) -
                                                                TANDEM_RING_HEADER_BYTES);
  shared_header->k_ring_id = 0;             // the victim's ring, perhaps
  shared_header->k_capacity = 1u << 20;     // and a geometry that would reach past the mapping
  shared_header->k_packets_offset = 1u << 30;
  uint64_t index;
  ASSERT_EQ(q.value()->reserve(index), Status::ok);
  tandem_packet_t& p = q.value()->packet(index);
  p.flags = 0;
  p.body.dispatch.workload = 16;
  p.body.dispatch.args[0] = reinterpret_cast<uintptr_t>(secret);
  p.body.dispatch.args[1] = 4;
  p.body.dispatch.args[2] = 0;                               // a would-be "ASID" of the victim
  p.body.dispatch.args[3] = 0;
  p.user_data = 0;
  rt::reset_record(record);
  p.completion = reinterpret_cast<uintptr_t>(record);
  q.value()->submit(index, abi::make_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_ACCUMULATE));
  EXPECT_EQ(attacker->wait(record, {}), Status::translation_fault);
  EXPECT_TRUE(victim_untouched());
}

TEST_F(Isolation, OverlappingAndBogusRegistrationsAreRefused) {
  // Register a memfd at an address the arena already registered: overlap.
  auto fd = rt::create_memfd("attack", 1 << 16, false);
  ASSERT_TRUE(fd.ok());
  const uintptr_t page = reinterpret_cast<uintptr_t>(own) & ~uintptr_t{4095};
  EXPECT_EQ(attacker->register_memory(reinterpret_cast<void*>(page), 4096, fd.value().get(), 0),
            Status::invalid_argument);
  // Not a memfd: a pipe cannot be sealed, so it cannot back session memory (the library refuses it
  // before sending; the daemon's own refusal is tests/mp/protocol_test.cc's).
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  void* somewhere = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_EQ(attacker->register_memory(somewhere, 4096, p[0], 0), Status::invalid_argument);
  // Longer than the memfd: would fault in the daemon; refused up front.
  EXPECT_EQ(attacker->register_memory(somewhere, 1 << 20, fd.value().get(), 0), Status::invalid_argument);
  // Unaligned.
  EXPECT_EQ(attacker->register_memory(static_cast<char*>(somewhere) + 8, 4096, fd.value().get(), 0),
            Status::invalid_argument);
  close(p[0]);
  close(p[1]);
  munmap(somewhere, 4096);
}

TEST_F(Isolation, ShrinkingRegisteredMemoryIsForbidden) {
  // A client that could truncate its memfd under the daemon's mapping would crash the daemon (SIGBUS).
  auto fd = rt::create_memfd("shrink", 1 << 16, false);
  ASSERT_TRUE(fd.ok());
  void* m = mmap(nullptr, 1 << 16, PROT_READ | PROT_WRITE, MAP_SHARED, fd.value().get(), 0);
  ASSERT_NE(m, MAP_FAILED);
  ASSERT_EQ(attacker->register_memory(m, 1 << 16, fd.value().get(), 0), Status::ok);
  EXPECT_NE(ftruncate(fd.value().get(), 0), 0) << "sealed against shrinking";
  auto* data = static_cast<int32_t*>(m);
  for (int i = 0; i < 100; ++i) data[i] = 2;
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(data), 100), Status::ok);
  EXPECT_EQ(record->value, 200);
  EXPECT_EQ(attacker->unregister_memory(m), Status::ok);
  EXPECT_EQ(attack_accumulate(reinterpret_cast<uintptr_t>(data), 100), Status::translation_fault)
      << "unregistered memory is out of reach at once";
  munmap(m, 1 << 16);
}

TEST_F(Isolation, ForeignQueueAndRegionIdsAreUnknown) {
  // Queue and region ids are per connection: an attacker's request for the victim's ids fails.
  auto* dr = dynamic_cast<client::DaemonRuntime*>(attacker.get());
  ASSERT_NE(dr, nullptr);
  abi::control::DestroyQueue dq;
  dq.queue_id = 77;  // no queue of the attacker's session
  auto r1 = dr->request(abi::control::MessageType::destroy_queue, &dq, sizeof dq);
  EXPECT_EQ(r1.status(), Status::invalid_argument);
  abi::control::UnregisterMemory um;
  um.region_id = 12345;
  auto r2 = dr->request(abi::control::MessageType::unregister_memory, &um, sizeof um);
  EXPECT_EQ(r2.status(), Status::invalid_argument);
  EXPECT_TRUE(victim_untouched());
  // The victim still works.
  rt::WaitPolicy p;
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(secret), 1024};
  ASSERT_EQ(victim->default_queue().dispatch(TANDEM_FN_ACCUMULATE, args, 2, 4096, victim_record), Status::ok);
  EXPECT_EQ(victim->wait(victim_record, p), Status::ok);
  EXPECT_EQ(victim_record->value, 7 * 1024);
}

}  // namespace
}  // namespace tandem
