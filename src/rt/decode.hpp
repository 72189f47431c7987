// Packet validation: the trust boundary between a client's ring and the engine. The packet is
// copied once into private memory (RingConsumer::peek) and only that copy is examined here: type,
// reserved bits, flags, function id, argument sizes, workload, and every address against the
// session's memory. Fuzzed by tests/fuzz.
#pragma once

#include <cstdint>

#include "devices/device.hpp"
#include "devices/local_memory.hpp"
#include "engine/types.hpp"
#include "rt/address_space.hpp"
#include "funcs/function.hpp"
#include "tandem/tandem_abi.h"

namespace tandem::rt {

struct Decoded {
  enum class Kind : uint8_t {
    dispatch,  // job + call are valid
    barrier,   // barrier is valid
    cancel,    // withdraw the queued job whose completion key is `cancel_target`; answer in `record`
    reject,    // complete `record` with `status` (it may be null: fire-and-forget packet)
    drop,      // the completion record itself is unreachable: nobody can be told
  };
  Kind kind = Kind::drop;
  Status status = Status::ok;
  tandem_completion_t* record = nullptr;  // translated completion record, or null
  engine::JobSpec job;
  funcs::Call call;
  engine::BarrierSpec barrier;
  uint64_t cancel_target = 0;  // cancel: the target job's completion key (its translated record)
  devices::JobAccess access;   // dispatch: how its buffers reach the device, and how much they move
  // dispatch, scatter-gather under tandemd: buffers in the client's own memory, to gather and scatter
  std::array<RemoteBuffer, funcs::kMaxBuffers> remote{};
  uint32_t remote_count = 0;
  uint64_t faulted_pages = 0;  // PHASE/V: pages of its buffers outside the windows, gathered on demand
  uint64_t args_address = 0;   // dispatch: the argument block's client address and bytes (0: inline)
  uint32_t args_bytes = 0;
};

// Decodes `packet` (a private copy) from ring `ring` of `session`, whose memory is `memory`. Device
// addresses translate through `local` (null: the runtime has no device-local memory). Under
// TANDEM_ADDRESS_PHASEV a buffer outside the session's windows is faulted in from the client's own
// memory (gathered before the job, scattered after) instead of refused.
void decode_packet(const tandem_packet_t& packet, AddressSpace& memory, const devices::LocalMemory* local,
                   engine::SessionId session, engine::RingId ring, Decoded& out,
                   uint8_t address_mode = TANDEM_ADDRESS_AISLE);

// The completion record a packet names, translated (write access), or null when it names none or
// one the session cannot reach: what a packet that will never run is answered through.
tandem_completion_t* packet_record(const tandem_packet_t& packet, AddressSpace& memory);

}  // namespace tandem::rt
