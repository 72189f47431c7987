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
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <time.h>

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "client/runtime.hpp"
#include "commands.hpp"
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

struct Cell {
  Method method = Method::poll;
  bool indirect = false;
  uint32_t words = 1;
  std::vector<double> rtt;     // ns per round trip
  std::vector<double> submit;  // ns of the caller's writing and publishing (and doorbell)
  double cpu_ns_total = 0;     // caller's thread CPU time over all samples
  size_t cpu_samples = 0;
  size_t not_asleep = 0;       // samples for which the dispatcher did not fall asleep in time
  std::string key() const {
    return fmt::format("{}_{}_{}w", name_of(method), indirect ? "indirect" : "inline", words);
  }
};

double thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

std::unique_ptr<client::Runtime> open_runtime(int dispatcher_cpu, bool sleepy) {
  client::RuntimeOptions o;
  o.embedded = true;
  // A sleepy dispatcher goes to sleep on its doorbells as soon as it has nothing to do.
  o.config_text = fmt::format("[dispatcher]\ncpu = {}\nidle_spin_us = {}\n", dispatcher_cpu, sleepy ? 0 : 2000);
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

Result<std::vector<double>> measure_cell(client::Runtime& rt, client::Queue& q, uint64_t* block, Cell& cell,
                                         size_t samples, int cpu) {
  bench::ScopedPin pin(cpu);
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
  for (size_t n = 0; n < warmup + samples; ++n) {
    tandem_completion_t* rec = &recs[n % 2];
    rt::reset_record(rec);
    bool asleep = true;
    if (engine_sleeps(cell.method)) asleep = await_engine_sleep(q);
    const double cpu0 = thread_cpu_ns();
    const uint64_t t0 = clock.now();
    Status s;
    if (cell.indirect) {
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
    const double cpu1 = thread_cpu_ns();
    if (s != Status::ok) return {s, cell.key() + ": round trip " + std::to_string(n) + " failed: " + std::string(to_string(s))};
    if (abi::load_relaxed(rec->value) != 0) return {Status::device_error, "the null accelerator returned a value"};
    if (n < warmup) continue;
    rtt.push_back(clock.to_ns(t2 - t0));
    cell.submit.push_back(clock.to_ns(t1 - t0));
    cpu_total += cpu1 - cpu0;
    if (!asleep) ++cell.not_asleep;
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
    const double a = thread_cpu_ns();
    const double b = thread_cpu_ns();
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
  const size_t samples = o.quick ? 150 : o.samples;
  const size_t rounds = o.quick ? 1 : o.rounds;
  const bench::CpuPair cpus = bench::pick_cpu_pair();
  bench::PeerOptions peer;
  peer.samples = samples;
  peer.warmup = std::min<size_t>(samples / 10 + 1, 200);
  peer.cpu_a = cpus.a;
  peer.cpu_b = cpus.b;
  peer.timeout = std::chrono::milliseconds(60'000);

  auto awake = open_runtime(cpus.b, false);
  auto sleepy = open_runtime(cpus.b, true);
  auto q_awake = awake->create_queue(256);
  auto q_sleepy = sleepy->create_queue(256);
  if (!q_awake || !q_sleepy) throw Error(Status::no_memory, "cannot create queues");
  auto* block_awake = static_cast<uint64_t*>(awake->alloc(TANDEM_MAX_ARG_WORDS * sizeof(uint64_t)));
  auto* block_sleepy = static_cast<uint64_t*>(sleepy->alloc(TANDEM_MAX_ARG_WORDS * sizeof(uint64_t)));
  if (block_awake == nullptr || block_sleepy == nullptr) throw Error(Status::no_memory, "cannot allocate argument blocks");

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
                          sl ? block_sleepy : block_awake, c, samples, cpus.a);
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
  auto find = [&](Method m, bool ind, uint32_t w) -> const Cell* {
    for (const Cell& c : cells) {
      if (c.method == m && c.indirect == ind && c.words == w) return &c;
    }
    return nullptr;
  };
  auto cpu_of = [&](const Cell& c) {
    return std::max(0.0, c.cpu_ns_total / static_cast<double>(std::max<size_t>(c.cpu_samples, 1)) - cpu_clock);
  };
  for (const Cell& c : cells) {
    const Summary r = bench::summarize(c.rtt);
    const Summary s = bench::summarize(c.submit);
    j["tandem"][c.key()] = {{"rtt_median_ns", r.median}, {"rtt_min_ns", r.min},      {"rtt_p99_ns", r.p99},
                            {"submit_median_ns", s.median}, {"cpu_ns", cpu_of(c)}, {"engine_not_asleep", c.not_asleep}};
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
  size_t missed = 0;
  for (const Cell& c : cells) missed += c.not_asleep;
  if (missed > 0) fmt::print("note: {} samples started before the dispatcher was asleep\n", missed);
}

}  // namespace

void add_comm_bench(CLI::App& bench) {
  auto o = std::make_shared<CommOptions>();
  CLI::App* cmd = bench.add_subcommand(
      "comm", "CPU overhead and round trip of sending 1..16 words to the engine (thesis Tables 4.1/4.2, Fig 5.6)");
  cmd->add_option("--samples", o->samples, "Round trips per cell and round")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "Interleaved rounds")->capture_default_str();
  cmd->add_option("--words", o->words, "Word counts to send (default 1..16)");
  cmd->add_flag("--quick", o->quick, "1, 4 and 16 words, few samples, one round (seconds; for tests)");
  cmd->add_flag("--json", o->json_output, "Print JSON instead of tables");
  cmd->add_option("--out", o->out, "Also write the JSON to this file");
  cmd->callback([o] { run_comm(*o); });
}

}  // namespace tandem::tools
