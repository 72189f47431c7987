#include "rt/decode.hpp"

#include <cstring>

#include "abi/atomics.hpp"
#include "abi/ring.hpp"
#include "rt/completion.hpp"

namespace tandem::rt {

namespace {

void reject(Decoded& out, Status status) {
  out.kind = Decoded::Kind::reject;
  out.status = status;
}

tandem_completion_t* translate_record(AddressSpace& memory, uint64_t address, bool write) {
  if (address % alignof(tandem_completion_t) != 0) return nullptr;
  return static_cast<tandem_completion_t*>(memory.translate(address, sizeof(tandem_completion_t), write));
}

// Where each buffer of a dispatch lives, by the packet's access method (docs/access.md): device
// addresses in device-local memory; host addresses in session memory (zero-copy, copy), or anywhere in
// the client's own memory (scatter-gather: reached in place by the embedded runtime, gathered from
// the client's process by tandemd).
Status place_buffers(const funcs::BufferList& buffers, AddressSpace& memory, const devices::LocalMemory* local,
                     engine::SessionId session, Decoded& out, uint8_t address_mode) {
  const uint8_t method = out.access.method;
  std::shared_ptr<const ProcessMemory> remote;
  if (method == TANDEM_ACCESS_SCATTER_GATHER || address_mode == TANDEM_ADDRESS_PHASEV) remote = memory.remote();
  for (uint32_t i = 0; i < buffers.count; ++i) {
    const funcs::BufferUse& b = buffers.items[i];
    const uint64_t address = out.call.args[b.arg];
    if (b.bytes == 0) continue;
    if (address & TANDEM_DEVICE_ADDRESS_BIT) {
      if (local == nullptr) return Status::translation_fault;  // no device-local memory here: nothing to name
      void* p = local->translate(session, address, b.bytes);
      if (p == nullptr) return Status::translation_fault;
      out.call.buffers[i] = p;
      out.access.local_bytes += b.bytes;
      continue;
    }
    if (method == TANDEM_ACCESS_DEVICE_LOCAL) return Status::access_unsupported;  // a host buffer named local
    (b.write ? out.access.bytes_out : out.access.bytes_in) += b.bytes;
    if (method == TANDEM_ACCESS_SCATTER_GATHER) {
      if (!ProcessMemory::plausible(address, b.bytes)) return Status::translation_fault;
      out.access.pages += ProcessMemory::pages(address, b.bytes);
      if (remote) {  // gathered into staging before the job runs, scattered back after
        out.remote[out.remote_count++] = RemoteBuffer{i, address, b.bytes, b.write};
        continue;
      }
    }
    void* p = memory.translate(address, b.bytes, b.write);
    if (p == nullptr && address_mode == TANDEM_ADDRESS_PHASEV && remote && ProcessMemory::plausible(address, b.bytes)) {
      // PHASE/V: not translatable yet; its pages are faulted in from the client's process before the
      // job starts (a page the client does not have mapped fails the job with TRANSLATION_FAULT).
      out.remote[out.remote_count++] = RemoteBuffer{i, address, b.bytes, b.write};
      out.faulted_pages += ProcessMemory::pages(address, b.bytes);
      continue;
    }
    if (p == nullptr) return Status::translation_fault;
    out.call.buffers[i] = p;
  }
  return Status::ok;
}

void decode_dispatch(const tandem_packet_t& p, AddressSpace& memory, const devices::LocalMemory* local,
                     engine::SessionId session, Decoded& out, uint8_t address_mode) {
  const uint16_t fn_id = abi::header_function(p.header);
  if ((p.flags & ~uint32_t{TANDEM_FLAG_KNOWN_MASK}) != 0) return reject(out, Status::invalid_packet);
  const funcs::FunctionInfo* fn = funcs::find_function(fn_id);
  if (fn == nullptr) return reject(out, Status::unknown_function);

  engine::JobSpec& job = out.job;
  job.function = fn_id;
  job.flags = p.flags;
  job.barrier_bit = (p.header & TANDEM_HEADER_BARRIER) != 0;
  job.completion = reinterpret_cast<uintptr_t>(out.record);
  job.tag = p.user_data;
  if (p.flags & TANDEM_FLAG_DEMAND_ONLY) {  // an empty job: only the function id matters
    job.workload = 0;
    out.call.function = fn_id;
    out.kind = Decoded::Kind::dispatch;
    return;
  }

  // Arguments: inline words, or an argument block in the session's memory (thesis 5.4.3).
  uint64_t words[TANDEM_MAX_ARG_WORDS];
  uint32_t count = TANDEM_INLINE_ARGS;
  if (p.flags & TANDEM_FLAG_ARGS_INDIRECT) {
    const uint64_t address = p.body.dispatch.args[0];
    const uint64_t bytes = p.body.dispatch.args[1];
    if (bytes % sizeof(uint64_t) != 0 || bytes > sizeof words || address % alignof(uint64_t) != 0) {
      return reject(out, Status::invalid_packet);
    }
    const void* block = memory.translate(address, bytes, false);
    if (block == nullptr && bytes > 0) return reject(out, Status::translation_fault);
    count = static_cast<uint32_t>(bytes / sizeof(uint64_t));
    if (count > 0) std::memcpy(words, block, bytes);  // read once; the client may change it later
    out.args_address = address;
    out.args_bytes = static_cast<uint32_t>(bytes);
  } else {
    std::memcpy(words, p.body.dispatch.args, sizeof p.body.dispatch.args);
  }

  funcs::BufferList buffers;
  if (funcs::describe_call(*fn, {words, count}, out.call, buffers) != Status::ok) {
    return reject(out, Status::invalid_packet);
  }
  if (p.body.dispatch.workload != out.call.workload) return reject(out, Status::invalid_packet);
  job.workload = out.call.workload;
  out.access.method = static_cast<uint8_t>((p.flags & TANDEM_FLAG_ACCESS_MASK) >> TANDEM_FLAG_ACCESS_SHIFT);
  if (out.access.method >= TANDEM_ACCESS_COUNT_) return reject(out, Status::invalid_packet);
  if (Status s = place_buffers(buffers, memory, local, session, out, address_mode); s != Status::ok) {
    return reject(out, s);
  }
  out.kind = Decoded::Kind::dispatch;
}

void decode_barrier(const tandem_packet_t& p, AddressSpace& memory, Decoded& out) {
  if (p.flags != 0 || abi::header_function(p.header) != 0) return reject(out, Status::invalid_packet);
  engine::BarrierSpec& b = out.barrier;
  b.completion = reinterpret_cast<uintptr_t>(out.record);
  b.tag = p.user_data;
  for (size_t i = 0; i < TANDEM_BARRIER_DEPS; ++i) {
    const uint64_t dep = p.body.barrier.deps[i];
    b.deps[i] = 0;
    b.dep_state[i] = engine::DepState::unused;
    if (dep == 0) continue;
    const tandem_completion_t* rec = translate_record(memory, dep, false);
    if (rec == nullptr) return reject(out, Status::translation_fault);
    const uint32_t status = record_status(rec);  // pairs with complete_record's release
    b.deps[i] = reinterpret_cast<uintptr_t>(rec);
    b.dep_state[i] = status == TANDEM_PENDING ? engine::DepState::pending
                     : status == TANDEM_OK   ? engine::DepState::done_ok
                                             : engine::DepState::done_failed;
  }
  out.kind = Decoded::Kind::barrier;
}

// A cancel names its target by the completion record the target's dispatch packet named; the key is
// the record translated the same way, so a session can only ever name its own jobs.
void decode_cancel(const tandem_packet_t& p, AddressSpace& memory, Decoded& out) {
  if (p.flags != 0 || abi::header_function(p.header) != 0 || p.body.cancel.target == 0) {
    return reject(out, Status::invalid_packet);
  }
  for (uint64_t word : p.body.cancel.reserved) {
    if (word != 0) return reject(out, Status::invalid_packet);
  }
  const tandem_completion_t* target = translate_record(memory, p.body.cancel.target, true);
  if (target == nullptr) return reject(out, Status::translation_fault);
  out.cancel_target = reinterpret_cast<uintptr_t>(target);
  out.kind = Decoded::Kind::cancel;
}

}  // namespace

void decode_packet(const tandem_packet_t& p, AddressSpace& memory, const devices::LocalMemory* local,
                   engine::SessionId session, engine::RingId ring, Decoded& out, uint8_t address_mode) {
  out.kind = Decoded::Kind::drop;
  out.faulted_pages = 0;
  out.args_address = 0;
  out.args_bytes = 0;
  out.access = devices::JobAccess{};
  out.remote_count = 0;
  out.status = Status::ok;
  out.record = nullptr;
  out.cancel_target = 0;
  out.job = engine::JobSpec{};
  out.job.session = session;
  out.job.ring = ring;
  out.job.tag = p.user_data;
  out.barrier.session = session;
  out.barrier.ring = ring;
  // The completion record first: without it there is nobody to report anything to.
  if (p.completion != 0) {
    out.record = translate_record(memory, p.completion, true);
    if (out.record == nullptr) return;  // drop
  }
  if ((p.header & TANDEM_HEADER_RESERVED_MASK) != 0) return reject(out, Status::invalid_packet);
  switch (abi::header_type(p.header)) {
    case TANDEM_PACKET_DISPATCH: return decode_dispatch(p, memory, local, session, out, address_mode);
    case TANDEM_PACKET_BARRIER_AND: return decode_barrier(p, memory, out);
    case TANDEM_PACKET_CANCEL: return decode_cancel(p, memory, out);
    default: return reject(out, Status::invalid_packet);
  }
}

tandem_completion_t* packet_record(const tandem_packet_t& packet, AddressSpace& memory) {
  return packet.completion == 0 ? nullptr : translate_record(memory, packet.completion, true);
}

}  // namespace tandem::rt
