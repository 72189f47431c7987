// `tandem trace start|stop|status|export|report`: per-job traces of a running tandemd (docs/tracing.md).
// The daemon keeps what its dispatcher and its sessions' client threads recorded; export asks it for
// a dump (a memfd) and writes Chrome/Perfetto JSON, CSV or the raw dump; report prints the latency
// breakdown per function and access method and plots it as stacked bars.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include "abi/control.hpp"
#include "client/trace_export.hpp"
#include "commands.hpp"
#include "config/text_file.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "rt/control_channel.hpp"
#include "rt/trace.hpp"
#include "status_report.hpp"

namespace tandem::tools {

namespace {

using abi::control::MessageType;

// One request to the daemon and its reply (an error reply becomes tandem::Error).
rt::Frame ask(const std::string& socket, MessageType type, const void* payload, size_t bytes, MessageType expect) {
  rt::UniqueFd sock = connect_daemon(socket);
  if (rt::send_frame(sock.get(), type, 1, payload, bytes) != Status::ok) throw Error(Status::io_error, "cannot reach tandemd");
  auto reply = rt::recv_frame(sock.get(), 30'000'000'000);
  if (!reply) throw Error(reply.status(), "tandemd did not answer: " + reply.message());
  rt::Frame f = std::move(reply).value();
  if (f.type() == MessageType::error) {
    const auto e = f.prefix_as<abi::control::ErrorReply>();
    const size_t skip = sizeof(abi::control::ErrorReply);
    const std::string text = f.payload.size() > skip ? std::string(reinterpret_cast<const char*>(f.payload.data()) + skip,
                                                                   f.payload.size() - skip)
                                                     : std::string();
    throw Error(from_wire(e.status), "tandemd: " + text);
  }
  if (f.type() != expect) throw Error(Status::protocol_error, "tandemd sent an unexpected reply (an older daemon?)");
  rt::send_frame(sock.get(), MessageType::bye, 2, nullptr, 0);
  return f;
}

abi::control::TraceState control(const std::string& socket, abi::control::TraceOp op) {
  abi::control::TraceControl req;
  req.op = static_cast<uint32_t>(op);
  return ask(socket, MessageType::trace_control, &req, sizeof req, MessageType::trace_state)
      .as<abi::control::TraceState>();
}

void print_state(const abi::control::TraceState& s) {
  fmt::print("tracing {}: {} records held, {} collected; dropped {} (ring full), {} (store full), {} (no ring left), "
             "{} (corrupt)\n",
             s.enabled ? "on" : "off", s.records, s.collected, s.dropped_full, s.dropped_store, s.dropped_unclaimed,
             s.dropped_corrupt);
}

// The daemon's records so far (`clear`: it forgets them).
rt::TraceFile fetch_dump(const std::string& socket, bool clear, std::vector<std::byte>* raw) {
  abi::control::TraceDumpRequest req;
  req.clear = clear ? 1 : 0;
  rt::Frame f = ask(socket, MessageType::trace_dump, &req, sizeof req, MessageType::trace_dump_ok);
  const auto state = f.as<abi::control::TraceState>();
  if (!f.fd.valid()) throw Error(Status::protocol_error, "tandemd sent no dump");
  struct stat st {};
  if (fstat(f.fd.get(), &st) != 0 || static_cast<uint64_t>(st.st_size) < state.dump_bytes || state.dump_bytes == 0) {
    throw Error(Status::protocol_error, "the dump is smaller than announced");
  }
  auto mapping = rt::map_fd(f.fd.get(), state.dump_bytes, 0, false);
  if (!mapping) throw Error(mapping.status(), "cannot map the dump: " + mapping.message());
  const std::span<const std::byte> bytes(static_cast<const std::byte*>(mapping.value()->address), state.dump_bytes);
  auto file = rt::parse_dump(bytes);
  if (!file) throw Error(file.status(), file.message());
  if (raw != nullptr) raw->assign(bytes.begin(), bytes.end());
  return std::move(file).value();
}

// A dump saved by `export --format raw`.
rt::TraceFile read_dump(const std::string& path) {
  const std::string text = config::read_text_file(path, "trace dump");
  const std::vector<char> data(text.begin(), text.end());
  auto file = rt::parse_dump({reinterpret_cast<const std::byte*>(data.data()), data.size()});
  if (!file) throw Error(file.status(), path + ": " + file.message());
  return std::move(file).value();
}

void print_counts(const rt::TraceFile& f) {
  size_t jobs = 0, calls = 0;
  for (const auto& r : f.records) {
    jobs += r.kind == static_cast<uint16_t>(abi::trace::Kind::job) ? 1 : 0;
    calls += r.kind == static_cast<uint16_t>(abi::trace::Kind::call) ? 1 : 0;
  }
  const abi::trace::DumpHeader& h = f.header;
  std::fprintf(stderr, "%zu records (%zu jobs, %zu calls); dropped %" PRIu64 " (ring full), %" PRIu64
                       " (store full), %" PRIu64 " (no ring left)\n",
               f.records.size(), jobs, calls, h.dropped_full, h.dropped_store, h.dropped_unclaimed);
}

struct ExportOptions {
  std::string socket, format = "perfetto", output, from;
  bool clear = false;
};

struct ReportOptions {
  std::string socket, from, out_dir;
  bool no_plot = false;
};

// The breakdown of `f` printed, and with `dir`, breakdown.csv and its plot written there.
void report_on(const rt::TraceFile& f, const std::string& dir, bool plot) {
  const client::Breakdown b = client::breakdown(f);
  fmt::print("{}", client::breakdown_text(b, f));
  if (dir.empty()) return;
  const OutputDir out(dir);
  const std::string csv = dir + "/breakdown.csv";
  write_file(csv, client::breakdown_csv(b));
  std::fprintf(stderr, "wrote %s\n", csv.c_str());
  if (plot && run_plot("plot_breakdown.py", {csv, dir + "/breakdown.png"})) {
    std::fprintf(stderr, "wrote %s/breakdown.png\n", dir.c_str());
  }
}

}  // namespace

void write_trace_outputs(const std::string& socket_path, const std::string& dir) {
  const rt::TraceFile f = fetch_dump(socket_path, false, nullptr);
  const OutputDir out(dir);
  write_file(dir + "/trace.json", client::perfetto_json(f));
  write_file(dir + "/jobs.csv", client::jobs_csv(f));
  write_file(dir + "/calls.csv", client::calls_csv(f));
  std::fprintf(stderr, "wrote %s/trace.json (open it at ui.perfetto.dev), jobs.csv, calls.csv\n", dir.c_str());
  report_on(f, dir, true);
}

void add_trace_commands(CLI::App& app) {
  CLI::App* trace = app.add_subcommand("trace", "Per-job traces of a running tandemd: start, stop, export, report");
  trace->require_subcommand(1);
  auto socket = std::make_shared<std::string>();
  const auto simple = [&](const char* name, const char* help, abi::control::TraceOp op) {
    CLI::App* cmd = trace->add_subcommand(name, help);
    cmd->add_option("--socket", *socket, "tandemd's socket (default: $TANDEM_SOCKET, else the default socket)");
    cmd->callback([socket, op] { print_state(control(socket_from(*socket), op)); });
  };
  simple("start", "Start recording (forgets the records of an earlier trace)", abi::control::TraceOp::start);
  simple("stop", "Stop recording (the records stay until exported with --clear or the next start)",
         abi::control::TraceOp::stop);
  simple("status", "Whether tandemd records, and how many records it holds or dropped", abi::control::TraceOp::query);

  auto ex = std::make_shared<ExportOptions>();
  CLI::App* exp = trace->add_subcommand("export", "Write the records tandemd holds: Perfetto JSON, CSV or the raw dump");
  exp->add_option("--socket", ex->socket, "tandemd's socket (default: $TANDEM_SOCKET, else the default socket)");
  exp->add_option("--format", ex->format, "perfetto (Chrome trace JSON for ui.perfetto.dev), csv (one row per job; "
                                          "calls in OUTPUT.calls.csv) or raw (the dump, for `trace report --from`)")
      ->check(CLI::IsMember({"perfetto", "csv", "raw"}));
  exp->add_option("-o,--output", ex->output, "Output file")->required();
  exp->add_option("--from", ex->from, "Convert a raw dump instead of asking tandemd");
  exp->add_flag("--clear", ex->clear, "tandemd forgets what it hands out");
  exp->callback([ex] {
    // Every output checked before tandemd is asked: with --clear it forgets the records it hands out.
    check_output_file(ex->output);
    if (ex->format == "csv") check_output_file(ex->output + ".calls.csv");
    std::vector<std::byte> raw;
    const bool cleared = ex->from.empty() && ex->clear;
    const rt::TraceFile f = ex->from.empty() ? fetch_dump(socket_from(ex->socket), ex->clear, &raw) : read_dump(ex->from);
    try {
      if (ex->format == "perfetto") {
        write_file(ex->output, client::perfetto_json(f));
      } else if (ex->format == "csv") {
        write_file(ex->output, client::jobs_csv(f));
        write_file(ex->output + ".calls.csv", client::calls_csv(f));
      } else {
        if (raw.empty()) {
          raw.resize(rt::dump_size(f));
          rt::write_dump(f, raw);
        }
        write_file(ex->output, {reinterpret_cast<const char*>(raw.data()), raw.size()});
      }
    } catch (const Error& e) {
      if (!cleared) throw;
      // The write failed after the check (a full disk): tandemd no longer holds the records, so the
      // raw dump goes to the temporary folder, from which `trace export --from` converts it.
      const std::string kept =
          (std::filesystem::temp_directory_path() / fmt::format("tandem-trace-{}.raw", getpid())).string();
      try {
        write_file(kept, {reinterpret_cast<const char*>(raw.data()), raw.size()});
      } catch (const Error&) {
        throw Error(e.status(), std::string(e.what()) + "; tandemd has forgotten these records (--clear)");
      }
      throw Error(e.status(), std::string(e.what()) + "; tandemd has forgotten these records (--clear): they are kept in " +
                                  kept + " (tandem trace export --from " + kept + ")");
    }
    print_counts(f);
    std::fprintf(stderr, "wrote %s\n", ex->output.c_str());
  });

  auto rep = std::make_shared<ReportOptions>();
  CLI::App* report = trace->add_subcommand("report", "Latency breakdown per function and access method (median, p99 per phase)");
  report->add_option("--socket", rep->socket, "tandemd's socket (default: $TANDEM_SOCKET, else the default socket)");
  report->add_option("--from", rep->from, "Report on a raw dump (`trace export --format raw`) instead of asking tandemd");
  report->add_option("-o,--out-dir", rep->out_dir, "Also write breakdown.csv and breakdown.png (stacked bars) here");
  report->add_flag("--no-plot", rep->no_plot, "Write the CSV only");
  report->callback([rep] {
    const rt::TraceFile f = rep->from.empty() ? fetch_dump(socket_from(rep->socket), false, nullptr) : read_dump(rep->from);
    report_on(f, rep->out_dir, !rep->no_plot);
  });
}

}  // namespace tandem::tools
