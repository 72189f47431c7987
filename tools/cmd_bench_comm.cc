// `tandem bench comm`: this machine's analogue of thesis Tables 4.1/4.2 and Fig 5.6. The CPU overhead
// and the round-trip latency of sending 1..16 words to the engine and getting a word back, for each
// way tandem offers, against kernel channels measured in the same run.
//
// Methods (the engine's side: the dispatcher thread on its own CPU; the word back is the completion
// record's value, written by the null accelerator):
//   poll      the dispatcher polls its rings, the caller spins on the completion record;
//   doorbell  the dispatcher sleeps on the ring's doorbell, so the caller's publish rings it (a futex
//             wake), then the caller spins on the record;
//   block     the dispatcher polls, the caller sleeps on the record (futex wait; the engine wakes it);
//   sleep     both sleep: doorbell one way, futex wake the other.
// Arguments travel inline in the 64-byte packet (at most 4 words) or through an argument block whose
// address the packet carries (TANDEM_FLAG_ARGS_INDIRECT, up to 32 words), read by the engine.
// Baselines: pipe and Unix-socket round trips of the same request size and an eventfd ping (one
// counter each way), a raw shared-memory ping-pong and a futex round trip (bench/support).
//
// Fig 5.6's TLB dimension (polling only, 1..32 words): the session switches to PHASE/V, where the device
// fetches the argument block through its TLB (devices/emu: a walk costs tlb_walk_reads reads of
// tlb_read_ns, held as device time). "tlbhit": the block always on one page, whose translation stays
// cached; "tlbwalk": successive blocks on 2 x tlb_entries distinct pages in turn, so every fetch walks;
// "spread": the walk's layout under AISLE (no device TLB), the control that separates the modelled walk
// from what touching many pages costs the CPUs. Each is compared with the inline ("CSR") cell of equal
// size, which exists up to the packet's 4 words.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <time.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.hpp"
#include "client/embedded.hpp"
#include "client/runtime.hpp"
#include "commands.hpp"
#include "config/config.hpp"
#include "output.hpp"
#include "support/measure.hpp"
#include "support/peers.hpp"

namespace tandem::tools {

namespace {

using bench::Summary;

struct CommOptions {
  size_t samples = 3000;
  size_t rounds = 3;
  std::vector<uint32_t> words;
  std::vector<uint32_t> tlb_words;
  bool quick = false;
  bool json_output = false;
  std::string out;
};

enum class Method { poll, doorbell, block, sleep };
constexpr Method kMethods[] = {Method::poll, Method::doorbell, Method::block, Method::sleep};

const char* name_of(Method m) {
  switch (m) {
    case Method::poll: return "poll";
    case Method::doorbell: return "doorbell";
    case Method::block: return "block";
    case Method::sleep: return "sleep";
  }
  return "?";
}

bool engine_sleeps(Method m) { return m == Method::doorbell || m == Method::sleep; }
bool caller_sleeps(Method m) { return m == Method::block || m == Method::sleep; }

// Where an indirect cell's argument block lies, and whether the device TLB translates it (see above).
enum class Layout { one_block, tlb_hit, tlb_walk, spread };

const char* name_of(Layout l) {
  switch (l) {
    case Layout::one_block: return "";
    case Layout::tlb_hit: return "tlbhit";
    case Layout::tlb_walk: return "tlbwalk";
    case Layout::spread: return "spread";
  }
  return "?";
}

bool phasev(Layout l) { return l == Layout::tlb_hit || l == Layout::tlb_walk; }

constexpr uint64_t kPage = 4096;
constexpr uint64_t kMaxBlockBytes = TANDEM_MAX_ARG_WORDS * sizeof(uint64_t);

// The argument blocks' memory: one block (the plain indirect cells), a page of its own (tlbhit), and
// `walk_pages` consecutive pages that the walk and spread cells go through in turn.
struct ArgMemory {
  uint64_t* block = nullptr;
  char* hit_page = nullptr;
  char* walk_base = nullptr;
  uint64_t walk_pages = 0;
  // The next page of each layout that goes through the pages, carried across cells and rounds: the walk
  // cells' cycle never restarts on a page still cached (the spread cells, which do not look up the TLB,
  // keep their own).
  uint64_t next_walk = 0;
  uint64_t next_spread = 0;

  uint64_t* block_for(Layout l) {
    switch (l) {
      case Layout::one_block: return block;
      case Layout::tlb_hit: return reinterpret_cast<uint64_t*>(hit_page);
      case Layout::tlb_walk: return on_page(next_walk++ % walk_pages);
      case Layout::spread: return on_page(next_spread++ % walk_pages);
    }
    return block;
  }
  // Staggered within the page, so that the blocks do not all fall in one cache set.
  uint64_t* on_page(uint64_t p) const {
    return reinterpret_cast<uint64_t*>(walk_base + p * kPage + (p * 64) % (kPage - kMaxBlockBytes));
  }
};

// The session's device-TLB counts so far (embedded runtime: the dispatcher's snapshot).
devices::TlbCounts session_tlb(client::Runtime& rt) {
  devices::TlbCounts t;
  auto* embedded = dynamic_cast<client::EmbeddedRuntime*>(&rt);
  if (embedded == nullptr) return t;
  for (const rt::Snapshot::SessionTlb& s : embedded->dispatcher().snapshot().tlb_sessions) t += s.tlb;
  return t;
}

struct Cell {
  Method method = Method::poll;
  bool indirect = false;
  Layout layout = Layout::one_block;
  uint32_t words = 1;
  std::vector<double> rtt;     // ns per round trip
  std::vector<double> submit;  // ns of the caller's writing and publishing (and doorbell)
  double cpu_ns_total = 0;     // caller's thread CPU time over all samples
  size_t cpu_samples = 0;
  size_t not_asleep = 0;       // samples for which the dispatcher did not fall asleep in time
  devices::TlbCounts tlb;      // the device TLB's lookups over the timed samples
  std::string key() const {
    if (layout != Layout::one_block) return fmt::format("{}_indirect_{}_{}w", name_of(method), name_of(layout), words);
    return fmt::format("{}_{}_{}w", name_of(method), indirect ? "indirect" : "inline", words);
  }
};

std::string runtime_config(int dispatcher_cpu, bool sleepy) {
  // A sleepy dispatcher goes to sleep on its doorbells as soon as it has nothing to do.
  return fmt::format("[dispatcher]\ncpu = {}\nidle_spin_us = {}\n", dispatcher_cpu, sleepy ? 0 : 2000);
}

std::unique_ptr<client::Runtime> open_comm_runtime(int dispatcher_cpu, bool sleepy) {
  client::RuntimeOptions o;
  o.embedded = true;
  o.config_text = runtime_config(dispatcher_cpu, sleepy);
  auto rt = client::Runtime::open(o);
  if (!rt) throw Error(rt.status(), "cannot open the embedded runtime: " + rt.message());
  return std::move(rt).value();
}

// Waits (sleeping, so that it costs no CPU) until the dispatcher announces that it sleeps.
bool await_engine_sleep(const client::Queue& q) {
  for (int i = 0; i < 200; ++i) {
    if (q.consumer_sleeping()) return true;
    timespec ts{0, 20'000};
    nanosleep(&ts, nullptr);
  }
  return false;
}

Result<std::vector<double>> measure_cell(client::Runtime& rt, client::Queue& q, ArgMemory& memory, Cell& cell,
                                         size_t samples, int cpu) {
  bench::ScopedPin pin(cpu);
  // Only the TLB cells run under PHASE/V: the mode is the session's, so it is set back afterwards.
  if (phasev(cell.layout)) {
    if (Status s = rt.set_address_mode(TANDEM_ADDRESS_PHASEV); s != Status::ok) return {s, "cannot switch to PHASE/V"};
  }
  struct Restore {
    client::Runtime& rt;
    bool on;
    ~Restore() {
      if (on) (void)rt.set_address_mode(TANDEM_ADDRESS_AISLE);
    }
  } restore{rt, phasev(cell.layout)};
  const bench::TickClock& clock = bench::TickClock::get();
  tandem_completion_t* recs = rt.thread_records();
  rt::WaitPolicy policy;
  policy.mode = caller_sleeps(cell.method) ? rt::WaitMode::block : rt::WaitMode::spin;
  // Generous: this machine's threads are sometimes descheduled for a second or more (other tenants);
  // such a round trip is one huge sample, not a failure.
  policy.timeout_ns = 60'000'000'000;
  uint64_t args[TANDEM_MAX_ARG_WORDS];
  for (uint32_t i = 0; i < TANDEM_MAX_ARG_WORDS; ++i) args[i] = 0x1000 + i;
  const size_t warmup = std::min<size_t>(samples / 10 + 1, 200);
  std::vector<double> rtt;
  rtt.reserve(samples);
  double cpu_total = 0;
  devices::TlbCounts tlb_before;
  for (size_t n = 0; n < warmup + samples; ++n) {
    if (n == warmup && cell.indirect) tlb_before = session_tlb(rt);
    tandem_completion_t* rec = &recs[n % 2];
    rt::reset_record(rec);
    bool asleep = true;
    if (engine_sleeps(cell.method)) asleep = await_engine_sleep(q);
    const double cpu0 = static_cast<double>(thread_cpu_ns());
    const uint64_t t0 = clock.now();
    Status s;
    if (cell.indirect) {
      uint64_t* block = memory.block_for(cell.layout);
      for (uint32_t i = 0; i < cell.words; ++i) block[i] = args[i];  // the argument block, then its address
      const uint64_t ind[2] = {reinterpret_cast<uintptr_t>(block), uint64_t{cell.words} * sizeof(uint64_t)};
      s = q.dispatch(TANDEM_FN_NOP, ind, 2, 0, rec, false, TANDEM_FLAG_ARGS_INDIRECT);
    } else {
      s = q.dispatch(TANDEM_FN_NOP, args, cell.words, 0, rec);
    }
    const uint64_t t1 = clock.now();
    if (s != Status::ok) return {s, "submission failed"};
    s = rt.wait(rec, policy);
    const uint64_t t2 = clock.now();
    const double cpu1 = static_cast<double>(thread_cpu_ns());
    if (s != Status::ok) return {s, cell.key() + ": round trip " + std::to_string(n) + " failed: " + std::string(to_string(s))};
    if (abi::load_relaxed(rec->value) != 0) return {Status::device_error, "the null accelerator returned a value"};
    if (n < warmup) continue;
    rtt.push_back(clock.to_ns(t2 - t0));
    cell.submit.push_back(clock.to_ns(t1 - t0));
    cpu_total += cpu1 - cpu0;
    if (!asleep) ++cell.not_asleep;
  }
  if (cell.indirect) {
    const devices::TlbCounts after = session_tlb(rt);
    cell.tlb.hits += after.hits - tlb_before.hits;
    cell.tlb.misses += after.misses - tlb_before.misses;
    cell.tlb.faults += after.faults - tlb_before.faults;
  }
  // The thread CPU clock reads cost about as much as a short round trip: subtract one pair's cost.
  cell.cpu_ns_total += cpu_total;
  cell.cpu_samples += samples;
  cell.rtt.insert(cell.rtt.end(), rtt.begin(), rtt.end());
  return rtt;
}

double cpu_clock_cost_ns() {
  std::vector<double> v;
  for (int i = 0; i < 2000; ++i) {
    const double a = static_cast<double>(thread_cpu_ns());
    const double b = static_cast<double>(thread_cpu_ns());
    v.push_back(b - a);
  }
  return bench::summarize(v).median;
}

void run_comm(const CommOptions& o) {
  std::vector<uint32_t> words = o.words;
  if (words.empty()) {
    if (o.quick) {
      words = {1, 4, 16};
    } else {
      for (uint32_t w = 1; w <= 16; ++w) words.push_back(w);
    }
  }
  for (uint32_t w : words) {
    if (w < 1 || w > TANDEM_MAX_ARG_WORDS) throw Error(Status::invalid_argument, "--words must lie in 1..32");
  }
  std::vector<uint32_t> tlb_words = o.tlb_words;
  if (tlb_words.empty()) {
    if (o.quick) {
      tlb_words = {1, 4, 16, 32};
    } else {
      for (uint32_t w = 1; w <= TANDEM_MAX_ARG_WORDS; ++w) tlb_words.push_back(w);
    }
  }
  for (uint32_t w : tlb_words) {
    if (w < 1 || w > TANDEM_MAX_ARG_WORDS) throw Error(Status::invalid_argument, "--tlb-words must lie in 1..32");
  }
  std::sort(tlb_words.begin(), tlb_words.end());
  tlb_words.erase(std::unique(tlb_words.begin(), tlb_words.end()), tlb_words.end());
  const size_t samples = o.quick ? 150 : o.samples;
  const size_t rounds = o.quick ? 1 : o.rounds;
  const bench::CpuPair cpus = bench::pick_cpu_pair();
  bench::PeerOptions peer;
  peer.samples = samples;
  peer.warmup = std::min<size_t>(samples / 10 + 1, 200);
  peer.cpu_a = cpus.a;
  peer.cpu_b = cpus.b;
  peer.timeout = std::chrono::milliseconds(60'000);

  auto awake = open_comm_runtime(cpus.b, false);
  auto sleepy = open_comm_runtime(cpus.b, true);
  auto q_awake = awake->create_queue(256);
  auto q_sleepy = sleepy->create_queue(256);
  if (!q_awake || !q_sleepy) throw Error(Status::no_memory, "cannot create queues");
  auto* block_awake = static_cast<uint64_t*>(awake->alloc(TANDEM_MAX_ARG_WORDS * sizeof(uint64_t)));
  auto* block_sleepy = static_cast<uint64_t*>(sleepy->alloc(TANDEM_MAX_ARG_WORDS * sizeof(uint64_t)));
  if (block_awake == nullptr || block_sleepy == nullptr) throw Error(Status::no_memory, "cannot allocate argument blocks");
  // The TLB cells' pages: twice the device TLB's entries, so that going through them in turn evicts
  // every translation before its page comes round again (each set sees twice its ways, LRU).
  const config::EmuSettings emu = config::parse_config(runtime_config(cpus.b, false), "bench comm").device.emu;
  const uint64_t walk_pages = 2 * std::bit_ceil(std::max<uint64_t>(emu.tlb_entries, 1));
  void* pages = awake->alloc((walk_pages + 2) * kPage);
  if (pages == nullptr) throw Error(Status::no_memory, "cannot allocate the argument pages");
  char* first = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(pages) + kPage - 1) & ~(kPage - 1));
  std::memset(first, 0, (walk_pages + 1) * kPage);  // touched now: no cell pays the pages' first faults
  ArgMemory mem_awake{block_awake, first, first + kPage, walk_pages};
  ArgMemory mem_sleepy{block_sleepy};

  std::vector<Cell> cells;
  for (Method m : kMethods) {
    for (uint32_t w : words) {
      for (bool ind : {false, true}) {
        if (!ind && w > TANDEM_INLINE_ARGS) continue;  // a packet carries at most 4 words inline
        Cell c;
        c.method = m;
        c.indirect = ind;
        c.words = w;
        cells.push_back(std::move(c));
      }
    }
  }
  for (uint32_t w : tlb_words) {
    for (Layout l : {Layout::tlb_hit, Layout::tlb_walk, Layout::spread}) {
      Cell c;
      c.method = Method::poll;
      c.indirect = true;
      c.layout = l;
      c.words = w;
      cells.push_back(std::move(c));
    }
  }
  const std::vector<uint32_t> channel_words{1, 4, 16};
  // Interleaved: the references, every tandem cell, then the kernel channels, `rounds` times over.
  std::vector<bench::Measurement> ms;
  const auto quiesce = [] { std::this_thread::sleep_for(std::chrono::milliseconds(3)); };
  ms.push_back([&] { quiesce(); return bench::thread_pingpong_rtt(peer); });
  ms.push_back([&] { quiesce(); return bench::futex_rtt(peer, bench::FutexScope::shared); });
  for (Cell& c : cells) {
    const bool sl = engine_sleeps(c.method);
    ms.push_back([&, sl] {
      return measure_cell(sl ? *sleepy : *awake, sl ? *q_sleepy.value() : *q_awake.value(),
                          sl ? mem_sleepy : mem_awake, c, samples, cpus.a);
    });
  }
  for (uint32_t w : channel_words) {
    ms.push_back([&, w] { quiesce(); return bench::channel_rtt(bench::Channel::pipe, peer, w); });
    ms.push_back([&, w] { quiesce(); return bench::channel_rtt(bench::Channel::unix_stream, peer, w); });
  }
  ms.push_back([&] { quiesce(); return bench::channel_rtt(bench::Channel::eventfd, peer, 1); });
  if (!o.json_output) {
    fmt::print("measuring {} tandem cells and 9 references, {} rounds of {} samples (caller on cpu {}, dispatcher "
               "and echo threads on cpu {})...\n",
               cells.size(), rounds, samples, cpus.a, cpus.b);
    std::fflush(stdout);
  }
  auto measured = bench::interleave(rounds, ms);
  for (auto& m : measured) {
    if (!m) throw Error(m.status(), "a measurement failed: " + m.message());
  }
  const double cpu_clock = cpu_clock_cost_ns();
  awake->free(block_awake);
  awake->free(pages);
  sleepy->free(block_sleepy);

  size_t k = 0;
  const Summary pingpong = bench::summarize(measured[k++].value());
  const Summary futex = bench::summarize(measured[k++].value());
  k += cells.size();
  std::vector<std::pair<std::string, Summary>> channels;
  for (uint32_t w : channel_words) {
    channels.emplace_back(fmt::format("pipe_{}w", w), bench::summarize(measured[k++].value()));
    channels.emplace_back(fmt::format("unix_socket_{}w", w), bench::summarize(measured[k++].value()));
  }
  channels.emplace_back("eventfd", bench::summarize(measured[k++].value()));

  nlohmann::ordered_json j;
  j["cpus"] = {cpus.a, cpus.b};
  j["samples"] = samples;
  j["rounds"] = rounds;
  j["words"] = words;
  j["thread_cpu_clock_pair_ns"] = cpu_clock;
  auto put = [](const Summary& s) {
    return nlohmann::ordered_json{{"median_ns", s.median}, {"min_ns", s.min}, {"p99_ns", s.p99}};
  };
  j["references"]["pingpong_rtt"] = put(pingpong);
  j["references"]["futex_rtt"] = put(futex);
  for (const auto& [name, s] : channels) j["references"][name] = put(s);
  auto find = [&](Method m, bool ind, uint32_t w, Layout l = Layout::one_block) -> const Cell* {
    for (const Cell& c : cells) {
      if (c.method == m && c.indirect == ind && c.words == w && c.layout == l) return &c;
    }
    return nullptr;
  };
  auto median_of = [](const Cell* c) { return bench::summarize(c->rtt).median; };
  // The "CSR" cell of a size: its words inline in the packet (at most TANDEM_INLINE_ARGS), polled.
  auto csr_cell = [&](uint32_t w) { return w <= TANDEM_INLINE_ARGS ? find(Method::poll, false, w) : nullptr; };
  auto cpu_of = [&](const Cell& c) {
    return std::max(0.0, c.cpu_ns_total / static_cast<double>(std::max<size_t>(c.cpu_samples, 1)) - cpu_clock);
  };
  for (const Cell& c : cells) {
    const Summary r = bench::summarize(c.rtt);
    const Summary s = bench::summarize(c.submit);
    nlohmann::ordered_json row = {{"rtt_median_ns", r.median}, {"rtt_min_ns", r.min},      {"rtt_p99_ns", r.p99},
                                  {"submit_median_ns", s.median}, {"cpu_ns", cpu_of(c)}, {"engine_not_asleep", c.not_asleep}};
    if (c.indirect) {
      // Device-TLB lookups of the argument blocks over the timed samples (0 unless under PHASE/V).
      row["address_mode"] = phasev(c.layout) ? "phasev" : "aisle";
      row["arg_pages"] = c.layout == Layout::tlb_walk || c.layout == Layout::spread ? walk_pages : 1;
      row["tlb_hits"] = c.tlb.hits;
      row["tlb_walks"] = c.tlb.misses;
      row["walks_per_call"] = static_cast<double>(c.tlb.misses) / static_cast<double>(std::max<size_t>(c.rtt.size(), 1));
      const Cell* csr = csr_cell(c.words);
      row["over_csr"] = csr != nullptr ? nlohmann::ordered_json(r.median / median_of(csr)) : nlohmann::ordered_json(nullptr);
    }
    j["tandem"][c.key()] = row;
  }
  const Cell* poll1 = find(Method::poll, false, 1);
  const Cell* block1 = find(Method::block, false, 1);
  const Summary poll1_rtt = poll1 != nullptr ? bench::summarize(poll1->rtt) : Summary{};
  const Summary block1_rtt = block1 != nullptr ? bench::summarize(block1->rtt) : Summary{};
  nlohmann::ordered_json ratios;
  if (poll1 != nullptr) {
    ratios["poll_inline_1w_over_pingpong"] = poll1_rtt.median / pingpong.median;
    ratios["pipe_1w_over_poll_inline_1w"] = channels[0].second.median / poll1_rtt.median;
    ratios["unix_socket_1w_over_poll_inline_1w"] = channels[1].second.median / poll1_rtt.median;
    ratios["eventfd_over_poll_inline_1w"] = channels.back().second.median / poll1_rtt.median;
  }
  if (block1 != nullptr) ratios["block_inline_1w_over_futex"] = block1_rtt.median / futex.median;
  j["ratios"] = ratios;

  // Fig 5.6's TLB dimension. The pointer is best from k when, at k and every larger size measured, it
  // beats the CSR (inline) cell of that size or there is none: beyond the packet's 4 words the pointer
  // is the only way. Null: it does not beat the CSR cell at the largest size that has one.
  const auto json_or_null = [](std::optional<uint32_t> v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  auto best_from = [&](Layout l) -> std::optional<uint32_t> {
    std::optional<uint32_t> from;
    for (auto it = tlb_words.rbegin(); it != tlb_words.rend(); ++it) {
      const Cell* csr = csr_cell(*it);
      const bool beats = *it > TANDEM_INLINE_ARGS || (csr != nullptr && median_of(find(Method::poll, true, *it, l)) < median_of(csr));
      if (!beats) break;
      from = *it;
    }
    return from;
  };
  auto beats_at = [&](Layout l) {
    auto list = nlohmann::ordered_json::array();
    for (uint32_t w : tlb_words) {
      const Cell* csr = csr_cell(w);
      if (csr != nullptr && median_of(find(Method::poll, true, w, l)) < median_of(csr)) list.push_back(w);
    }
    return list;
  };
  // Medians over the sizes of one TLB cell's round trip less another's, and the walks per call of a layout.
  auto median_gap = [&](Layout a, Layout b) {
    std::vector<double> d;
    for (uint32_t w : tlb_words) d.push_back(median_of(find(Method::poll, true, w, a)) - median_of(find(Method::poll, true, w, b)));
    return bench::summarize(d).median;
  };
  auto walks_per_call = [&](Layout l) {
    double walks = 0, calls = 0;
    for (uint32_t w : tlb_words) {
      const Cell* c = find(Method::poll, true, w, l);
      walks += static_cast<double>(c->tlb.misses);
      calls += static_cast<double>(c->rtt.size());
    }
    return calls > 0 ? walks / calls : 0.0;
  };
  nlohmann::ordered_json tlb;
  tlb["words"] = tlb_words;
  tlb["tlb_entries"] = emu.tlb_entries;
  tlb["tlb_ways"] = emu.tlb_ways;
  tlb["walk_pages"] = walk_pages;
  tlb["modelled_walk_ns"] = emu.tlb_walk_reads * emu.tlb_read_s * 1e9;
  tlb["csr_max_words"] = TANDEM_INLINE_ARGS;
  tlb["pointer_hit_best_from_words"] = json_or_null(best_from(Layout::tlb_hit));
  tlb["pointer_walk_best_from_words"] = json_or_null(best_from(Layout::tlb_walk));
  tlb["pointer_hit_beats_csr_at_words"] = beats_at(Layout::tlb_hit);
  tlb["pointer_walk_beats_csr_at_words"] = beats_at(Layout::tlb_walk);
  tlb["hit_walks_per_call"] = walks_per_call(Layout::tlb_hit);
  tlb["walk_walks_per_call"] = walks_per_call(Layout::tlb_walk);
  tlb["walk_minus_hit_ns"] = median_gap(Layout::tlb_walk, Layout::tlb_hit);
  tlb["walk_minus_spread_ns"] = median_gap(Layout::tlb_walk, Layout::spread);
  tlb["spread_minus_hit_ns"] = median_gap(Layout::spread, Layout::tlb_hit);
  j["tlb"] = tlb;

  if (emit_json_report(j, o.out, o.json_output)) return;

  // Table 4.1's analogue: what sending costs the caller.
  fmt::print("\nCPU overhead of the caller, ns (median of {} x {}): writing the words and publishing the packet "
             "(doorbell: plus the futex wake); whole round trip on the thread's CPU clock in brackets\n",
             rounds, samples);
  bench::TextTable t1({"words", "inline", "indirect", "inline+doorbell", "indirect+doorbell", "block (cpu)",
                       "sleep (cpu)"});
  auto sub = [&](Method m, bool ind, uint32_t w) {
    const Cell* c = find(m, ind, w);
    return c == nullptr ? std::string("-") : bench::fixed(bench::summarize(c->submit).median, 0);
  };
  auto cpu = [&](Method m, bool ind, uint32_t w) {
    const Cell* c = find(m, ind, w);
    if (c == nullptr) c = find(m, true, w);
    return c == nullptr ? std::string("-") : "(" + bench::fixed(cpu_of(*c), 0) + ")";
  };
  for (uint32_t w : words) {
    t1.add_row({std::to_string(w), sub(Method::poll, false, w), sub(Method::poll, true, w), sub(Method::doorbell, false, w),
                sub(Method::doorbell, true, w), cpu(Method::block, false, w), cpu(Method::sleep, false, w)});
  }
  fmt::print("{}\n", t1.render());

  // Table 4.2 / Fig 5.6's analogue: the round trip.
  fmt::print("Round trip, ns (median; p99 in the JSON): send the words, get the record's word back\n");
  bench::TextTable t2({"words", "poll inl", "poll ind", "doorbell inl", "doorbell ind", "block inl", "block ind",
                       "sleep inl", "sleep ind", "pipe", "unix sock"});
  auto rt_of = [&](Method m, bool ind, uint32_t w) {
    const Cell* c = find(m, ind, w);
    return c == nullptr ? std::string("-") : bench::fixed(bench::summarize(c->rtt).median, 0);
  };
  auto chan = [&](const std::string& key) {
    for (const auto& [name, s] : channels) {
      if (name == key) return bench::fixed(s.median, 0);
    }
    return std::string("-");
  };
  for (uint32_t w : words) {
    t2.add_row({std::to_string(w), rt_of(Method::poll, false, w), rt_of(Method::poll, true, w),
                rt_of(Method::doorbell, false, w), rt_of(Method::doorbell, true, w), rt_of(Method::block, false, w),
                rt_of(Method::block, true, w), rt_of(Method::sleep, false, w), rt_of(Method::sleep, true, w),
                chan(fmt::format("pipe_{}w", w)), chan(fmt::format("unix_socket_{}w", w))});
  }
  fmt::print("{}\n", t2.render());
  fmt::print("references: shared-memory ping-pong {:.0f} ns, futex round trip {:.0f} ns, eventfd {:.0f} ns\n",
             pingpong.median, futex.median, channels.back().second.median);
  if (poll1 != nullptr && block1 != nullptr) {
    fmt::print("ratios: poll (1 word) = {:.2f}x ping-pong; block = {:.2f}x futex; pipe = {:.1f}x, Unix socket = "
               "{:.1f}x, eventfd = {:.1f}x tandem poll\n",
               poll1_rtt.median / pingpong.median, block1_rtt.median / futex.median,
               channels[0].second.median / poll1_rtt.median, channels[1].second.median / poll1_rtt.median,
               channels.back().second.median / poll1_rtt.median);
  }
  // Fig 5.6's TLB dimension.
  fmt::print("\nArguments through the device TLB (thesis Fig 5.6), polled round trip, ns (median): CSR = the "
             "words inline in the packet; pointer = an argument block (AISLE, no device TLB); hit / walk = the "
             "block fetched under PHASE/V from one page / from {} pages in turn; spread = those {} pages under "
             "AISLE (control)\n",
             walk_pages, walk_pages);
  bench::TextTable t3({"words", "CSR", "pointer", "hit", "walk", "spread", "hit/CSR", "walk/CSR", "walks/call hit",
                       "walks/call walk"});
  for (uint32_t w : tlb_words) {
    const Cell* csr = csr_cell(w);
    const Cell* hit = find(Method::poll, true, w, Layout::tlb_hit);
    const Cell* walk = find(Method::poll, true, w, Layout::tlb_walk);
    const auto over = [&](const Cell* c) { return csr == nullptr ? std::string("-") : bench::fixed(median_of(c) / median_of(csr), 2); };
    const auto per_call = [](const Cell* c) {
      return bench::fixed(static_cast<double>(c->tlb.misses) / static_cast<double>(std::max<size_t>(c->rtt.size(), 1)), 2);
    };
    t3.add_row({std::to_string(w), csr == nullptr ? std::string("-") : bench::fixed(median_of(csr), 0), rt_of(Method::poll, true, w),
                bench::fixed(median_of(hit), 0), bench::fixed(median_of(walk), 0),
                bench::fixed(median_of(find(Method::poll, true, w, Layout::spread)), 0), over(hit), over(walk),
                per_call(hit), per_call(walk)});
  }
  fmt::print("{}\n", t3.render());
  const auto words_or_none = [](const nlohmann::ordered_json& v) { return v.is_null() ? std::string("none") : v.dump(); };
  fmt::print("pointer best from (hit / walk): {} / {} words (CSR holds at most {}); walk - hit {:.0f} ns, walk - spread "
             "{:.0f} ns (modelled walk {:.0f} ns)\n",
             words_or_none(tlb["pointer_hit_best_from_words"]), words_or_none(tlb["pointer_walk_best_from_words"]),
             TANDEM_INLINE_ARGS, tlb["walk_minus_hit_ns"].get<double>(), tlb["walk_minus_spread_ns"].get<double>(),
             tlb["modelled_walk_ns"].get<double>());
  size_t missed = 0;
  for (const Cell& c : cells) missed += c.not_asleep;
  if (missed > 0) fmt::print("note: {} samples started before the dispatcher was asleep\n", missed);
}

}  // namespace

void add_comm_bench(CLI::App& bench) {
  auto o = std::make_shared<CommOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "comm", "CPU overhead and round trip of sending 1..16 words to the engine, and 1..32 through the device TLB (thesis Tables 4.1/4.2, Fig 5.6)");
  cmd->add_option("--samples", o->samples, "Round trips per cell and round")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "Interleaved rounds")->capture_default_str();
  cmd->add_option("--words", o->words, "Word counts to send (default 1..16)");
  cmd->add_option("--tlb-words", o->tlb_words, "Word counts of the device-TLB cells (default 1..32)");
  cmd->add_flag("--quick", o->quick, "1, 4 and 16 words (TLB cells: 1, 4, 16, 32), few samples, one round (seconds; for tests)");
  cmd->add_flag("--json", o->json_output, "Print JSON instead of tables");
  cmd->add_option("--out", o->out, "Also write the JSON to this file")->check(writable_file());
  cmd->callback([o] { run_comm(*o); });
}

}  // namespace tandem::tools
