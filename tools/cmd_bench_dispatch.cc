// `tandem bench dispatch`: what a job costs to dispatch, against peers measured in the same run.
//
// References: raw two-thread shared-memory ping-pong (the floor of any cross-core round trip) and a
// futex round trip; peers: StarPU's empty task (sync and async) and io_uring's NOP. Subject: tandem's
// no-op job (submit -> null accelerator -> completion observed) with spin and blocking waits, the
// client's CPU cost per submit, and batched async throughput from one and two producer threads.
// Subject and references are interleaved (A B C A B C ...) so that machine drift hits both.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <thread>
#include <vector>

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "client/embedded.hpp"
#include "client/runtime.hpp"
#include "rt/trace.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "daemon_launcher.hpp"
#include "noop_probe.hpp"
#include "base/clock.hpp"
#include "support/measure.hpp"
#include "support/measure_json.hpp"
#include "support/peers.hpp"

namespace tandem::tools {

namespace {

using bench::Summary;
using nlohmann::json;

struct DispatchOptions {
  size_t samples = 20'000;
  size_t rounds = 3;
  uint64_t throughput_jobs = 4'000'000;
  bool json_output = false;
  std::string out;
  bool skip_starpu = false;
  bool daemon = false;
  unsigned daemon_processes = 4;
  bool trace_only = false;
};

struct Row {
  std::string name;
  std::string key;
  Summary s;
  bool ok = false;
  std::string note;
};

std::unique_ptr<client::Runtime> open_dispatch_runtime(int dispatcher_cpu) {
  client::RuntimeOptions o;
  o.embedded = true;
  // The built-in fabric, with the dispatcher on its own CPU like the reference's echo thread.
  o.config_text = "[dispatcher]\ncpu = " + std::to_string(dispatcher_cpu) + "\nidle_spin_us = 200\n";
  auto rt = client::Runtime::open(o);
  if (!rt) throw Error(rt.status(), "cannot open the embedded runtime: " + rt.message());
  return std::move(rt).value();
}

// Lets the dispatcher fall asleep so that it does not compete with a reference for a core.
void quiesce() { std::this_thread::sleep_for(std::chrono::milliseconds(5)); }

// Client CPU per submit: batches of fire-and-forget no-ops, timed on the producer side only.
Result<std::vector<double>> submit_costs(client::Runtime& rt, client::Queue& q, size_t samples, int cpu) {
  bench::ScopedPin pin(cpu);
  constexpr size_t kBatch = 256;
  tandem_completion_t* rec = rt.thread_records();
  std::vector<double> out;
  const bench::TickClock& clock = bench::TickClock::get();
  for (size_t s = 0; s < samples / 10 + 1; ++s) {
    const uint64_t t0 = clock.now();
    for (size_t i = 0; i < kBatch; ++i) {
      if (Status st = q.dispatch(TANDEM_FN_NOP, nullptr, 0, 0, nullptr); st != Status::ok) return st;
    }
    const uint64_t t1 = clock.now();
    out.push_back(clock.to_ns(t1 - t0) / kBatch);
    rt::reset_record(rec);  // drain before the next batch so the ring never fills while timing
    if (Status st = q.dispatch(TANDEM_FN_NOP, nullptr, 0, 0, rec); st != Status::ok) return st;
    if (Status st = rt.wait(rec, {}); st != Status::ok) return st;
  }
  return out;
}

// Async no-op throughput of one producer thread: batches of 64 reserved at once, published with one
// doorbell check, up to 8 batches in flight (the last packet of a batch carries a record).
Status produce(client::Runtime& rt, client::Queue& q, uint64_t jobs) {
  constexpr uint32_t kBatch = 64, kInFlight = 8;
  tandem_completion_t* recs = rt.thread_records();
  if (recs == nullptr) return Status::no_memory;
  for (uint32_t i = 0; i < kInFlight; ++i) {
    rt::reset_record(&recs[i]);
    abi::store_relaxed(recs[i].status, uint32_t{TANDEM_OK});
  }
  for (uint64_t b = 0; b < jobs / kBatch; ++b) {
    tandem_completion_t* rec = &recs[b % kInFlight];
    if (Status s = rt.wait(rec, {}); s != Status::ok) return s;  // the batch that used it is done
    rt::reset_record(rec);
    uint64_t first;
    if (Status s = q.reserve(first, kBatch); s != Status::ok) return s;
    for (uint32_t i = 0; i < kBatch; ++i) {
      tandem_packet_t& pk = q.packet(first + i);
      pk.flags = 0;
      pk.body.dispatch.workload = 0;
      pk.user_data = 0;
      pk.completion = i + 1 == kBatch ? reinterpret_cast<uintptr_t>(rec) : 0;
      q.publish(first + i, abi::make_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_NOP));
    }
    q.notify();
  }
  for (uint32_t i = 0; i < kInFlight; ++i) {
    if (Status s = rt.wait(&recs[i], {}); s != Status::ok) return s;
  }
  return Status::ok;
}

// Jobs per second of one producer thread per queue, all started together.
double throughput(client::Runtime& rt, std::vector<std::unique_ptr<client::Queue>>& queues, uint64_t jobs,
                  const std::vector<int>& cpus) {
  const uint64_t per_producer = jobs / queues.size() / 64 * 64;
  std::atomic<int> failures{0}, ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (size_t p = 0; p < queues.size(); ++p) {
    threads.emplace_back([&, p] {
      bench::ScopedPin pin(cpus[p % cpus.size()]);
      rt.thread_records();  // allocate before the clock starts
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) abi::cpu_relax();
      if (produce(rt, *queues[p], per_producer) != Status::ok) failures.fetch_add(1);
    });
  }
  while (ready.load() < static_cast<int>(queues.size())) std::this_thread::yield();
  const int64_t t0 = tandem::now_ns();
  go.store(true, std::memory_order_release);
  for (auto& t : threads) t.join();
  const double seconds = static_cast<double>(tandem::now_ns() - t0) / 1e9;
  if (failures.load() != 0) throw Error(Status::device_error, "throughput run: some batches failed");
  return static_cast<double>(per_producer * queues.size()) / seconds;
}

// Aggregate jobs per second of `processes` client processes of one daemon, each one producer.
double daemon_throughput(const std::string& socket, unsigned processes, uint64_t jobs) {
  struct Shared {
    std::atomic<int> ready;
    std::atomic<int> go;
    std::atomic<int> failures;
    std::atomic<int64_t> end_ns;
  };
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) throw Error(Status::no_memory, "mmap");
  auto* shared = new (page) Shared{};
  const uint64_t per_process = jobs / processes / 64 * 64;
  std::vector<pid_t> children;
  for (unsigned p = 0; p < processes; ++p) {
    const pid_t pid = fork();
    if (pid == 0) {
      int rc = 0;
      {
        client::RuntimeOptions o;
        o.socket_path = socket;
        auto rt = client::Runtime::open(o);
        auto q = rt ? rt.value()->create_queue(4096) : Result<std::unique_ptr<client::Queue>>(Status::disconnected);
        if (!rt || !q) {
          shared->failures.fetch_add(1);
          shared->ready.fetch_add(1);
          _exit(1);
        }
        rt.value()->thread_records();
        shared->ready.fetch_add(1);
        while (shared->go.load(std::memory_order_acquire) == 0) abi::cpu_relax();
        if (produce(*rt.value(), *q.value(), per_process) != Status::ok) {
          shared->failures.fetch_add(1);
          rc = 1;
        }
        int64_t end = tandem::now_ns(), seen = shared->end_ns.load();
        while (end > seen && !shared->end_ns.compare_exchange_weak(seen, end)) {
        }
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  while (shared->ready.load() < static_cast<int>(processes)) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const int64_t t0 = tandem::now_ns();
  shared->go.store(1, std::memory_order_release);
  for (pid_t c : children) waitpid(c, nullptr, 0);
  const int failures = shared->failures.load();
  const double seconds = static_cast<double>(shared->end_ns.load() - t0) / 1e9;
  munmap(page, 4096);
  if (failures != 0) throw Error(Status::device_error, "daemon throughput: a client process failed");
  return static_cast<double>(per_process * processes) / seconds;
}

Summary summary_of(const std::vector<double>& v) { return bench::summarize(v); }

// --trace-only: what per-job trace records cost (docs/results/tracing.md), without the peers: the no-op
// round trip and one producer's throughput, tracing off and on interleaved, as `tandemd --trace` runs
// them (the dispatcher recording, a collector draining its ring).
void run_trace_cost(const DispatchOptions& o, client::Runtime& rt, client::Queue& queue, const bench::CpuPair& cpus) {
  rt::TraceCollector tracer{rt::TraceSettings{}};
  tracer.attach(static_cast<client::EmbeddedRuntime&>(rt).dispatcher());
  const auto traced = [&](auto measure) {
    tracer.start();
    auto r = measure();
    tracer.stop();
    return r;
  };
  auto measured = bench::interleave(o.rounds, {
      [&] { return noop_round_trips(rt, queue, rt::WaitMode::spin, o.samples, cpus.a); },
      [&] { return traced([&] { return noop_round_trips(rt, queue, rt::WaitMode::spin, o.samples, cpus.a); }); },
  });
  for (auto& m : measured) {
    if (!m) throw Error(m.status(), "a measurement failed: " + m.message());
  }
  const rt::TraceCounters last = tracer.counters();
  std::vector<double> off_tput, on_tput;
  std::vector<std::unique_ptr<client::Queue>> one;
  one.push_back(rt.create_queue(4096).value());
  for (size_t r = 0; r < o.rounds; ++r) {
    off_tput.push_back(throughput(rt, one, o.throughput_jobs, {cpus.a}));
    on_tput.push_back(traced([&] { return throughput(rt, one, o.throughput_jobs, {cpus.a}); }));
  }
  const rt::TraceCounters tput_counters = tracer.counters();
  const Summary off = summary_of(measured[0].value()), on = summary_of(measured[1].value());
  const Summary off_t = summary_of(off_tput), on_t = summary_of(on_tput);
  json j;
  j["noop_rtt_spin_ns"] = off.median;
  j["noop_rtt_spin_ns_min"] = off.min;
  j["noop_rtt_spin_ns_p99"] = off.p99;
  j["noop_rtt_spin_traced_ns"] = on.median;
  j["noop_rtt_spin_traced_ns_min"] = on.min;
  j["noop_rtt_spin_traced_ns_p99"] = on.p99;
  j["throughput_jobs_per_s_1p"] = off_t.median;
  j["throughput_jobs_per_s_1p_traced"] = on_t.median;
  j["trace_records_last_rtt_round"] = last.collected;
  j["trace_records_last_throughput_round"] = tput_counters.collected;
  j["trace_dropped_last_throughput_round"] = tput_counters.dropped_full + tput_counters.dropped_store;
  j["ratios"] = {{"noop_spin_traced_over_untraced", on.median / off.median},
                 {"noop_spin_min_traced_over_untraced", on.min / off.min},
                 {"throughput_1p_untraced_over_traced", off_t.median / on_t.median}};
  j["targets"] = {{"noop_rtt_spin_traced_le_1_2x_untraced", on.median <= 1.2 * off.median}};
  j["cpus"] = {cpus.a, cpus.b};
  j["rounds"] = o.rounds;
  j["samples"] = o.samples;
  if (emit_json_report(j, o.out, o.json_output)) return;
  bench::TextTable t({"measurement", "median ns", "min ns", "p99 ns", "note"});
  t.add_row({"no-op job, spin wait, tracing off", bench::fixed(off.median, 0), bench::fixed(off.min, 0),
             bench::fixed(off.p99, 0), ""});
  t.add_row({"no-op job, spin wait, tracing on", bench::fixed(on.median, 0), bench::fixed(on.min, 0),
             bench::fixed(on.p99, 0), fmt::format("{:.2f}x off (target <= 1.2)", on.median / off.median)});
  fmt::print("{}\n", t.render());
  fmt::print("1-producer throughput: {:.2f} M jobs/s off, {:.2f} M jobs/s on ({:.2f}x); last traced round: {} records "
             "collected, {} dropped\n",
             off_t.median / 1e6, on_t.median / 1e6, off_t.median / on_t.median, tput_counters.collected,
             tput_counters.dropped_full + tput_counters.dropped_store);
}

void run_dispatch(const DispatchOptions& o) {
  const bench::CpuPair cpus = bench::pick_cpu_pair();
  bench::PeerOptions peer;
  peer.samples = o.samples;
  peer.cpu_a = cpus.a;
  peer.cpu_b = cpus.b;
  auto rt = open_dispatch_runtime(cpus.b);
  auto q = rt->create_queue(4096);
  if (!q) throw Error(q.status(), q.message());
  client::Queue& queue = *q.value();

  if (!o.json_output) fmt::print("measuring (client on cpu {}, dispatcher and echo threads on cpu {}; {} rounds)...\n",
                                 cpus.a, cpus.b, o.rounds);
  if (o.trace_only) {
    run_trace_cost(o, *rt, queue, cpus);
    return;
  }
  // Per-job trace records (docs/tracing.md): the same no-op round trip with the dispatcher recording and
  // a collector draining its ring, as `tandemd --trace` runs them.
  rt::TraceCollector tracer{rt::TraceSettings{}};
  tracer.attach(static_cast<client::EmbeddedRuntime&>(*rt).dispatcher());
  rt::TraceCounters traced_counters;
  const auto traced = [&](auto measure) {
    tracer.start();
    auto r = measure();
    tracer.stop();
    const rt::TraceCounters c = tracer.counters();
    traced_counters.collected += c.collected;
    traced_counters.dropped_full += c.dropped_full;
    traced_counters.dropped_store += c.dropped_store;
    return r;
  };
  auto measured = bench::interleave(o.rounds, {
      [&] { quiesce(); return bench::thread_pingpong_rtt(peer); },
      [&] { return noop_round_trips(*rt, queue, rt::WaitMode::spin, o.samples, cpus.a); },
      [&] { return noop_round_trips(*rt, queue, rt::WaitMode::block, o.samples / 4, cpus.a); },
      [&] { quiesce(); return bench::futex_rtt(peer, bench::FutexScope::shared); },
      [&] { return traced([&] { return noop_round_trips(*rt, queue, rt::WaitMode::spin, o.samples, cpus.a); }); },
  });
  for (auto& m : measured) {
    if (!m) throw Error(m.status(), "a measurement failed: " + m.message() + " (" + std::string(to_string(m.status())) + ")");
  }
  auto submit = submit_costs(*rt, queue, o.samples, cpus.a);
  if (!submit) throw Error(submit.status(), submit.message());

  std::vector<std::unique_ptr<client::Queue>> one, two;
  one.push_back(std::move(q).value());
  for (int i = 0; i < 2; ++i) two.push_back(rt->create_queue(4096).value());
  const double tput1 = throughput(*rt, one, o.throughput_jobs, {cpus.a});
  const double tput1_traced = traced([&] { return throughput(*rt, one, o.throughput_jobs, {cpus.a}); });
  const double tput2 = throughput(*rt, two, o.throughput_jobs, {cpus.a, cpus.b});
  one.clear();
  two.clear();
  rt.reset();  // nothing of tandem runs while the peers are measured

  quiesce();
  auto uring = bench::iouring_nop_rtt(peer);
  Result<bench::StarpuResult> starpu(Status::not_accelerated, "skipped (--skip-starpu)");
  if (!o.skip_starpu) {
    bench::PeerOptions sp = peer;
    sp.samples = std::min<size_t>(o.samples, 5'000);
    starpu = bench::starpu_task_costs(sp);
  }

  // Cross-process: the same measurements through tandemd, against a ping-pong between two processes.
  nlohmann::json daemon_json;
  std::vector<std::pair<std::string, Summary>> daemon_rows;
  double daemon_tput = 0;
  if (o.daemon) {
    if (!o.json_output) fmt::print("measuring through tandemd ({} client processes for throughput)...\n", o.daemon_processes);
    DaemonLauncher daemon("[dispatcher]\ncpu = " + std::to_string(cpus.b) + "\nidle_spin_us = 200\n");
    client::RuntimeOptions ro;
    ro.socket_path = daemon.socket();
    auto drt = client::Runtime::open(ro);
    if (!drt) throw Error(drt.status(), "cannot open a daemon session: " + drt.message());
    auto dq = drt.value()->create_queue(4096);
    if (!dq) throw Error(dq.status(), dq.message());
    auto cross = bench::interleave(o.rounds, {
        [&] { quiesce(); return bench::process_pingpong_rtt(peer); },
        [&] { return noop_round_trips(*drt.value(), *dq.value(), rt::WaitMode::spin, o.samples, cpus.a); },
        [&] { return noop_round_trips(*drt.value(), *dq.value(), rt::WaitMode::block, o.samples / 4, cpus.a); },
    });
    for (auto& m : cross) {
      if (!m) throw Error(m.status(), "a daemon measurement failed: " + m.message());
    }
    dq.value().reset();
    drt.value().reset();
    daemon_tput = daemon_throughput(daemon.socket(), o.daemon_processes, o.throughput_jobs);
    const Summary dp = summary_of(cross[0].value()), ds = summary_of(cross[1].value()), db = summary_of(cross[2].value());
    daemon_rows = {{"daemon_pingpong_rtt_ns", dp}, {"daemon_noop_rtt_spin_ns", ds}, {"daemon_noop_rtt_block_ns", db}};
    daemon_json["ratio"] = ds.median / dp.median;
  }

  const Summary pingpong = summary_of(measured[0].value());
  const Summary spin = summary_of(measured[1].value());
  const Summary block = summary_of(measured[2].value());
  const Summary futex = summary_of(measured[3].value());
  const Summary submit_s = summary_of(submit.value());
  const Summary spin_traced = summary_of(measured[4].value());
  json j;
  auto put = [&](const std::string& key, const Summary& s) {
    j[key] = s.median;
    j[key + "_min"] = s.min;
    j[key + "_p99"] = s.p99;
  };
  put("pingpong_rtt_ns", pingpong);
  put("futex_rtt_ns", futex);
  put("noop_rtt_spin_ns", spin);
  put("noop_rtt_block_ns", block);
  put("submit_cost_ns", submit_s);
  j["throughput_jobs_per_s_1p"] = tput1;
  j["throughput_jobs_per_s_2p"] = tput2;
  put("noop_rtt_spin_traced_ns", spin_traced);
  j["throughput_jobs_per_s_1p_traced"] = tput1_traced;
  j["trace_records_collected"] = traced_counters.collected;
  j["trace_records_dropped_ring_full"] = traced_counters.dropped_full;
  j["trace_records_dropped_store_full"] = traced_counters.dropped_store;
  if (uring) put("iouring_nop_rtt_ns", summary_of(uring.value()));
  if (starpu) {
    put("starpu_sync_rtt_ns", summary_of(starpu.value().sync_rtt));
    put("starpu_async_task_ns", summary_of(starpu.value().async_task));
    j["starpu_scheduler"] = starpu.value().scheduler;
  }
  json ratios, targets;
  ratios["noop_spin_over_pingpong"] = spin.median / pingpong.median;
  targets["noop_rtt_spin_le_2x_pingpong"] = spin.median <= 2 * pingpong.median;
  targets["throughput_1p_ge_5M"] = tput1 >= 5e6;
  targets["submit_cost_le_50ns"] = submit_s.median <= 50;
  ratios["noop_spin_traced_over_untraced"] = spin_traced.median / spin.median;
  ratios["throughput_1p_untraced_over_traced"] = tput1 / tput1_traced;
  targets["noop_rtt_spin_traced_le_1_2x_untraced"] = spin_traced.median <= 1.2 * spin.median;
  if (starpu) {
    const double starpu_sync = j["starpu_sync_rtt_ns"].get<double>();
    ratios["starpu_sync_over_noop_spin"] = starpu_sync / spin.median;
    targets["noop_20x_faster_than_starpu_sync"] = starpu_sync >= 20 * spin.median;
  }
  if (o.daemon) {
    for (const auto& [key, sum] : daemon_rows) put(key, sum);
    j["daemon_throughput_jobs_per_s_" + std::to_string(o.daemon_processes) + "proc"] = daemon_tput;
    ratios["daemon_noop_spin_over_daemon_pingpong"] = daemon_json["ratio"];
    targets["daemon_noop_rtt_spin_le_2_5x_daemon_pingpong"] = daemon_json["ratio"].get<double>() <= 2.5;
  }
  j["ratios"] = ratios;
  j["targets"] = targets;
  j["cpus"] = {cpus.a, cpus.b};
  j["rounds"] = o.rounds;
  j["samples"] = o.samples;

  if (emit_json_report(j, o.out, o.json_output)) return;
  bench::TextTable t({"measurement", "median ns", "min ns", "p99 ns", "note"});
  auto row = [&](const std::string& name, const Summary& s, const std::string& note) {
    t.add_row({name, bench::fixed(s.median, 0), bench::fixed(s.min, 0), bench::fixed(s.p99, 0), note});
  };
  row("raw shared-memory ping-pong (reference)", pingpong, "two threads, one line each way");
  row("futex round trip", futex, "two threads");
  row("tandem no-op job, spin wait", spin,
      fmt::format("{:.2f}x ping-pong (target <= 2)", spin.median / pingpong.median));
  row("tandem no-op job, blocking wait", block, fmt::format("{:.2f}x futex", block.median / futex.median));
  row("tandem client CPU per submit", submit_s, "target <= 50 ns");
  row("tandem no-op job, spin wait, traced", spin_traced,
      fmt::format("{:.2f}x untraced (target <= 1.2)", spin_traced.median / spin.median));
  if (uring) row("io_uring NOP round trip", summary_of(uring.value()), "liburing, one thread");
  if (starpu) {
    row("StarPU synchronous empty task", summary_of(starpu.value().sync_rtt),
        fmt::format("{:.1f}x tandem no-op (target >= 20)", j["ratios"]["starpu_sync_over_noop_spin"].get<double>()));
    row("StarPU async, per task", summary_of(starpu.value().async_task), "scheduler " + starpu.value().scheduler);
  } else {
    fmt::print("StarPU: {}\n", starpu.message());
  }
  if (o.daemon) {
    row("raw cross-process ping-pong (reference)", daemon_rows[0].second, "two processes, one shared page");
    row("no-op job through tandemd, spin wait", daemon_rows[1].second,
        fmt::format("{:.2f}x cross-process ping-pong (target <= 2.5)", daemon_json["ratio"].get<double>()));
    row("no-op job through tandemd, blocking wait", daemon_rows[2].second, "");
  }
  fmt::print("{}\n", t.render());
  fmt::print("async no-op throughput: {:.2f} M jobs/s from 1 producer (target >= 5), {:.2f} M jobs/s from 2\n",
             tput1 / 1e6, tput2 / 1e6);
  fmt::print("traced: {:.2f} M jobs/s from 1 producer ({:.2f}x slower); {} records collected, {} dropped (ring full), "
             "{} dropped (store full)\n",
             tput1_traced / 1e6, tput1 / tput1_traced, traced_counters.collected, traced_counters.dropped_full,
             traced_counters.dropped_store);
  if (o.daemon) {
    fmt::print("through tandemd: {:.2f} M jobs/s from {} client processes\n", daemon_tput / 1e6, o.daemon_processes);
  }
}

}  // namespace

void add_dispatch_bench(CLI::App& bench) {
  auto o = std::make_shared<DispatchOptions>();
  CLI::App* cmd = bench.add_subcommand("dispatch", "No-op job round trip, submit cost and throughput vs. ping-pong, "
                                                   "futex, io_uring and StarPU, in one run");
  cmd->add_option("--samples", o->samples, "Round trips per measurement and round")->capture_default_str();
  cmd->add_option("--rounds", o->rounds, "Interleaved rounds of subject and references")->capture_default_str();
  cmd->add_option("--throughput-jobs", o->throughput_jobs, "Jobs per throughput run")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  cmd->add_flag("--json", o->json_output, "Print JSON instead of a table");
  cmd->add_option("--out", o->out, "Also write the JSON to this file")->check(writable_file());
  cmd->add_flag("--skip-starpu", o->skip_starpu, "Leave out the StarPU peer");
  cmd->add_flag("--trace-only", o->trace_only, "Only the cost of per-job trace records: round trip and throughput, "
                                               "tracing off and on interleaved");
  cmd->add_flag("--daemon", o->daemon, "Also measure through a private tandemd: cross-process figures");
  cmd->add_option("--daemon-processes", o->daemon_processes, "Client processes of the daemon throughput run")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  cmd->callback([o] { run_dispatch(*o); });
}

}  // namespace tandem::tools
