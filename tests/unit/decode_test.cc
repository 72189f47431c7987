// Packet validation: every malformed field gets its status, and nothing outside the session's memory
// is touched.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "abi/ring.hpp"
#include "rt/completion.hpp"
#include "rt/decode.hpp"

#include <unistd.h>

namespace tandem::rt {
namespace {

// A session that owns exactly one region: [base, base + bytes), identity-mapped.
class OneRegion final : public AddressSpace {
 public:
  OneRegion(void* base, size_t bytes) : base_(reinterpret_cast<uintptr_t>(base)), bytes_(bytes) {}
  void* translate(uint64_t address, uint64_t bytes, bool) override {
    if (address < base_ || bytes > bytes_ || address - base_ > bytes_ - bytes) return nullptr;
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }

 private:
  uintptr_t base_;
  size_t bytes_;
};

class Decode : public ::testing::Test {
 protected:
  Decode() : memory(4096), space(memory.data(), memory.size() * sizeof(uint64_t)) {
    record = reinterpret_cast<tandem_completion_t*>(memory.data());
    reset_record(record);
    data = reinterpret_cast<int32_t*>(memory.data() + 8);  // 64 bytes in
  }
  uint64_t addr(const void* p) const { return reinterpret_cast<uintptr_t>(p); }
  tandem_packet_t accumulate(uint64_t address, uint64_t count) {
    tandem_packet_t p{};
    p.header = abi::make_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_ACCUMULATE);
    p.body.dispatch.workload = count * 4;
    p.body.dispatch.args[0] = address;
    p.body.dispatch.args[1] = count;
    p.completion = addr(record);
    p.user_data = 77;
    return p;
  }
  Decoded run(const tandem_packet_t& p) {
    Decoded d;
    decode_packet(p, space, local, 3, 4, d);
    return d;
  }
  void expect_reject(const tandem_packet_t& p, Status s) {
    Decoded d = run(p);
    EXPECT_EQ(d.kind, Decoded::Kind::reject);
    EXPECT_EQ(d.status, s);
    EXPECT_EQ(d.record, record);
  }

  std::vector<uint64_t> memory;
  OneRegion space;
  devices::LocalMemory local_memory{1 << 20};
  const devices::LocalMemory* local = &local_memory;
  tandem_completion_t* record;
  int32_t* data;
};

// A session in another process (tandemd): scatter-gather buffers are gathered from it, not translated.
class RemoteRegion final : public AddressSpace {
 public:
  explicit RemoteRegion(AddressSpace& inner) : inner_(inner), process_(std::make_shared<ProcessMemory>(getpid())) {}
  void* translate(uint64_t address, uint64_t bytes, bool write) override { return inner_.translate(address, bytes, write); }
  std::shared_ptr<const ProcessMemory> remote() const override { return process_; }

 private:
  AddressSpace& inner_;
  std::shared_ptr<const ProcessMemory> process_;
};

TEST_F(Decode, AccessMethodsPlaceTheBuffers) {
  // Zero-copy (the default) and copy: session memory, translated; the bytes count as host bytes.
  tandem_packet_t p = accumulate(addr(data), 16);
  for (uint32_t method : {TANDEM_ACCESS_ZERO_COPY, TANDEM_ACCESS_COPY}) {
    p.flags = TANDEM_FLAG_ACCESS(method);
    Decoded d = run(p);
    ASSERT_EQ(d.kind, Decoded::Kind::dispatch) << method;
    EXPECT_EQ(d.access.method, method);
    EXPECT_EQ(d.access.bytes_in, 64u);
    EXPECT_EQ(d.call.buffers[0], data);
  }
  // Scatter-gather reaches any memory of the client: in place in the embedded runtime, page by page.
  std::vector<int32_t> anywhere(3000, 1);
  p = accumulate(addr(anywhere.data()), anywhere.size());
  p.flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_SCATTER_GATHER);
  IdentityAddressSpace embedded;
  Decoded sg;
  decode_packet(p, embedded, local, 3, 4, sg);
  ASSERT_EQ(sg.kind, Decoded::Kind::dispatch);
  EXPECT_EQ(sg.call.buffers[0], anywhere.data()) << "no process boundary: the device reads the pages in place";
  EXPECT_EQ(sg.access.pages, ProcessMemory::pages(addr(anywhere.data()), 12000));
  EXPECT_GE(sg.access.pages, 3u);
  EXPECT_EQ(sg.remote_count, 0u);
  // ... and from the client's process under tandemd: recorded for the mover, not translated.
  RemoteRegion remote(space);
  Decoded r;
  decode_packet(p, remote, local, 3, 4, r);
  ASSERT_EQ(r.kind, Decoded::Kind::dispatch);
  ASSERT_EQ(r.remote_count, 1u);
  EXPECT_EQ(r.remote[0].address, addr(anywhere.data()));
  EXPECT_EQ(r.remote[0].bytes, 12000u);
  EXPECT_FALSE(r.remote[0].write);
  EXPECT_EQ(r.call.buffers[0], nullptr);
  // Zero-copy of memory outside the session: a fault, as before.
  p.flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_ZERO_COPY);
  expect_reject(p, Status::translation_fault);
  // A scatter-gather range that is no user-space address at all.
  p = accumulate(uint64_t{1} << 50, 16);
  p.flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_SCATTER_GATHER);
  expect_reject(p, Status::translation_fault);
  // Unknown methods are invalid packets.
  for (uint32_t method = TANDEM_ACCESS_COUNT_; method < 8; ++method) {
    p = accumulate(addr(data), 16);
    p.flags = TANDEM_FLAG_ACCESS(method);
    expect_reject(p, Status::invalid_packet);
  }
}

TEST_F(Decode, DeviceAddressesTranslateOnlyForTheirOwner) {
  const uint64_t mine = local_memory.alloc(3, 4096).value();
  const uint64_t theirs = local_memory.alloc(9, 4096).value();
  tandem_packet_t p = accumulate(mine + 64, 16);
  p.flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_DEVICE_LOCAL);
  Decoded d = run(p);
  ASSERT_EQ(d.kind, Decoded::Kind::dispatch);
  EXPECT_EQ(d.call.buffers[0], static_cast<char*>(local_memory.translate(3, mine, 4096)) + 64);
  EXPECT_EQ(d.access.local_bytes, 64u);
  EXPECT_EQ(d.access.host_bytes(), 0u);
  expect_reject(accumulate(theirs, 16), Status::translation_fault);        // another session's buffer
  expect_reject(accumulate(mine + 4096 - 32, 16), Status::translation_fault);  // runs past the buffer's end
  expect_reject(accumulate(TANDEM_DEVICE_ADDRESS(4000, 0), 16), Status::translation_fault);  // no such buffer
  // A job that names its buffers device-local but gives a host address.
  p = accumulate(addr(data), 16);
  p.flags = TANDEM_FLAG_ACCESS(TANDEM_ACCESS_DEVICE_LOCAL);
  expect_reject(p, Status::access_unsupported);
  // A runtime without device-local memory: a device address names nothing.
  Decoded none;
  decode_packet(accumulate(mine, 16), space, nullptr, 3, 4, none);
  EXPECT_EQ(none.status, Status::translation_fault);
  // Freed: it no longer translates.
  ASSERT_EQ(local_memory.free(3, mine), Status::ok);
  expect_reject(accumulate(mine, 16), Status::translation_fault);
  EXPECT_EQ(local_memory.free(3, theirs), Status::invalid_argument) << "not the owner";
}

TEST_F(Decode, ValidDispatchBecomesAJobWithTranslatedBuffers) {
  Decoded d = run(accumulate(addr(data), 16));
  ASSERT_EQ(d.kind, Decoded::Kind::dispatch);
  EXPECT_EQ(d.job.function, TANDEM_FN_ACCUMULATE);
  EXPECT_EQ(d.job.workload, 64u);
  EXPECT_EQ(d.job.session, 3u);
  EXPECT_EQ(d.job.ring, 4u);
  EXPECT_EQ(d.job.tag, 77u);
  EXPECT_EQ(d.job.completion, addr(record));
  EXPECT_EQ(d.call.buffers[0], data);
}

TEST_F(Decode, CompletionRecordOutsideTheSessionOrMisalignedIsDropped) {
  tandem_packet_t p = accumulate(addr(data), 4);
  tandem_completion_t foreign;
  p.completion = addr(&foreign);
  EXPECT_EQ(run(p).kind, Decoded::Kind::drop);
  p.completion = addr(record) + 4;
  EXPECT_EQ(run(p).kind, Decoded::Kind::drop);
  p.completion = addr(memory.data()) + memory.size() * 8 - 16;  // record would run past the region
  EXPECT_EQ(run(p).kind, Decoded::Kind::drop);
  p.completion = 0;  // fire and forget is fine
  EXPECT_EQ(run(p).kind, Decoded::Kind::dispatch);
}

TEST_F(Decode, MalformedHeaderTypeFlagsAndFunction) {
  tandem_packet_t p = accumulate(addr(data), 4);
  p.header |= 1u << 12;  // reserved bit
  expect_reject(p, Status::invalid_packet);
  p = accumulate(addr(data), 4);
  p.header = (p.header & ~TANDEM_HEADER_TYPE_MASK) | 9;  // unknown type
  expect_reject(p, Status::invalid_packet);
  p = accumulate(addr(data), 4);
  p.flags = 1u << 7;  // unknown flag
  expect_reject(p, Status::invalid_packet);
  p = accumulate(addr(data), 4);
  p.header = abi::make_header(TANDEM_PACKET_DISPATCH, 200);
  expect_reject(p, Status::unknown_function);
}

TEST_F(Decode, WorkloadMustMatchTheArguments) {
  tandem_packet_t p = accumulate(addr(data), 4);
  p.body.dispatch.workload = 1000;  // a client claiming a different size for the monitor
  expect_reject(p, Status::invalid_packet);
  p = accumulate(addr(data), uint64_t{1} << 62);  // absurd element count
  expect_reject(p, Status::invalid_packet);
}

TEST_F(Decode, BuffersOutsideTheSessionFaultWithoutBeingTouched) {
  std::vector<int32_t> foreign(16, 5);
  expect_reject(accumulate(addr(foreign.data()), 16), Status::translation_fault);
  const uint64_t room = memory.size() * 8 - 64;                         // bytes from data to the end
  expect_reject(accumulate(addr(data), room / 4 + 1), Status::translation_fault);  // runs past the end
  EXPECT_EQ(run(accumulate(addr(data), room / 4)).kind, Decoded::Kind::dispatch);
  expect_reject(accumulate(0, 4), Status::translation_fault);
  EXPECT_EQ(run(accumulate(0, 0)).kind, Decoded::Kind::dispatch) << "empty input needs no buffer";
}

TEST_F(Decode, IndirectArgumentBlock) {
  uint64_t* block = memory.data() + 100;
  block[0] = addr(data);
  block[1] = 8;
  tandem_packet_t p = accumulate(0, 0);
  p.flags = TANDEM_FLAG_ARGS_INDIRECT;
  p.body.dispatch.workload = 32;
  p.body.dispatch.args[0] = addr(block);
  p.body.dispatch.args[1] = 16;
  Decoded d = run(p);
  ASSERT_EQ(d.kind, Decoded::Kind::dispatch);
  EXPECT_EQ(d.call.args[1], 8u);
  EXPECT_EQ(d.call.buffers[0], data);
  p.body.dispatch.args[1] = 12;  // not whole words
  expect_reject(p, Status::invalid_packet);
  p.body.dispatch.args[1] = 8 * (TANDEM_MAX_ARG_WORDS + 1);  // too many words
  expect_reject(p, Status::invalid_packet);
  p.body.dispatch.args[1] = 16;
  p.body.dispatch.args[0] = addr(block) + 3;  // misaligned block
  expect_reject(p, Status::invalid_packet);
  std::vector<uint64_t> foreign{addr(data), 8};
  p.body.dispatch.args[0] = addr(foreign.data());
  expect_reject(p, Status::translation_fault);
  p.body.dispatch.args[0] = addr(block);
  p.body.dispatch.args[1] = 8;  // one word: accumulate needs two
  expect_reject(p, Status::invalid_packet);
}

TEST_F(Decode, DemandOnlyPacketCarriesNoWork) {
  tandem_packet_t p = accumulate(0xdead, 1 << 20);
  p.flags = TANDEM_FLAG_DEMAND_ONLY;
  Decoded d = run(p);
  ASSERT_EQ(d.kind, Decoded::Kind::dispatch);
  EXPECT_EQ(d.job.workload, 0u);
  EXPECT_EQ(d.job.flags, uint32_t{TANDEM_FLAG_DEMAND_ONLY});
}

TEST_F(Decode, BarrierDependencies) {
  auto* deps = reinterpret_cast<tandem_completion_t*>(memory.data() + 200);
  for (int i = 0; i < 3; ++i) reset_record(&deps[i]);
  complete_record(&deps[1], Status::ok, 0, 0, 0, 0);
  complete_record(&deps[2], Status::device_error, 0, 0, 0, 0);
  tandem_packet_t p{};
  p.header = abi::make_header(TANDEM_PACKET_BARRIER_AND, 0, true);
  p.body.barrier.deps[0] = addr(&deps[0]);
  p.body.barrier.deps[2] = addr(&deps[1]);
  p.body.barrier.deps[4] = addr(&deps[2]);
  p.completion = addr(record);
  Decoded d = run(p);
  ASSERT_EQ(d.kind, Decoded::Kind::barrier);
  EXPECT_EQ(d.barrier.dep_state[0], engine::DepState::pending);
  EXPECT_EQ(d.barrier.dep_state[1], engine::DepState::unused);
  EXPECT_EQ(d.barrier.dep_state[2], engine::DepState::done_ok);
  EXPECT_EQ(d.barrier.dep_state[4], engine::DepState::done_failed);
  EXPECT_EQ(d.barrier.deps[0], addr(&deps[0]));

  tandem_completion_t foreign;
  p.body.barrier.deps[1] = addr(&foreign);
  expect_reject(p, Status::translation_fault);
  p.body.barrier.deps[1] = addr(&deps[0]) + 2;
  expect_reject(p, Status::translation_fault);
  p.body.barrier.deps[1] = 0;
  p.flags = TANDEM_FLAG_ARGS_INDIRECT;
  expect_reject(p, Status::invalid_packet);
  p.flags = 0;
  p.header = abi::make_header(TANDEM_PACKET_BARRIER_AND, 5, true);  // barriers name no function
  expect_reject(p, Status::invalid_packet);
}

TEST_F(Decode, CancelNamesItsTargetByTheTranslatedRecord) {
  auto* target = reinterpret_cast<tandem_completion_t*>(memory.data() + 300);
  tandem_packet_t p{};
  p.header = abi::make_header(TANDEM_PACKET_CANCEL, 0);
  p.body.cancel.target = addr(target);
  p.completion = addr(record);
  p.user_data = 9;
  Decoded d = run(p);
  ASSERT_EQ(d.kind, Decoded::Kind::cancel);
  EXPECT_EQ(d.cancel_target, addr(target)) << "the key a dispatch naming this record gets";
  EXPECT_EQ(d.record, record);
  EXPECT_EQ(d.job.tag, 9u);
  EXPECT_EQ(d.job.session, 3u);

  Decoded job = run(accumulate(addr(data), 4));
  p.body.cancel.target = addr(record);
  EXPECT_EQ(run(p).cancel_target, job.job.completion) << "cancel and dispatch agree on the key";

  tandem_completion_t foreign;
  p.body.cancel.target = addr(&foreign);
  expect_reject(p, Status::translation_fault);
  p.body.cancel.target = addr(target) + 4;  // misaligned
  expect_reject(p, Status::translation_fault);
  p.body.cancel.target = 0;
  expect_reject(p, Status::invalid_packet);
  p.body.cancel.target = addr(target);
  p.body.cancel.reserved[2] = 1;
  expect_reject(p, Status::invalid_packet);
  p.body.cancel.reserved[2] = 0;
  p.flags = TANDEM_FLAG_DEMAND_ONLY;
  expect_reject(p, Status::invalid_packet);
  p.flags = 0;
  p.header = abi::make_header(TANDEM_PACKET_CANCEL, TANDEM_FN_ACCUMULATE);  // a cancel names no function
  expect_reject(p, Status::invalid_packet);
  p.header = abi::make_header(TANDEM_PACKET_CANCEL, 0);
  p.completion = 0;  // fire and forget: allowed, nobody learns the answer
  EXPECT_EQ(run(p).kind, Decoded::Kind::cancel);
}

}  // namespace
}  // namespace tandem::rt
