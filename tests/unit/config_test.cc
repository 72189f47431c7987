// Configuration: the built-in default parses, files override it, each device kind owns its section,
// and every mistake is an error that names the key or the device.
#include <gtest/gtest.h>

#include <string>

#include "config/config.hpp"
#include "devices/device_factory.hpp"
#include "devices/emu/emu_device.hpp"
#include "devices/rtl/rtl_catalog.hpp"
#include "funcs/function.hpp"

namespace tandem::config {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_config(text, "test.toml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The message of building the devices a (valid) configuration names, "" if they start.
std::string device_error_of(const std::string& text) {
  try {
    (void)devices::make_devices(parse_config(text, "test.toml"));
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, BuiltInDefaultIsValidAndDocumented) {
  Config c = load_config("");
  EXPECT_EQ(c.source, "<built-in default>");
  EXPECT_EQ(c.device.kinds, (std::vector<std::string>{"emu"}));
  EXPECT_EQ(c.device.emu.slots, 8u);
  ASSERT_EQ(c.device.emu.resident.size(), 8u);
  EXPECT_EQ(c.device.rtl.resident.size(), 5u) << "the rtl device's five accelerators by default";
  EXPECT_EQ(c.device.rtl.reconfig_delay, "bitstream");
  EXPECT_EQ(c.device.emu.reconfig_delay, "fixed");
  ASSERT_TRUE(c.functions[TANDEM_FN_ACCUMULATE]);
  EXPECT_DOUBLE_EQ(*c.functions[TANDEM_FN_ACCUMULATE]->speedup, 2.6);
  ASSERT_TRUE(c.functions[TANDEM_FN_WORK_BASE + 7]) << "work sets the work variants";
  EXPECT_DOUBLE_EQ(*c.functions[TANDEM_FN_WORK_BASE + 7]->speedup, 4.0);
  EXPECT_NEAR(c.dispatcher.idle_spin_s, 100e-6, 1e-12);
  EXPECT_TRUE(c.dispatcher.avoid_caller_cpus);
  EXPECT_FALSE(parse_config("[dispatcher]\navoid_caller_cpus = false\n", "x").dispatcher.avoid_caller_cpus);
  EXPECT_EQ(c.device.opencl.batch_max_jobs, 32u) << "configs/default.toml and OpenclSettings agree";
  EXPECT_EQ(c.device.opencl.batch_staging, "auto");
  EXPECT_EQ(c.device.opencl.batch_max_job_bytes, 65536u);
  EXPECT_EQ(c.device.opencl.local_bytes, uint64_t{256} << 20);
  EXPECT_EQ(c.device.opencl.copy_engines, 2u);
  EXPECT_EQ(c.device.cuda.persistent_staging_bytes, uint64_t{8} << 20);
  EXPECT_EQ(parse_config("[device.cuda]\npersistent_staging_mib = 64\n", "x").device.cuda.persistent_staging_bytes,
            uint64_t{64} << 20);
}

TEST(Config, ValuesAndDefaults) {
  Config c = parse_config(R"(
[device.emu]
slots = 4
resident = ["work3", "nop"]
[functions.work3]
throughput = 5e9
latency_us = 2
)", "x");
  EXPECT_EQ(c.device.emu.slots, 4u);
  EXPECT_EQ(c.fabric.queue_capacity, 1024u);
  EXPECT_EQ(c.device.emu.resident, (std::vector<std::string>{"work3", "nop"}));
  auto models = devices::emu_models(c);
  EXPECT_DOUBLE_EQ(models[TANDEM_FN_WORK_BASE + 3].throughput, 5e9);
  EXPECT_DOUBLE_EQ(models[TANDEM_FN_WORK_BASE + 3].latency_s, 2e-6);
  // Functions without a table keep their catalog defaults: speedup x the CPU's throughput.
  EXPECT_GT(models[TANDEM_FN_ACCUMULATE].throughput, 0);
}

TEST(Config, SeveralDevicesEachWithItsSection) {
  Config c = parse_config(R"(
[device]
kinds = ["emu", "rtl"]
[device.emu]
slots = 4
resident = ["nop"]
[device.rtl]
slots = 2
resident = ["sobel", "matmul"]
clock_mhz = 100
worker_nice = 5
)", "x");
  EXPECT_EQ(c.device.kinds, (std::vector<std::string>{"emu", "rtl"}));
  EXPECT_TRUE(c.device.uses("rtl"));
  EXPECT_EQ(c.device.rtl.slots, 2u);
  EXPECT_DOUBLE_EQ(c.device.rtl.clock_hz, 100e6);
  EXPECT_EQ(c.device.rtl.worker_nice, 5);
  EXPECT_EQ(c.device.rtl.resident, (std::vector<std::string>{"sobel", "matmul"}));
  // The rtl device's timing: nominal at its clock; functions without an accelerator have none.
  const auto rtl = devices::rtl::rtl_models(c);
  EXPECT_GT(rtl[TANDEM_FN_SOBEL].throughput, 0);
  EXPECT_EQ(rtl[TANDEM_FN_WORK].throughput, 0);
  EXPECT_GT(rtl[TANDEM_FN_SOBEL].reconfig_s, 0) << "bitstream delay by default on the rtl device";
}

TEST(Config, ReconfigurationManager) {
  Config d = load_config("");
  EXPECT_EQ(d.reconfig.policy, "none");
  EXPECT_DOUBLE_EQ(d.reconfig.c_reconfig_s, 0.5e-3);
  EXPECT_LT(d.reconfig.c_replicate_s, 0) << "P / 2 unless given";
  Config c = parse_config("[monitor]\nperiod_ms = 100\n[reconfig]\npolicy = \"algorithm1\"\nc_replicate_ms = 20\n", "t.toml");
  EXPECT_EQ(c.reconfig.policy, "algorithm1");
  EXPECT_DOUBLE_EQ(c.reconfig.c_replicate_s, 20e-3);
  const engine::ReconfigParams p = reconfig_params(c);
  EXPECT_EQ(p.period_ns, 100'000'000);
  EXPECT_GT(p.xc[TANDEM_FN_WORK_BASE], 0);
  EXPECT_NE(make_policy(c.reconfig.policy, p), nullptr);
  const Config r = parse_config("[reconfig]\npolicy = \"reactive\"\nreact_idle_ms = 5\n", "t.toml");
  EXPECT_DOUBLE_EQ(reconfig_params(r).react_idle_s, 5e-3);
  EXPECT_TRUE(make_policy(r.reconfig.policy, reconfig_params(r))->reacts());
  // The policy mini-language lives here: parameters in the spec, checked at parse time.
  const Config s = parse_config("[reconfig]\npolicy = \"sticky:history=0:min_gain=3\"\n", "t.toml");
  const PolicySpec spec = parse_policy(s.reconfig.policy, {});
  EXPECT_EQ(spec.name, "sticky");
  EXPECT_DOUBLE_EQ(spec.params.history, 0);
  EXPECT_DOUBLE_EQ(spec.params.min_gain, 3);
  EXPECT_FALSE(parse_policy("reactive:react=0", {}).params.react > 0) << "keys override the name's defaults";
  EXPECT_NE(error_of("[reconfig]\npolicy = \"magic\"\n").find("reconfig.policy: unknown reconfiguration policy 'magic'"),
            std::string::npos);
  EXPECT_NE(error_of("[reconfig]\npolicy = \"sticky:histroy=1\"\n").find("unknown reconfiguration policy parameter 'histroy'"),
            std::string::npos);
  EXPECT_NE(error_of("[reconfig]\npolicy = \"sticky:history=1x\"\n").find("'history=1x' is not key=number"),
            std::string::npos);
  EXPECT_NE(error_of("[reconfig]\nperiod = 3\n").find("unknown key 'period' in [reconfig]"), std::string::npos);
}

TEST(Config, ControlPlaneLimits) {
  const Config d = load_config("");
  EXPECT_EQ(d.daemon.connections_per_uid, 128u);
  EXPECT_EQ(d.daemon.hello_timeout_ms, 1000u);
  EXPECT_EQ(d.daemon.output_buffer_kib, 256u);
  const Config c = parse_config("[limits]\nconnections_per_uid = 3\nhello_timeout_ms = 50\noutput_buffer_kib = 512\n", "t");
  EXPECT_EQ(c.daemon.connections_per_uid, 3u);
  EXPECT_EQ(c.daemon.hello_timeout_ms, 50u);
  EXPECT_EQ(c.daemon.output_buffer_kib, 512u);
  EXPECT_NE(error_of("[limits]\nconnections_per_uid = 0\n").find("limits.connections_per_uid"), std::string::npos);
  EXPECT_NE(error_of("[limits]\nhello_timeout_ms = 0\n").find("limits.hello_timeout_ms"), std::string::npos);
  // Below one largest reply (64 KiB) plus headroom a well-behaved client could be dropped.
  EXPECT_NE(error_of("[limits]\noutput_buffer_kib = 64\n").find("limits.output_buffer_kib"), std::string::npos);
}

// Every bad key and value: the message names the key (and the file).
TEST(Config, ErrorsNameTheKey) {
  const struct {
    const char* text;
    const char* expected;
  } cases[] = {
      {"[fabric]\nqueuez = 3", "test.toml: unknown key 'queuez' in [fabric]"},
      {"[fabric]\nslots = 4", "fabric.slots moved to the device's own section: [device.emu] slots"},
      {"[fabric]\nresident = [\"nop\"]", "fabric.resident moved to the device's own section"},
      {"[fabric]\nqueue_capacity = 0", "fabric.queue_capacity must be an integer in [1, 1048576]"},
      {"[fabric]\nmax_job_ms = -1", "fabric.max_job_ms = -1 is out of range"},
      {"fabric = 3", "[fabric] must be a table"},
      {"[device]\nkind = \"rtl\"", "device.kind was replaced by device.kinds"},
      {"[device]\nkinds = []", "device.kinds must be a non-empty list"},
      {"[device]\nkinds = \"emu\"", "device.kinds must be a non-empty list"},
      {"[device]\nkinds = [\"fpga\"]", "device.kinds: unknown device kind 'fpga'"},
      {"[device]\nkinds = [\"emu\", \"emu\"]", "device.kinds names 'emu' twice"},
      {"[device]\nslot_rows = 0", "device.slot_rows must be an integer in [1, 64]"},
      {"[device]\nconfig_port_mbps = 0", "device.config_port_mbps = 0 is out of range"},
      {"[device]\ncolour = 1", "unknown key 'colour' in [device]"},
      {"[device]\nemu = 1", "device.emu must be a table"},
      {"[device.emu]\nslots = 0", "device.emu.slots must be an integer in [1, 1024]"},
      {"[device.emu]\nslots = \"many\"", "device.emu.slots must be an integer"},
      {"[device.emu]\nresident = [\"warp\"]", "device.emu.resident: unknown function 'warp'"},
      {"[device.emu]\nresident = \"nop\"", "device.emu.resident must be an array of function names"},
      {"[device.emu]\nslots = 1\nresident = [\"nop\", \"work\"]", "device.emu.resident lists more functions than the device has slots"},
      {"[device.emu]\nreconfig_delay = \"slow\"", "device.emu.reconfig_delay must be one of \"fixed\", \"bitstream\""},
      {"[device.emu]\nspeed = 2", "unknown key 'speed' in [device.emu]"},
      {"[device.rtl]\nslots = 0", "device.rtl.slots must be an integer in [1, 256]"},
      {"[device.rtl]\nclock_mhz = 0", "device.rtl.clock_mhz = 0 is out of range"},
      {"[device.rtl]\nmax_cycles = 0", "device.rtl.max_cycles must be a positive integer"},
      {"[device.rtl]\nworker_nice = 20", "device.rtl.worker_nice must be an integer in [0, 19]"},
      {"[device.rtl]\nslots = 1\nresident = [\"sobel\", \"matmul\"]", "device.rtl.resident lists more functions than"},
      {"[device.rtl]\nclock = 1", "unknown key 'clock' in [device.rtl]"},
      {"[device.opencl]\nbatch_max_jobs = 0", "device.opencl.batch_max_jobs must be an integer in [1, 4096]"},
      {"[device.opencl]\nbatch_max_job_bytes = 2", "device.opencl.batch_max_job_bytes must be an integer in [4, 67108864]"},
      {"[device.opencl]\nbatch_staging = \"gpu\"", "device.opencl.batch_staging must be one of \"auto\", \"svm\", \"copies\""},
      {"[device.opencl]\ncopy_engines = 0", "device.opencl: local memory needs copy engines to fill it"},
      {"[device.opencl]\nlocal_memory_mib = -1", "device.opencl.local_memory_mib = -1 is out of range"},
      {"[device.opencl]\nlocal_memory_mib = 0.5", "device.opencl.local_memory_mib must be a whole number of MiB"},
      {"[device.cuda]\nlocal_memory_mib = 1.5", "device.cuda.local_memory_mib must be a whole number of MiB"},
      {"[limits]\nregistered_mib_per_session = 1.5", "limits.registered_mib_per_session must be a whole number of MiB"},
      {"[device.opencl]\njob_timeout_ms = nan", "device.opencl.job_timeout_ms = nan is out of range"},
      {"[device.cuda]\njob_timeout_ms = nan", "device.cuda.job_timeout_ms = nan is out of range"},
      {"[device]\nreconfig_setup_us = nan", "device.reconfig_setup_us = nan is out of range"},
      {"[fabric]\nmax_job_ms = -nan", "fabric.max_job_ms = nan is out of range"},
      {"[device.emu]\ncopy_engines = 0", "device.emu: local memory needs copy engines to fill it"},
      {"[device.cuda]\npersistent_staging_mib = 0", "device.cuda.persistent_staging_mib must be an integer in [1, 4096]"},
      {"[device.cuda]\npersistent_staging_mib = 1.5", "device.cuda.persistent_staging_mib must be an integer"},
      {"[device.cuda]\npersistent_staging_mib = 2.0", "device.cuda.persistent_staging_mib must be an integer"},
      {"[device.emu]\nslots = 2.0", "device.emu.slots must be an integer in [1, 1024]"},
      {"[dispatcher]\ncpu = 1.0", "dispatcher.cpu must be -1 or a CPU number"},
      {"[device.rtl]\nmax_cycles = 1e6", "device.rtl.max_cycles must be a positive integer"},
      {"[functions.accumulate]\nspeedup = -1", "speedup = -1 is out of range"},
      {"[functions.bogus]\nspeedup = 1", "[functions.bogus]: unknown function"},
      {"[functions.nop]\nfast = 1", "unknown key 'fast' in [functions.nop]"},
      {"[dispatcher]\ncpu = -2", "dispatcher.cpu must be -1 or a CPU number"},
      {"[dispatcher]\nbatch = 0", "dispatcher.batch must be an integer"},
      {"[dispatcher]\navoid_caller_cpus = 1", "dispatcher.avoid_caller_cpus must be true or false"},
      {"[trace]\nenabled = 1", "trace.enabled must be true or false"},
      {"[trace]\nenabled = \"yes\"", "trace.enabled must be true or false"},
      {"[dispatcher]\ncpu = true", "dispatcher.cpu must be -1 or a CPU number"},
      {"[dispatcher]\nbatch = true", "dispatcher.batch must be an integer"},
      {"[monitor]\nperiod_ms = true", "monitor.period_ms must be a number"},
      {"[device.rtl]\nmax_cycles = true", "device.rtl.max_cycles must be a positive integer"},
      {"[device.rtl]\nworker_nice = false", "device.rtl.worker_nice must be an integer in [0, 19]"},
      {"[daemon]\nallowed_uids = [true]", "daemon.allowed_uids must list user ids"},
      {"[limits]\nsessions = true", "limits.sessions must be an integer"},
      {"[monitor]\nperiod_ms = 0", "monitor.period_ms = 0 is out of range"},
      {"[limits]\nsessions = 0", "limits.sessions must be an integer"},
      {"[daemon]\nallowed_uids = [-1]", "daemon.allowed_uids must list user ids"},
      {"[calibration]\nfile = 3", "calibration.file must be a string"},
      {"[bogus]\nx = 1", "unknown key 'bogus' in [top level]"},
      {"[fabric\n", "test.toml"},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.text);
    EXPECT_NE(message.find(c.expected), std::string::npos) << c.text << "\n  gave: " << message;
  }
  EXPECT_THROW(load_config("/nonexistent/tandem.toml"), Error);
}

// A tool's settings over a user's file (calibrate's device, demo's --trace): tables merge key by key,
// the upper document's values win, and the user's other settings stay.
TEST(Config, OverlayedSettingsMergeTablesAndKeepTheOthers) {
  const std::string user = "# a user's file\n[device]\nkinds = [\"emu\"]\n[device.opencl]\njob_timeout_ms = 60000\n"
                           "slots = 3\n[dispatcher]\ncpu = 1\n";
  const std::string merged = overlay_config_text(
      user, "user.toml", "[device]\nkinds = [\"opencl\"]\n[device.opencl]\nslots = 2\nresident = [\"accumulate\", \"accumulate\"]\n",
      "probe");
  const Config c = parse_config(merged, "merged");
  EXPECT_EQ(c.device.kinds, (std::vector<std::string>{"opencl"}));
  EXPECT_EQ(c.device.opencl.slots, 2u);
  EXPECT_EQ(c.device.opencl.resident, (std::vector<std::string>{"accumulate", "accumulate"}));
  EXPECT_DOUBLE_EQ(c.device.opencl.job_timeout_s, 60.0) << "the user's own key stays";
  EXPECT_EQ(c.dispatcher.cpu, 1);
  // Under the user's file instead: the user's value wins where both set one.
  const Config pinned = parse_config(overlay_config_text("[dispatcher]\ncpu = 0\nbatch = 4\n", "pin", user, "user.toml"), "m");
  EXPECT_EQ(pinned.dispatcher.cpu, 1);
  EXPECT_EQ(pinned.dispatcher.batch, 4u);
  // A syntax error names its document; an empty one changes nothing.
  try {
    (void)overlay_config_text("[device\n", "user.toml", "", "probe");
    ADD_FAILURE() << "a syntax error was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("user.toml: "), std::string::npos) << e.what();
  }
  EXPECT_EQ(parse_config(overlay_config_text(user, "user.toml", "", "probe"), "m").device.opencl.slots, 3u);
}

// A configuration that parses but names a device that cannot start: the error names the device.
TEST(Config, DevicesThatCannotStartNameTheDevice) {
  EXPECT_NE(device_error_of("[device]\nkinds = [\"rtl\"]\n[device.rtl]\nresident = [\"work\"]\n")
                .find("device.rtl.resident: 'work' has no accelerator on the rtl device"),
            std::string::npos);
  if (!devices::device_kind_available("rtl")) {
    EXPECT_NE(device_error_of("[device]\nkinds = [\"rtl\"]\n").find("this build has no RTL device"), std::string::npos);
  } else {
    EXPECT_EQ(device_error_of("[device]\nkinds = [\"emu\", \"rtl\"]\n"), "");
  }
  EXPECT_EQ(device_error_of(""), "");
}

}  // namespace
}  // namespace tandem::config
