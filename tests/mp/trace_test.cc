// Tracing and metrics of a real tandemd (docs/tracing.md): known jobs from a client process, exported
// by the real `tandem trace export` and checked by a parser of the file (tests/python/check_perfetto.py);
// /metrics parsed by the official Prometheus parser and compared with `tandem status --json`
// (tests/python/check_metrics.py).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "mp_util.hpp"
#include "test_util.hpp"
#include "rt/completion.hpp"

namespace tandem {
namespace {

using testing::DaemonProcess;
using testing::run_noops;

std::string quoted(const std::string& s) { return "'" + s + "'"; }

int sh(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : 128;
}


void high_level_accumulate(client::Runtime& rt, const int32_t* data, size_t n) {
  const auto* fn = funcs::find_function(TANDEM_FN_ACCUMULATE);
  const uint64_t args[2] = {reinterpret_cast<uintptr_t>(data), n};
  funcs::Call call;
  funcs::BufferList buffers;
  ASSERT_EQ(funcs::describe_call(*fn, args, call, buffers), Status::ok);
  call.buffers[0] = const_cast<int32_t*>(data);
  int64_t v = 0;
  ASSERT_EQ(rt.run(*fn, call, v), Status::ok);
}

// The daemon's known traffic: 200 tagged no-ops, one refused packet, 4 high-level calls.
void traffic(const DaemonProcess& d) {
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(256);
  ASSERT_TRUE(q.ok());
  run_noops(*rt, *q.value(), 1000, 200);
  tandem_completion_t* rec = rt->thread_records();
  rt::reset_record(rec);
  ASSERT_EQ(q.value()->dispatch(200, nullptr, 0, 0, rec, false, 0, 9), Status::ok);
  EXPECT_EQ(rt->wait(rec, {}), Status::unknown_function);
  auto* data = static_cast<int32_t*>(rt->alloc(100'000 * sizeof(int32_t)));
  ASSERT_NE(data, nullptr);
  for (int i = 0; i < 100'000; ++i) data[i] = i;
  for (int i = 0; i < 4; ++i) high_level_accumulate(*rt, data, 100'000);
  rt->free(data);
}

TEST(TraceDaemon, ExportedPerfettoTraceHoldsExactlyTheKnownJobsWithOrderedPhasesAndFlows) {
  DaemonProcess d("[trace]\nenabled = true\n");
  traffic(d);
  const std::string dir = d.directory();
  const std::string cli = quoted(TANDEM_CLI_PATH) + " trace ";
  const std::string sock = " --socket " + quoted(d.socket());
  ASSERT_EQ(sh(cli + "export --format perfetto -o " + quoted(dir + "/trace.json") + sock), 0);
  ASSERT_EQ(sh(cli + "export --format raw -o " + quoted(dir + "/trace.raw") + sock), 0);
  EXPECT_EQ(sh(std::string(TANDEM_PYTHON) + " " + quoted(TANDEM_SOURCE_DIR "/tests/python/check_perfetto.py") + " " +
               quoted(dir + "/trace.json") + " --function nop --tags 1000:200 --refused 1 --client-flows 4"),
            0);
  // The CSV: one row per dispatcher record, and the report's table from the saved dump.
  ASSERT_EQ(sh(cli + "export --from " + quoted(dir + "/trace.raw") + " --format csv -o " + quoted(dir + "/jobs.csv")), 0);
  std::ifstream csv(dir + "/jobs.csv");
  std::string line;
  size_t nop_rows = 0, rows = 0;
  std::getline(csv, line);
  EXPECT_NE(line.find("visible_ns"), std::string::npos) << line;
  while (std::getline(csv, line)) {
    ++rows;
    nop_rows += line.find(",nop,") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(nop_rows, 200u);
  EXPECT_GT(rows, 201u) << "the accumulate calls' jobs and the refused packet";
  ASSERT_EQ(sh(cli + "report --from " + quoted(dir + "/trace.raw") + " -o " + quoted(dir) + " --no-plot > " +
               quoted(dir + "/report.txt")),
            0);
  std::ifstream report(dir + "/report.txt");
  std::stringstream text;
  text << report.rdbuf();
  EXPECT_NE(text.str().find("nop"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("accumulate"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("p99"), std::string::npos) << text.str();
  for (const char* f : {"/trace.json", "/trace.raw", "/jobs.csv", "/jobs.csv.calls.csv", "/report.txt", "/breakdown.csv"}) {
    std::remove((dir + f).c_str());
  }
}

TEST(TraceDaemon, StartStopThroughTheCommandAndBadRequestsGetErrors) {
  DaemonProcess d;
  auto status = testing::daemon_status(d);
  ASSERT_FALSE(status.is_null());
  EXPECT_FALSE(status["trace"]["enabled"].get<bool>());
  EXPECT_EQ(status["daemon"]["metrics"].get<std::string>(), "") << "no endpoint unless asked for";
  const std::string cli = quoted(TANDEM_CLI_PATH) + " trace ";
  const std::string sock = " --socket " + quoted(d.socket());
  {
    auto rt = d.open(client::Mode::hw);
    ASSERT_TRUE(rt);
    auto q = rt->create_queue(64);
    ASSERT_TRUE(q.ok());
    run_noops(*rt, *q.value(), 1, 20);  // tracing off: nothing kept
    ASSERT_EQ(sh(cli + "start" + sock + " > /dev/null"), 0);
    EXPECT_TRUE(testing::daemon_status(d)["trace"]["enabled"].get<bool>());
    run_noops(*rt, *q.value(), 100, 30);
    ASSERT_EQ(sh(cli + "stop" + sock + " > /dev/null"), 0);
    run_noops(*rt, *q.value(), 500, 20);  // off again
  }
  // tandem top: two refreshes, the second with rates.
  const std::string top_out = d.directory() + "/top.txt";
  ASSERT_EQ(sh(quoted(TANDEM_CLI_PATH) + " top -n 2 --interval 0.1" + sock + " > " + quoted(top_out)), 0);
  std::ifstream top(top_out);
  std::stringstream top_text;
  top_text << top.rdbuf();
  EXPECT_NE(top_text.str().find("jobs/s completed"), std::string::npos) << top_text.str();
  EXPECT_NE(top_text.str().find("dispatcher:"), std::string::npos) << top_text.str();
  std::remove(top_out.c_str());
  status = testing::daemon_status(d);
  EXPECT_FALSE(status["trace"]["enabled"].get<bool>());
  EXPECT_EQ(status["trace"]["records"].get<uint64_t>(), 30u);
  // A malformed trace_control op: an error reply, and the daemon carries on.
  rt::UniqueFd fd(d.connect_raw());
  abi::control::TraceControl bad;
  bad.op = 7;
  ASSERT_EQ(rt::send_struct(fd.get(), abi::control::MessageType::trace_control, 1, bad), Status::ok);
  auto reply = rt::recv_frame(fd.get(), 5'000'000'000);
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply.value().type(), abi::control::MessageType::error);
  EXPECT_TRUE(d.alive());
  EXPECT_FALSE(testing::daemon_status(d).is_null());
}

TEST(TraceDaemon, MetricsEndpointParsesAndMatchesTandemStatus) {
  DaemonProcess d("[metrics]\nlisten = \"127.0.0.1:0\"\nmin_interval_ms = 0\n");
  auto rt = d.open(client::Mode::hw);
  ASSERT_TRUE(rt);
  auto q = rt->create_queue(64);
  ASSERT_TRUE(q.ok());
  run_noops(*rt, *q.value(), 1, 100);
  auto* data = static_cast<int32_t*>(rt->alloc(50'000 * sizeof(int32_t)));
  for (int i = 0; i < 50'000; ++i) data[i] = i;
  high_level_accumulate(*rt, data, 50'000);
  rt->free(data);
  // The session stays open (its figures are in both); nothing runs while the two are compared.
  EXPECT_EQ(sh(std::string(TANDEM_PYTHON) + " " + quoted(TANDEM_SOURCE_DIR "/tests/python/check_metrics.py") + " " +
               quoted(TANDEM_CLI_PATH) + " " + quoted(d.socket())),
            0);
}

}  // namespace
}  // namespace tandem
