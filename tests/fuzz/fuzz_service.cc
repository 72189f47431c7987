// Fuzz target for the service-request ring (abi/service.hpp): the input is a script of producer and
// consumer operations interleaved with arbitrary writes into the shared memory (a client scribbling on
// its ring). The producer must never crash, hand out a slot twice, or lose one: whatever the memory
// says, its own bookkeeping stays consistent and every slot comes back.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "abi/service.hpp"

using namespace tandem;

namespace {

struct Input {
  const uint8_t* data;
  size_t size;
  size_t at = 0;
  bool more() const { return at < size; }
  uint8_t byte() { return at < size ? data[at++] : 0; }
  uint32_t word() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v = v << 8 | byte();
    return v;
  }
};

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{data, size};
  const uint32_t slots = 1 + in.byte() % 8;
  const size_t bytes = TANDEM_SERVICE_BYTES(slots);
  std::vector<uint64_t> memory(bytes / 8);
  void* base = memory.data();
  // A header of the input's own: validation must refuse whatever is not exactly a formatted ring.
  if (in.byte() & 1) {
    for (size_t i = 0; i < 16 && in.more(); ++i) static_cast<uint8_t*>(base)[i] = in.byte();
    const Status v = abi::validate_service_ring(base, bytes, slots);
    const auto* h = static_cast<const tandem_service_header_t*>(base);
    require(v != Status::ok || (h->k_magic == TANDEM_SERVICE_MAGIC && h->k_version == TANDEM_SERVICE_VERSION && h->k_slots == slots));
  }
  require(abi::format_service_ring(base, bytes, slots) == Status::ok);
  require(abi::validate_service_ring(base, bytes, slots) == Status::ok);
  abi::ServiceProducer producer(base, slots);
  abi::ServiceConsumer consumer(base, slots);
  std::vector<uint32_t> out;  // tickets the producer has out
  while (in.more()) {
    switch (in.byte() % 6) {
      case 0: {
        abi::ServiceRequest r;
        r.service = in.byte();
        r.args = {in.word(), in.word(), 0, 0};
        uint32_t ticket = 0;
        const bool posted = producer.post(r, ticket);
        require(posted == (out.size() < slots));
        if (posted) {
          require(ticket < slots);
          for (uint32_t t : out) require(t != ticket);  // never a slot that is out
          out.push_back(ticket);
        }
        break;
      }
      case 1: {
        if (out.empty()) break;
        const size_t i = in.byte() % out.size();
        uint64_t answer = 0;
        Status why = Status::ok;
        const auto got = producer.check(out[i], answer, why);
        if (got != abi::ServiceProducer::Check::pending) {
          require(got == abi::ServiceProducer::Check::answered || why == Status::service_failed);
          out.erase(out.begin() + static_cast<long>(i));
        }
        break;
      }
      case 2: {
        if (out.empty()) break;
        const size_t i = in.byte() % out.size();
        producer.cancel(out[i]);
        out.erase(out.begin() + static_cast<long>(i));
        break;
      }
      case 3:
        consumer.serve([](const abi::ServiceRequest& r, uint64_t& answer) {
          answer = r.args[0] ^ r.args[1];
          return r.service % 2 == 0 ? Status::ok : Status::unknown_function;
        });
        break;
      case 4: {  // the client writes anything anywhere in the ring
        const size_t offset = ((static_cast<size_t>(in.byte()) << 8 | in.byte()) % (bytes / 4)) * 4;
        const uint32_t value = in.word();
        std::memcpy(static_cast<char*>(base) + offset, &value, sizeof value);
        break;
      }
      case 5:
        producer.prepare_sleep();
        producer.wake_up();
        break;
    }
    require(producer.outstanding() == out.size());
  }
  for (uint32_t t : out) producer.cancel(t);
  require(producer.outstanding() == 0);
  // Every slot comes back.
  uint32_t ticket = 0;
  for (uint32_t i = 0; i < slots; ++i) require(producer.post(abi::ServiceRequest{}, ticket));
  require(!producer.post(abi::ServiceRequest{}, ticket));
  return 0;
}
