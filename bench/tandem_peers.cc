// tandem-peers: measures every peer round trip once, in one run, and prints a table (or JSON).
//
//   build/tandem-peers                     all peers, 10000 samples each
//   build/tandem-peers --peer futex --peer pipe --samples 2000
//   build/tandem-peers --comm-words 1,2,4,8,16     adds pipe/socket round trips per request size
//   build/tandem-peers --rounds 5 --samples 2000   interleaved: A B C A B C ...
//   build/tandem-peers --json

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "support/measure.hpp"
#include "support/measure_json.hpp"
#include "support/peers.hpp"

namespace {

using namespace tandem::bench;

struct Row {
  std::string name;
  std::string key;
  std::optional<Summary> summary;  // empty: failed
  std::string error;
};

Row make_row(std::string name, std::string key, const tandem::Result<Samples>& got) {
  Row row{std::move(name), std::move(key), std::nullopt, {}};
  if (got.ok()) {
    row.summary = summarize(got.value());
  } else {
    row.error = std::string(tandem::to_string(got.status())) + ": " + got.message();
  }
  return row;
}

// reference_key empty: no ratio column.
std::string table_of(const std::vector<Row>& rows, const std::string& reference_key) {
  std::optional<double> reference;
  for (const Row& r : rows) {
    if (r.key == reference_key && r.summary) reference = r.summary->median;
  }
  std::vector<std::string> header{"peer", "median ns", "min ns", "p99 ns", "mean ns", "samples"};
  if (!reference_key.empty()) header.push_back("x pingpong");
  TextTable table(header);
  for (const Row& r : rows) {
    if (!r.summary) {
      table.add_row({r.name, "failed"});
      continue;
    }
    const Summary& s = *r.summary;
    std::vector<std::string> cells{r.name,         fixed(s.median), fixed(s.min), fixed(s.p99),
                                   fixed(s.mean), std::to_string(s.samples)};
    if (!reference_key.empty()) cells.push_back(reference ? fixed(s.median / *reference, 2) : "-");
    table.add_row(std::move(cells));
  }
  std::string out = table.render();
  for (const Row& r : rows) {
    if (!r.summary) out += r.name + " failed: " + r.error + "\n";
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tandem-peers: round-trip times of tandem's benchmark references, measured in one run"};
  PeerOptions options;
  std::vector<std::string> only;
  std::vector<std::size_t> comm_words;
  bool json = false;
  std::size_t rounds = 1;
  bool no_pin = false;
  long timeout_ms = options.timeout.count();
  StarpuOptions starpu;
  app.add_option("--samples", options.samples, "timed samples per peer")->capture_default_str();
  app.add_option("--warmup", options.warmup, "untimed round trips first")->capture_default_str();
  app.add_option("--batch", options.round_trips_per_sample, "round trips per sample (mean of a batch)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout-ms", timeout_ms, "longest wait for one reply")->capture_default_str();
  app.add_flag("--no-pin", no_pin, "do not pin the two sides to two CPUs");
  app.add_option("--cpu-a", options.cpu_a, "CPU of the measuring side (default: first usable)");
  app.add_option("--cpu-b", options.cpu_b, "CPU of the echoing side (default: second usable)");
  std::string names;
  for (const PeerInfo& p : all_peers()) names += (names.empty() ? "" : ", ") + std::string(p.name);
  app.add_option("--peer", only, "measure only these peers: " + names);
  app.add_option("--comm-words", comm_words,
                 "also measure pipe and Unix-socket round trips sending these many 8-byte words")
      ->delimiter(',');
  app.add_option("--starpu-batches", starpu.async_batches, "StarPU async: batches")->capture_default_str();
  app.add_option("--starpu-tasks", starpu.tasks_per_batch, "StarPU async: tasks per batch")
      ->capture_default_str();
  app.add_option("--starpu-sched", starpu.scheduler, "StarPU scheduling policy (default: StarPU's)");
  app.add_option("--rounds", rounds,
                 "run every figure this many times, in turn, and pool the samples (drift hits all alike)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "print JSON instead of a table");
  CLI11_PARSE(app, argc, argv);
  options.pin = !no_pin;
  options.timeout = std::chrono::milliseconds(timeout_ms);

  try {
    std::vector<const PeerInfo*> selected;
    for (const PeerInfo& p : all_peers()) {
      const bool wanted = only.empty() || std::find(only.begin(), only.end(), p.name) != only.end();
      if (wanted && (peer_available(p.peer) || !only.empty())) selected.push_back(&p);
    }
    for (const std::string& name : only) {
      bool known = false;
      for (const PeerInfo& p : all_peers()) known = known || p.name == name;
      if (!known) {
        std::fprintf(stderr, "tandem-peers: unknown peer '%s' (known: %s)\n", name.c_str(), names.c_str());
        return 2;
      }
    }

    // Every figure is one Measurement; all of them run in turn, `rounds` times over (see interleave).
    struct Job {
      std::string name;
      std::string key;
      bool comm;  // part of the request-size table
    };
    std::vector<Job> jobs;
    std::vector<Measurement> measurements;
    std::optional<StarpuResult> starpu_seen;  // scheduler and workers, for the header
    for (const PeerInfo* p : selected) {
      jobs.push_back({std::string(p->name), std::string(p->key), false});
      if (p->peer == Peer::starpu_sync || p->peer == Peer::starpu_async) {
        const bool sync = p->peer == Peer::starpu_sync;
        measurements.push_back([&, sync]() -> tandem::Result<Samples> {
          StarpuOptions half = starpu;
          half.measure_sync = sync;
          half.measure_async = !sync;
          tandem::Result<StarpuResult> got = starpu_task_costs(options, half);
          if (!got.ok()) return {got.status(), got.message()};
          starpu_seen = got.value();
          return sync ? std::move(got->sync_rtt) : std::move(got->async_task);
        });
      } else {
        const Peer peer = p->peer;
        measurements.push_back([&, peer] { return measure_peer(peer, options); });
      }
    }
    for (std::size_t words : comm_words) {
      for (Channel channel : {Channel::pipe, Channel::unix_stream}) {
        jobs.push_back({std::string(to_string(channel)) + " " + std::to_string(words) + "w",
                        std::string(to_string(channel)) + "_rtt_" + std::to_string(words) + "w_ns", true});
        measurements.push_back([&, channel, words] { return channel_rtt(channel, options, words); });
      }
    }
    if (!json) {
      std::fprintf(stderr, "measuring %zu figures, %zu round(s) ...\n", measurements.size(), rounds);
    }
    const std::vector<tandem::Result<Samples>> results = interleave(rounds, measurements);
    std::vector<Row> rows;
    std::vector<Row> comm_rows;
    for (std::size_t i = 0; i < jobs.size(); ++i) {
      (jobs[i].comm ? comm_rows : rows).push_back(make_row(jobs[i].name, jobs[i].key, results[i]));
    }

    const TickClock& clock = TickClock::get();
    const CpuPair cpus = pick_cpu_pair();
    bool failed = false;
    for (const Row& r : rows) failed = failed || !r.summary;
    for (const Row& r : comm_rows) failed = failed || !r.summary;

    if (json) {
      nlohmann::json out;
      out["clock"] = {{"tsc", clock.uses_tsc()}, {"ticks_per_ns", clock.ticks_per_ns()}};
      out["cpus"] = {{"a", options.cpu_a >= 0 ? options.cpu_a : cpus.a},
                     {"b", options.cpu_b >= 0 ? options.cpu_b : cpus.b},
                     {"pinned", options.pin}};
      nlohmann::json summaries = nlohmann::json::object();
      nlohmann::json errors = nlohmann::json::object();
      for (const auto* list : {&rows, &comm_rows}) {
        for (const Row& r : *list) {
          if (r.summary) {
            out[r.key] = r.summary->median;
            summaries[r.key] = *r.summary;
          } else {
            errors[r.key] = r.error;
          }
        }
      }
      if (starpu_seen) {
        out["starpu"] = {{"scheduler", starpu_seen->scheduler}, {"workers", starpu_seen->workers}};
      }
      out["summaries"] = summaries;
      if (!errors.empty()) out["errors"] = errors;
      std::printf("%s\n", out.dump(2).c_str());
    } else {
      std::printf("clock: %s (%.3f ticks/ns); CPUs: %s\n", clock.uses_tsc() ? "TSC" : "CLOCK_MONOTONIC",
                  clock.ticks_per_ns(),
                  options.pin ? (std::to_string(options.cpu_a >= 0 ? options.cpu_a : cpus.a) + " (measuring), " +
                                 std::to_string(options.cpu_b >= 0 ? options.cpu_b : cpus.b) + " (echoing)")
                                    .c_str()
                              : "not pinned");
      if (starpu_seen) {
        std::printf("StarPU: scheduler %s, %u worker(s)\n", starpu_seen->scheduler.c_str(),
                    starpu_seen->workers);
      }
      std::printf("%s", table_of(rows, "pingpong_rtt_ns").c_str());
      if (!comm_rows.empty()) {
        std::printf("\nrequest of N 8-byte words, 1 word back:\n%s",
                    table_of(comm_rows, "").c_str());
      }
    }
    return failed ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tandem-peers: %s\n", e.what());
    return 1;
  }
}
