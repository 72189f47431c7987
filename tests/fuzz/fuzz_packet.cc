// Fuzzes the trust boundary between a client's ring and the engine: packet validation (decode) and the
// engine fed with whatever validation lets through. Input: a sequence of 64-byte packets; the bytes
// after the packets are the session's memory (mapped at a fixed client address, so packets can name
// it), holding argument blocks, buffers and completion records.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "engine/engine.hpp"
#include "funcs/function.hpp"
#include "rt/decode.hpp"

namespace {

constexpr uint64_t kClientBase = 0x10000;

class FuzzMemory final : public tandem::rt::AddressSpace {
 public:
  explicit FuzzMemory(std::vector<uint8_t>& bytes) : bytes_(bytes) {}
  void* translate(uint64_t address, uint64_t n, bool) override {
    if (address < kClientBase || n > bytes_.size() || address - kClientBase > bytes_.size() - n) return nullptr;
    return bytes_.data() + (address - kClientBase);
  }

 private:
  std::vector<uint8_t>& bytes_;
};

// The engine every input starts from: configured, one session with one ring, ACCUMULATE and WORK loaded.
// Built once and copied per input. Not built per input: Engine::Engine bisects the job-size bound of
// every known function, under libFuzzer's comparison hooks about 45% of an execution's time (perf).
// Not reused across inputs: it would carry state from earlier inputs (per-function counters, the
// request bitmap, slot statistics and timestamps ahead of this input's clock, which restarts at 0),
// and an input must not depend on the ones run before it. Not copy-assigned into a static engine
// either: its vectors would keep the capacity earlier inputs grew, so an index past their end would
// read stale entries instead of meeting ASan's redzone. A fresh copy (the engine holds indices, no
// pointers into itself) starts every input from the same state with exactly sized vectors.
struct Setup {
  tandem::engine::Engine engine;
  tandem::engine::SessionId session = 0;
  tandem::engine::RingId ring = 0;
};

Setup make_setup() {
  using namespace tandem;
  engine::EngineConfig config;
  config.slots = 2;
  config.queue_capacity = 4;
  config.max_jobs = 8;
  config.max_job_ns = 1'000'000;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
    config.known.set(fn->id);
    config.models[fn->id].throughput = 1e9;
  }
  Setup s{engine::Engine(config)};
  s.session = s.engine.open_session();
  s.ring = s.engine.open_ring(s.session);
  engine::Actions actions;
  s.engine.load(0, TANDEM_FN_ACCUMULATE, 0, actions);
  s.engine.load(1, TANDEM_FN_WORK, 0, actions);
  s.engine.configure_done(0, 0, actions);
  s.engine.configure_done(1, 0, actions);
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tandem;
  const size_t packets = std::min<size_t>(size / TANDEM_PACKET_SIZE, 16);
  std::vector<uint8_t> memory(data + packets * TANDEM_PACKET_SIZE, data + size);
  memory.resize(memory.size() + 64, 0);  // room for a record even when the input is short
  FuzzMemory space(memory);

  static const Setup setup = make_setup();
  engine::Engine eng = setup.engine;
  const engine::SessionId session = setup.session;
  const engine::RingId ring = setup.ring;
  // Device-local memory with one buffer of this session and one of another: a fuzzed device address
  // may only ever reach the session's own.
  static devices::LocalMemory local(1 << 16);
  static const uint64_t own = local.alloc(session, 4096).value();
  static const uint64_t foreign [[maybe_unused]] = local.alloc(session + 1, 4096).value();
  const char* own_begin = static_cast<const char*>(local.translate(session, own, 4096));
  engine::Actions actions;

  rt::Decoded d;
  engine::Time now = 0;
  for (size_t i = 0; i < packets; ++i) {
    tandem_packet_t p;
    std::memcpy(&p, data + i * TANDEM_PACKET_SIZE, sizeof p);
    rt::decode_packet(p, space, &local, session, ring, d);
    switch (d.kind) {
      case rt::Decoded::Kind::dispatch: eng.submit(d.job, ++now, actions); break;
      case rt::Decoded::Kind::barrier: eng.submit_barrier(d.barrier, ++now, actions); break;
      case rt::Decoded::Kind::reject: eng.reject(session, d.job.completion, 0, d.status, actions); break;
      case rt::Decoded::Kind::cancel:
        eng.cancel(session, d.cancel_target, reinterpret_cast<uintptr_t>(d.record), d.job.tag, actions);
        break;
      case rt::Decoded::Kind::drop: break;
    }
    // Every started job finishes at once; every buffer the engine was given must lie in the session.
    for (size_t a = 0; a < actions.size(); ++a) {
      if (actions[a].kind == engine::ActionKind::start_job) eng.job_finished(actions[a].slot, Status::ok, 0, ++now, actions);
    }
    if (d.kind == rt::Decoded::Kind::dispatch) {
      for (void* b : d.call.buffers) {
        const bool in_own_local = static_cast<const char*>(b) >= own_begin && static_cast<const char*>(b) < own_begin + 4096;
        if (b != nullptr && !in_own_local &&
            (static_cast<uint8_t*>(b) < memory.data() || static_cast<uint8_t*>(b) >= memory.data() + memory.size())) {
          __builtin_trap();  // a translated buffer outside the session: the one thing that must never happen
        }
      }
    }
    actions.clear();
  }
  eng.close_session(session, ++now, actions);
  // No job is left running (each finished at once), so closing must drain the session at once: a job
  // or barrier the engine lost track of would keep it open, and its client's memory mapped, for ever.
  bool drained = false;
  for (const engine::Action& a : actions) drained |= a.kind == engine::ActionKind::session_drained;
  if (!drained || eng.jobs_in_flight() != 0) __builtin_trap();
  return 0;
}
