// `tandem top`: tandemd's figures refreshed every second in the terminal (plain ANSI: the screen is
// cleared and redrawn), with the rates since the last refresh, for a person watching the daemon.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <thread>

#include "base/clock.hpp"
#include "commands.hpp"
#include "output.hpp"
#include "status_report.hpp"

namespace tandem::tools {

namespace {

struct TopOptions {
  std::string socket;
  double interval_s = 1.0;
  uint32_t iterations = 0;  // 0: until interrupted
};

// at(): a report without them (another tandemd version) throws rather than reads a missing key.
uint64_t completed_jobs(const nlohmann::json& j) { return j.at("dispatcher").at("completions").get<uint64_t>(); }
uint64_t packets(const nlohmann::json& j) { return j.at("dispatcher").at("packets").get<uint64_t>(); }

}  // namespace

void add_top_command(CLI::App& app) {
  auto o = std::make_shared<TopOptions>();
  CLI::App* cmd = app.add_subcommand("top", "A live view of tandemd: slots, functions, sessions and rates, refreshed");
  cmd->add_option("--socket", o->socket, "tandemd's socket (default: $TANDEM_SOCKET, else the default socket)");
  cmd->add_option("--interval", o->interval_s, "Seconds between refreshes")->check(number_in(0.05, 3600.0));
  cmd->add_option("-n,--iterations", o->iterations, "Stop after this many refreshes (default: until interrupted)");
  cmd->callback([o] {
    const std::string socket = socket_from(o->socket);
    const bool tty = isatty(STDOUT_FILENO) != 0;
    nlohmann::json last;
    int64_t last_ns = 0;
    for (uint32_t i = 0; o->iterations == 0 || i < o->iterations; ++i) {
      if (i > 0) std::this_thread::sleep_for(std::chrono::duration<double>(o->interval_s));
      const nlohmann::json j = fetch_status(socket);
      const int64_t now = now_ns();
      if (tty) fmt::print("\x1b[H\x1b[2J");  // home, clear: a redraw in place
      if (last_ns != 0) {
        const double dt = static_cast<double>(now - last_ns) / 1e9;
        uint64_t jobs = 0, packets_sent = 0;
        try {
          jobs = completed_jobs(j) - completed_jobs(last);
          packets_sent = packets(j) - packets(last);
        } catch (const nlohmann::json::exception& e) {
          throw Error(Status::protocol_error, "tandemd at " + socket +
                                                  "'s status lacks what this tandem reads (a tandemd of another version?): " +
                                                  e.what());
        }
        fmt::print("tandem top: {:.0f} jobs/s completed, {:.0f} packets/s (over {:.2f} s; Ctrl-C quits)\n\n",
                   static_cast<double>(jobs) / dt, static_cast<double>(packets_sent) / dt, dt);
      } else {
        fmt::print("tandem top: rates from the next refresh (every {:.2f} s; Ctrl-C quits)\n\n", o->interval_s);
      }
      print_status(j);
      if (!tty) fmt::print("\n");
      std::fflush(stdout);
      last = j;
      last_ns = now;
    }
  });
}

}  // namespace tandem::tools
