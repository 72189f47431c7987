// `tandem status [--json]`: what tandemd is doing — devices and their slots, sessions, queues, per-function demand
// and queue figures, the TLB — in the manner of `nvidia-smi` or `xrt-smi examine`.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>
#include <cstring>

#include "client/learned_costs.hpp"
#include "commands.hpp"
#include "funcs/function.hpp"
#include "status_report.hpp"
#include "rt/control_channel.hpp"
#include "support/measure.hpp"

namespace tandem::tools {

std::string socket_from(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("TANDEM_SOCKET"); env != nullptr && *env != '\0') return env;
  return rt::default_socket_path();
}

rt::UniqueFd connect_daemon(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) throw Error(Status::invalid_argument, "socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  rt::UniqueFd sock(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int error = errno;
    struct stat st {};
    if (stat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      throw Error(Status::disconnected, "no tandemd at " + path + " (it is not a socket)");
    }
    throw Error(Status::disconnected, "no tandemd at " + path + " (" + std::strerror(error) + ")");
  }
  return sock;
}

nlohmann::json fetch_status(const std::string& path) {
  rt::UniqueFd sock = connect_daemon(path);
  if (rt::send_frame(sock.get(), abi::control::MessageType::status, 1, nullptr, 0) != Status::ok) {
    throw Error(Status::io_error, "cannot ask tandemd at " + path + " for its status: " + std::strerror(errno));
  }
  auto reply = rt::recv_frame(sock.get(), 5'000'000'000);
  if (!reply || reply.value().type() != abi::control::MessageType::status_reply) {
    throw Error(Status::protocol_error, "tandemd sent no status: " + reply.message());
  }
  rt::send_frame(sock.get(), abi::control::MessageType::bye, 2, nullptr, 0);
  const auto& p = reply.value().payload;
  nlohmann::json report = nlohmann::json::parse(std::string(reinterpret_cast<const char*>(p.data()), p.size()), nullptr, false);
  if (report.is_discarded() || !report.is_object()) {
    throw Error(Status::protocol_error,
                "tandemd at " + path + " sent a status that is not a JSON object (a tandemd of another version?)");
  }
  return report;
}

namespace {

std::string percent(double v) { return bench::fixed(100.0 * v, 1) + "%"; }

}  // namespace

void print_learned_costs(const std::vector<std::string>& device_kinds) {
  for (const std::string& kind : device_kinds) {
    const std::string path = client::learned_costs_path(kind);
    std::string warning;
    const std::optional<client::Calibration> learnt = client::load_learned_costs(path, kind, warning);
    if (!warning.empty()) fmt::print("{}\n\n", warning);
    if (!learnt) continue;
    bench::TextTable t({"function", "X_c (units/s)", "X_a (units/s)", "D_a (us)", "O_c (ns)", "calls", "jobs"});
    for (const funcs::FunctionInfo* fn : funcs::all_functions()) {
      const auto& p = learnt->functions[fn->id];
      if (!p) continue;
      const client::SampleCounts& n = learnt->samples[fn->id];
      t.add_row({std::string(fn->name), fmt::format("{:.3g}", p->xc), fmt::format("{:.3g}", p->xa),
                 bench::fixed(p->da * 1e6, 2), bench::fixed(p->oc * 1e9, 0), std::to_string(n.cpu),
                 std::to_string(n.jobs)});
    }
    fmt::print("learnt cost figures on {} (client runtimes' self-calibration, as last saved in {}):\n{}\n", kind,
               path, t.render());
  }
}

namespace {

// On a copy taken by value: operator[] of a mutable json makes a missing key null, which get<>() refuses
// with an exception; the const operator[] of a missing key is undefined behaviour (a tandemd of
// another version may send another report).
void print_status_fields(nlohmann::json j) {
  auto& d = j["daemon"];
  fmt::print("tandemd pid {}  socket {}  up {:.1f} s  config {}\n", d["pid"].get<int>(), d["socket"].get<std::string>(),
             d["uptime_s"].get<double>(), d["config"].get<std::string>());
  fmt::print("slots {}  sessions now {} (served {})  protocol errors {}\n\n", j["slots"].size(), j["sessions"].size(),
             d["sessions_served"].get<uint64_t>(), d["protocol_errors"].get<uint64_t>());
  // Slots grouped by device, as tandemd numbers them.
  for (auto& dev : j["devices"]) {
    fmt::print("device {} ({}): {}\n", dev["name"].get<std::string>(), dev["kind"].get<std::string>(),
               dev["description"].get<std::string>());
    if (dev.contains("found")) {
      fmt::print("found on this machine:\n");
      for (auto& line : dev["found"]) fmt::print("  {}\n", line.get<std::string>());
    }
    if (dev.contains("activity")) fmt::print("{}\n", dev["activity"].get<std::string>());
    if (const uint64_t largest = dev.value("max_job_buffer_bytes", uint64_t{0}); largest > 0) {
      fmt::print("largest buffer of one job: {} MiB (clients make no larger job)\n", bench::fixed(static_cast<double>(largest) / (1 << 20), 1));
    }
    bench::TextTable slots({"slot", "state", "function", "jobs done", "utilization", "health"});
    for (auto& s : dev["slots"]) {
      const std::string health = s["in_service"].get<bool>() ? (s.contains("last_error") ? "last error: " + s["last_error"].get<std::string>() : "ok")
                                                            : "OUT OF SERVICE: " + s.value("last_error", std::string{});
      slots.add_row({std::to_string(s["slot"].get<int>()), s["state"].get<std::string>(), s["function"].get<std::string>(),
                     std::to_string(s["jobs_done"].get<uint64_t>()), percent(s["utilization"].get<double>()), health});
    }
    fmt::print("{}\n", slots.render());
    if (dev.contains("models") && !dev["models"].empty()) {
      bool copied = false;
      for (auto& m : dev["models"]) copied = copied || m.contains("copied_da_us");
      std::vector<std::string> header = {"function", "X_a (units/s)", "D_a (us)", "reconfiguration (us)"};
      if (copied) header.insert(header.end(), {"X_a copied (units/s)", "D_a copied (us)"});
      bench::TextTable models(header);
      // JSON has no infinity (a configured figure may be): such a figure arrives as null.
      const auto number = [](const nlohmann::json& v) { return v.is_number() ? v.get<double>() : INFINITY; };
      for (auto& m : dev["models"]) {
        std::vector<std::string> row = {m["function"].get<std::string>(), fmt::format("{:.3g}", number(m["xa_units_per_s"])),
                                        bench::fixed(number(m["da_us"]), 1), bench::fixed(number(m["reconfig_us"]), 1)};
        if (copied) {
          row.push_back(m.contains("copied_da_us") ? fmt::format("{:.3g}", number(m["copied_xa_units_per_s"])) : "-");
          row.push_back(m.contains("copied_da_us") ? bench::fixed(number(m["copied_da_us"]), 1) : "-");
        }
        models.add_row(row);
      }
      fmt::print("the device's figures per function{}:\n{}\n",
                 copied ? " (in place, and with every buffer copied: clients choose between the two)" : "", models.render());
    }
  }
  if (!j["sessions"].empty()) {
    bench::TextTable sessions({"asid", "pid", "uid", "queues", "regions", "registered", "in calls", "connected"});
    for (auto& s : j["sessions"]) {
      sessions.add_row({std::to_string(s["asid"].get<uint32_t>()), std::to_string(s["pid"].get<int>()),
                        std::to_string(s["uid"].get<uint32_t>()), std::to_string(s["queues"].get<int>()),
                        std::to_string(s["regions"].get<int>()),
                        bench::fixed(s["registered_bytes"].get<double>() / (1 << 20), 1) + " MiB",
                        std::to_string(s.value("busy_callers", 0u)),
                        bench::fixed(s["connected_s"].get<double>(), 1) + " s"});
    }
    fmt::print("{}\n", sessions.render());
  }
  if (!j["functions"].empty()) {
    bench::TextTable fns({"function", "accel", "submitted", "completed", "queued", "D_q (us)", "utilization",
                          "demand", "requests"});
    for (auto& f : j["functions"]) {
      const double dq = f["queue_wait_us"].get<double>();
      fns.add_row({f["function"].get<std::string>(), std::to_string(f["accelerators"].get<int>()),
                   std::to_string(f["submitted_jobs"].get<uint64_t>()), std::to_string(f["completed_jobs"].get<uint64_t>()),
                   std::to_string(f["queued_jobs"].get<uint32_t>()), dq < 0 ? "inf" : bench::fixed(dq, 2),
                   percent(f["utilization"].get<double>()), bench::fixed(f["demand"].get<double>(), 0),
                   std::to_string(f["demand_requests"].get<uint64_t>())});
    }
    fmt::print("{}\n", fns.render());
  }
  if (j.contains("access") && !j["access"].empty()) {
    bench::TextTable acc({"function", "method", "jobs", "host MB", "local MB", "device s", "energy J"});
    for (auto& a : j["access"]) {
      acc.add_row({a["function"].get<std::string>(), a["method"].get<std::string>(),
                   std::to_string(a["jobs"].get<uint64_t>()), bench::fixed(a["host_bytes"].get<double>() / 1e6, 2),
                   bench::fixed(a["local_bytes"].get<double>() / 1e6, 2), bench::fixed(a["device_s"].get<double>(), 4),
                   bench::fixed(a["energy_j"].get<double>(), 4)});
    }
    fmt::print("data access and energy (device side, modelled):\n{}\n", acc.render());
  }
  if (j.contains("local_memory")) {
    auto& l = j["local_memory"];
    auto& c = j["copy_engines"];
    fmt::print("device-local memory on {}: {:.2f} of {:.0f} MiB in {} buffers; copy engines: {} transfers, {:.2f} MB "
               "in, {:.2f} MB out, {:.2f} MB within\n\n",
               l["device"].get<std::string>(), l["used_bytes"].get<double>() / (1 << 20),
               l["capacity_bytes"].get<double>() / (1 << 20), l["buffers"].get<uint32_t>(), c["transfers"].get<uint64_t>(),
               c["bytes_to_device"].get<double>() / 1e6, c["bytes_from_device"].get<double>() / 1e6,
               c["bytes_on_device"].get<double>() / 1e6);
  }
  if (j.contains("device_tlb")) {
    bench::TextTable dt({"session / function", "mode", "hits", "walks", "faults", "hit rate"});
    size_t rows = 0;
    for (auto& e : j["device_tlb"]["sessions"]) {
      dt.add_row({"session " + std::to_string(e["asid"].get<uint32_t>()), e["address_mode"].get<std::string>(),
                  std::to_string(e["hits"].get<uint64_t>()), std::to_string(e["walks"].get<uint64_t>()),
                  std::to_string(e["faults"].get<uint64_t>()), percent(e["hit_rate"].get<double>())});
      ++rows;
    }
    for (auto& e : j["device_tlb"]["functions"]) {
      dt.add_row({e["function"].get<std::string>(), "", std::to_string(e["hits"].get<uint64_t>()),
                  std::to_string(e["walks"].get<uint64_t>()), std::to_string(e["faults"].get<uint64_t>()),
                  percent(e["hit_rate"].get<double>())});
      ++rows;
    }
    if (rows > 0) fmt::print("device TLB (PHASE/V translations, page walks, faults served):\n{}\n", dt.render());
  }
  std::vector<std::string> kinds;
  for (auto& dev : j["devices"]) {
    const std::string kind = dev["kind"].get<std::string>();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  }
  print_learned_costs(kinds);
  auto& t = j["tlb"];
  auto& x = j["dispatcher"];
  fmt::print("TLB: {} hits, {} misses (hit rate {}), {} faults, {} flushes\n", t["hits"].get<uint64_t>(),
             t["misses"].get<uint64_t>(), percent(t["hit_rate"].get<double>()), t["faults"].get<uint64_t>(),
             t["flushes"].get<uint64_t>());
  fmt::print("dispatcher: {} packets, {} jobs, {} completions, {} rejected, {} dropped, {} in flight, "
             "max lateness {:.1f} us\n",
             x["packets"].get<uint64_t>(), x["jobs_started"].get<uint64_t>(), x["completions"].get<uint64_t>(),
             x["rejected"].get<uint64_t>(), x["dropped"].get<uint64_t>(), x["jobs_in_flight"].get<uint32_t>(),
             x["max_lateness_ns"].get<double>() / 1e3);
  if (j.contains("trace")) {
    auto& tr = j["trace"];
    fmt::print("trace: {}, {} records held, {} collected, dropped {} (ring full) {} (store full) {} (no ring)\n",
               tr["enabled"].get<bool>() ? "on" : "off", tr["records"].get<uint64_t>(), tr["collected"].get<uint64_t>(),
               tr["dropped_ring_full"].get<uint64_t>(), tr["dropped_store_full"].get<uint64_t>(),
               tr["dropped_no_ring"].get<uint64_t>());
  }
}

}  // namespace

void print_status(const nlohmann::json& report) {
  try {
    print_status_fields(report);
  } catch (const nlohmann::json::exception& e) {
    throw Error(Status::protocol_error,
                std::string("tandemd's status lacks what this tandem reads (a tandemd of another version?): ") + e.what());
  }
}

void add_status_commands(CLI::App& app) {
  auto socket = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("status", "Show what tandemd is doing: slots, sessions, queues, demand, TLB");
  cmd->add_option("--socket", *socket, "tandemd's socket (default: $TANDEM_SOCKET, else the default socket)");
  cmd->add_flag("--json", *json, "Print the daemon's JSON report");
  cmd->callback([socket, json] {
    const nlohmann::json j = fetch_status(socket_from(*socket));
    if (*json) {
      fmt::print("{}\n", j.dump(2));
    } else {
      print_status(j);
    }
  });
}

}  // namespace tandem::tools
