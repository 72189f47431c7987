// tandem experiment virtual-memory: seed 004 Table 1 on the emulated fabric through a private tandemd.
// A linked list laid out at random (list_walk) of several lengths is walked by the CPU (software, timed
// here) and by the accelerator with AISLE (the list in a registered window: constant-offset translation),
// PHASE/V (the same list, every access through the device TLB: a miss costs a page walk) and PHASE/V
// demand-paged (the list in ordinary heap memory: every page is also faulted in from the client's
// process). Device times are the jobs' modelled device_ns; software times are measured. Writes
// table1.csv and summary.json (docs/results/virtual_memory.md).
//
// Service requests (FastPath): a service_chain job asks its client K times in a row; its round trip
// (job posts -> client callback -> job resumes) is the chain's time over K, beside references measured
// in the same run: a raw cross-process shared-memory ping-pong, a futex wake-up round trip between two
// sleeping threads, and a signal round trip between two processes (the analogue of seed 004's 62 us
// interrupt path). Writes service_rtt.csv.
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "support/measure.hpp"
#include "support/peers.hpp"

#include "base/clock.hpp"
#include "base/stats.hpp"
#include "client/runtime.hpp"
#include "commands.hpp"
#include "daemon_launcher.hpp"
#include "funcs/ref/list_walk_ref.hpp"
#include "funcs/ref/service_chain_ref.hpp"
#include "output.hpp"
#include "plot.hpp"
#include "rt/completion.hpp"
#if TANDEM_HAVE_RTL_DEVICE
#include "devices/rtl/rtl_fabric.hpp"
#include "rt/address_space.hpp"
#endif

namespace tandem::tools {

namespace {

using nlohmann::json;

struct VmOptions {
  std::string out = "vm-results";
  bool quick = false;
};

// One slot for list_walk, one for service_chain; the TLB of seed 004's HA (64 entries, direct mapped)
// unless changed (service_chain does not translate).
const char* kVmConfig = "[device.emu]\nslots = 2\nresident = [\"list_walk\", \"service_chain\"]\n";

uint64_t echo_service(void*, const uint64_t args[4]) { return args[0] + args[1]; }

// Signal round trips (ns): SIGUSR1 to a forked child, whose handler sends SIGUSR2 back; this side
// waits for it with sigwaitinfo. Each direction is a kernel signal delivery, as in an interrupt path
// that ends in a user-level handler.
volatile sig_atomic_t g_parent_pid = 0;
void reply_signal(int) { kill(static_cast<pid_t>(g_parent_pid), SIGUSR2); }

std::vector<double> signal_rtt(int samples) {
  sigset_t both, old;
  sigemptyset(&both);
  sigaddset(&both, SIGUSR1);
  sigaddset(&both, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &both, &old);  // the child inherits SIGUSR1 blocked until its handler is in
  g_parent_pid = getpid();
  int ready[2];
  if (pipe(ready) != 0) throw Error(Status::io_error, "pipe");
  const pid_t child = fork();
  if (child == 0) {
    struct sigaction sa {};
    sa.sa_handler = reply_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, SIGUSR1);
    pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
    const char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(1);
    for (;;) pause();
  }
  char c = 0;
  std::vector<double> out;
  if (child > 0 && read(ready[0], &c, 1) == 1) {
    sigset_t two;
    sigemptyset(&two);
    sigaddset(&two, SIGUSR2);
    const timespec limit{1, 0};
    for (int i = 0; i < samples + samples / 10; ++i) {
      const int64_t t0 = now_ns();
      kill(child, SIGUSR1);
      if (sigtimedwait(&two, nullptr, &limit) != SIGUSR2) break;
      if (i >= samples / 10) out.push_back(static_cast<double>(now_ns() - t0));
    }
  }
  if (child > 0) {
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
  }
  close(ready[0]);
  close(ready[1]);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return out;
}

// seed 004 Table 1 (ms): SW, AISLE, PHASE/V on the ML310 (PowerPC 405 at 300 MHz).
struct PaperRow {
  uint64_t nodes;
  double sw_ms, aisle_ms, phasev_ms;
};
constexpr PaperRow kPaper[] = {{16384, 7.4, 3.4, 3.5}, {32768, 15.8, 6.8, 12.2}, {131072, 68.3, 27.4, 64.0}};

const PaperRow* paper_row(uint64_t nodes) {
  for (const PaperRow& r : kPaper) {
    if (r.nodes == nodes) return &r;
  }
  return nullptr;
}

class VmExperiment {
 public:
  explicit VmExperiment(const VmOptions& o) : o_(o), daemon_(kVmConfig) {
    client::RuntimeOptions ro;
    ro.socket_path = daemon_.socket();
    ro.mode = client::Mode::hw;
    auto rt = client::Runtime::open(ro);
    if (!rt) throw Error(rt.status(), "cannot open a session on the private tandemd: " + rt.message());
    rt_ = std::move(rt).value();
    auto q = rt_->create_queue(16);
    if (!q) throw Error(q.status(), "cannot create a queue");
    queue_ = std::move(q).value();
    record_ = static_cast<tandem_completion_t*>(rt_->alloc(sizeof(tandem_completion_t)));
    if (record_ == nullptr) throw Error(Status::no_memory, "no session memory for a completion record");
  }
  ~VmExperiment() { rt_->free(record_); }

  // The service-request round trip (ns): a session whose service is served as `flags` says; the median
  // time of `chains` chains of `steps` requests less that of chains of none (the job's own cost, dispatch
  // to completion), per request. Back-to-back requests (a long chain) find a polling client spinning;
  // a sleeping client is measured with one request per job, so that it is asleep when each comes.
  double service_rtt(uint32_t flags, uint64_t steps, int chains) {
    client::RuntimeOptions ro;
    ro.socket_path = daemon_.socket();
    ro.mode = client::Mode::hw;
    auto opened = client::Runtime::open(ro);
    if (!opened) throw Error(opened.status(), "cannot open a session for service requests: " + opened.message());
    auto& rt = *opened.value();
    rt.service().register_callback(1, echo_service, nullptr);
    if (Status s = rt.start_service(flags); s != Status::ok) throw Error(s, "tandem_service_start");
    auto chain_ns = [&](uint64_t k) {
      uint64_t value = 0;
      const int64_t t0 = now_ns();
      if (Status s = rt.service_chain(1, k, 3, value); s != Status::ok) throw Error(s, "service_chain");
      const int64_t t1 = now_ns();
      const uint64_t expected = funcs::ref::service_chain(k, 3, [](const funcs::ref::ServiceArgs& a) { return echo_service(nullptr, a.data()); });
      if (value != expected) throw Error(Status::device_error, "service_chain returned a wrong value");
      return static_cast<double>(t1 - t0);
    };
    chain_ns(steps);  // warm-up
    std::vector<double> empty, full;
    for (int i = 0; i < chains; ++i) {
      empty.push_back(chain_ns(0));
      full.push_back(chain_ns(steps));
    }
    if (rt.stats().accelerated_calls.load() == 0) throw Error(Status::device_error, "service_chain never reached the device");
    return std::max(0.0, upper_median(full) - upper_median(empty)) / static_cast<double>(steps);
  }

  json run_service() {
    const uint64_t steps = o_.quick ? 500 : 5000;
    const int chains = o_.quick ? 3 : 9;
    bench::PeerOptions peers;
    peers.samples = o_.quick ? 2'000 : 20'000;
    peers.warmup = peers.samples / 10;
    peers.pin = false;  // the service measurements are not pinned either
    auto pingpong = bench::process_pingpong_rtt(peers);
    auto futex = bench::futex_rtt(peers, bench::FutexScope::shared);
    if (!pingpong || !futex) throw Error(Status::device_error, "reference round trips failed");
    const double pingpong_ns = bench::summarize(pingpong.value()).median;
    const double futex_ns = bench::summarize(futex.value()).median;
    const double signal_ns = upper_median(signal_rtt(o_.quick ? 500 : 5'000));
    const double poll_ns = service_rtt(client::kServicePoll, steps, chains);
    const int single = o_.quick ? 200 : 2'000;
    const double sleep_ns = service_rtt(client::kServiceSleep, 1, single);
    fmt::print("service requests (polling: {} per chain, median of {} chains; sleeping: one per job, median of {} jobs):\n",
               steps, chains, single);
    fmt::print("  polling client   {:>9.0f} ns   raw process ping-pong {:>7.0f} ns   ratio {:.2f} (target <= 2)\n", poll_ns,
               pingpong_ns, poll_ns / pingpong_ns);
    fmt::print("  sleeping client  {:>9.0f} ns   futex wake-up RTT     {:>7.0f} ns   ratio {:.2f} (target <= 1.2)\n", sleep_ns,
               futex_ns, sleep_ns / futex_ns);
    fmt::print("  signal round trip {:>8.0f} ns   (seed 004: FastPath 2.7-9.6 us, Linux interrupt path 62 us)\n", signal_ns);
    write_file(o_.out + "/service_rtt.csv",
               fmt::format("path,rtt_ns\nservice_poll,{:.0f}\nservice_sleep,{:.0f}\nprocess_pingpong,{:.0f}\nfutex,{:.0f}\nsignal,{:.0f}\n",
                           poll_ns, sleep_ns, pingpong_ns, futex_ns, signal_ns));
    if (run_plot("plot_fastpath.py", {o_.out})) fmt::print("wrote {}/fastpath_fig4.png\n", o_.out);
    json j;
    j["service_rtt_poll_ns"] = poll_ns;
    j["service_rtt_sleep_ns"] = sleep_ns;
    j["process_pingpong_ns"] = pingpong_ns;
    j["futex_rtt_ns"] = futex_ns;
    j["signal_rtt_ns"] = signal_ns;
    j["service_steps"] = steps;
    j["service_rtt_poll_over_pingpong"] = pingpong_ns > 0 ? poll_ns / pingpong_ns : 0;
    j["service_rtt_sleep_over_futex"] = futex_ns > 0 ? sleep_ns / futex_ns : 0;
    j["signal_over_service_rtt_sleep"] = sleep_ns > 0 ? signal_ns / sleep_ns : 0;
    return j;
  }

  // One list_walk job: its modelled device time (s); checks its value.
  double device_s(const tandem_list_node_t* head, uint64_t nodes, int64_t expected) {
    rt::reset_record(record_);
    const uint64_t args[2] = {reinterpret_cast<uintptr_t>(head), nodes};
    if (Status s = queue_->dispatch(TANDEM_FN_LIST_WALK, args, 2, nodes, record_); s != Status::ok) {
      throw Error(s, "list_walk dispatch");
    }
    rt::WaitPolicy policy;
    policy.timeout_ns = 60'000'000'000;
    if (Status s = rt_->wait(record_, policy); s != Status::ok) throw Error(s, "list_walk job");
    if (record_->value != expected) throw Error(Status::device_error, "list_walk returned a wrong sum");
    return static_cast<double>(record_->device_ns) * 1e-9;
  }

  void set_mode(uint8_t mode) {
    if (Status s = rt_->set_address_mode(mode); s != Status::ok) throw Error(s, "set_address_mode");
  }

  json run() {
    const std::vector<uint64_t> lengths = o_.quick ? std::vector<uint64_t>{16384, 131072}
                                                   : std::vector<uint64_t>{8192, 16384, 24576, 32768, 49152, 65536, 98304, 131072, 262144};
    const int reps = o_.quick ? 2 : 5;
    json rows = json::array();
    std::string csv = "nodes,pages,sw_ms,aisle_ms,phasev_ms,phasev_paged_ms,walks_per_node,paper_sw_ms,paper_aisle_ms,paper_phasev_ms\n";
    fmt::print("{:>7} {:>6} {:>9} {:>9} {:>9} {:>11} {:>8}   paper: {:>6} {:>6} {:>7}\n", "nodes", "pages", "SW ms",
               "AISLE ms", "PHASE/V", "PHASE/V+pf", "walks/n", "SW", "AISLE", "PHASE/V");
    for (uint64_t n : lengths) {
      const int64_t expected = static_cast<int64_t>(n * (n + 1) / 2);
      // The list in a registered window (session memory), and the same layout in the heap.
      auto* window = static_cast<tandem_list_node_t*>(rt_->alloc(n * sizeof(tandem_list_node_t)));
      if (window == nullptr) throw Error(Status::no_memory, "session memory for the list");
      const tandem_list_node_t* window_head = funcs::ref::link_random_list({window, n}, n);
      std::vector<tandem_list_node_t> heap(n);
      const tandem_list_node_t* heap_head = funcs::ref::link_random_list(heap, n);
      double sw = 1e300, aisle = 1e300, phasev = 1e300, paged = 1e300;
      for (int r = 0; r < reps; ++r) {
        const int64_t t0 = now_ns();
        const int64_t v = funcs::ref::list_walk(heap_head, n);
        const int64_t t1 = now_ns();
        if (v != expected) throw Error(Status::device_error, "software walk returned a wrong sum");
        sw = std::min(sw, static_cast<double>(t1 - t0) * 1e-9);
        set_mode(TANDEM_ADDRESS_AISLE);
        aisle = std::min(aisle, device_s(window_head, n, expected));
        set_mode(TANDEM_ADDRESS_PHASEV);
        phasev = std::min(phasev, device_s(window_head, n, expected));
        paged = std::min(paged, device_s(heap_head, n, expected));
      }
      // Walks per node of the last PHASE/V job over the window: from the modelled times.
      const double per_node = aisle / static_cast<double>(n);
      const double walk_reads = 1.5;  // [device.emu] tlb_walk_reads, the default this config keeps
      const double walks_per_node = per_node > 0 ? (phasev - aisle) / (walk_reads * per_node) / static_cast<double>(n) : 0;
      const uint64_t pages = (n * sizeof(tandem_list_node_t) + 4095) / 4096;
      const PaperRow* p = paper_row(n);
      fmt::print("{:>7} {:>6} {:>9.3f} {:>9.3f} {:>9.3f} {:>11.3f} {:>8.3f}   paper: {:>6} {:>6} {:>7}\n", n, pages,
                 sw * 1e3, aisle * 1e3, phasev * 1e3, paged * 1e3, walks_per_node,
                 p ? fmt::format("{:.1f}", p->sw_ms) : "", p ? fmt::format("{:.1f}", p->aisle_ms) : "",
                 p ? fmt::format("{:.1f}", p->phasev_ms) : "");
      csv += fmt::format("{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},{},{},{}\n", n, pages, sw * 1e3, aisle * 1e3,
                         phasev * 1e3, paged * 1e3, walks_per_node, p ? fmt::format("{}", p->sw_ms) : "",
                         p ? fmt::format("{}", p->aisle_ms) : "", p ? fmt::format("{}", p->phasev_ms) : "");
      rows.push_back({{"nodes", n}, {"pages", pages}, {"sw_s", sw}, {"aisle_s", aisle}, {"phasev_s", phasev},
                      {"phasev_paged_s", paged}, {"walks_per_node", walks_per_node}});
      rt_->free(window);
    }
    write_file(o_.out + "/table1.csv", csv);
    json summary;
    summary["rows"] = rows;
    const auto ratio = [&](uint64_t n, const char* a, const char* b) -> double {
      for (const auto& r : rows) {
        if (r["nodes"].get<uint64_t>() == n) return r[a].get<double>() / r[b].get<double>();
      }
      return 0;
    };
    summary["phasev_over_aisle_16k"] = ratio(16384, "phasev_s", "aisle_s");
    summary["phasev_over_aisle_128k"] = ratio(131072, "phasev_s", "aisle_s");
    summary["phasev_over_sw_128k"] = ratio(131072, "phasev_s", "sw_s");
    summary["phasev_paged_over_aisle_128k"] = ratio(131072, "phasev_paged_s", "aisle_s");
    summary["paper"] = {{"phasev_over_aisle_16k", 3.5 / 3.4}, {"phasev_over_aisle_128k", 64.0 / 27.4},
                        {"phasev_over_sw_128k", 64.0 / 68.3}};
    return summary;
  }

 private:
  VmOptions o_;
  DaemonLauncher daemon_;
  std::unique_ptr<client::Runtime> rt_;
  std::unique_ptr<client::Queue> queue_;
  tandem_completion_t* record_ = nullptr;
};

// The Verilog list_walk (rtl/list_walk: its reads translated by the Verilog TLB, 64 entries direct
// mapped, page walks served by the slot) on an RTL fabric in this process, over the same kind of list
// (link_random_list: n nodes packed in n * 16 bytes, visited in random order). Each job starts with an
// empty TLB. Cycles are the accelerator's (register-bus cycles included); a read of host memory takes
// 20 cycles (100 ns at 200 MHz), a page walk 1.5 reads (30 cycles) under PHASE/V, a window lookup 2
// cycles under AISLE. Writes rtl.csv.
json run_rtl(const VmOptions& o) {
#if TANDEM_HAVE_RTL_DEVICE
  namespace rtl = devices::rtl;
  rtl::RtlFabric fabric(1, rtl::RtlFabricOptions{});
  fabric.configure(0, TANDEM_FN_LIST_WALK);
  if (fabric.loaded(0) != TANDEM_FN_LIST_WALK) throw Error(Status::device_error, "list_walk: " + fabric.last_error(0));
  rt::IdentityAddressSpace space;
  const std::vector<uint64_t> lengths = o.quick ? std::vector<uint64_t>{2048, 32768}
                                                : std::vector<uint64_t>{2048, 16384, 32768, 65536, 131072};
  const double clock_hz = fabric.options().accelerator.clock_hz;
  fmt::print("RTL list_walk (Verilated, TLB 64 entries direct mapped, 20-cycle reads, cold TLB per job):\n");
  fmt::print("{:>7} {:>6} {:>8} {:>11} {:>9} {:>9} {:>9} {:>10}\n", "nodes", "pages", "mode", "cycles/node", "hits",
             "misses", "ms@200MHz", "sim s");
  std::string csv = "nodes,pages,mode,cycles,cycles_per_node,tlb_hits,tlb_misses,device_ms,simulation_s\n";
  json rows = json::array();
  uint32_t asid = 0;
  for (uint64_t n : lengths) {
    std::vector<tandem_list_node_t> nodes(n);
    const tandem_list_node_t* head = funcs::ref::link_random_list(nodes, n);
    const int64_t expected = static_cast<int64_t>(n * (n + 1) / 2);
    const uint64_t pages = (n * sizeof(tandem_list_node_t) + 4095) / 4096;
    for (uint8_t mode : {uint8_t{TANDEM_ADDRESS_AISLE}, uint8_t{TANDEM_ADDRESS_PHASEV}}) {
      auto port = space.open_port(mode);
      funcs::Call call;
      call.function = TANDEM_FN_LIST_WALK;
      call.arg_count = 2;
      call.args = {reinterpret_cast<uintptr_t>(head), n};
      call.workload = n;
      call.memory = port.get();
      const uint64_t cycles_before = fabric.stats(0).cycles;
      const int64_t t0 = now_ns();
      const rtl::ExecResult r = fabric.execute(0, call, rtl::MemoryContext{++asid, mode, false});  // new asid: empty TLB
      const double sim_s = static_cast<double>(now_ns() - t0) * 1e-9;
      if (r.status != Status::ok) throw Error(r.status, "RTL list_walk: " + fabric.last_error(0));
      if (r.value != expected) throw Error(Status::device_error, "RTL list_walk returned a wrong sum");
      const uint64_t cycles = fabric.stats(0).cycles - cycles_before;
      const double per_node = static_cast<double>(cycles) / static_cast<double>(n);
      const double ms = static_cast<double>(cycles) / clock_hz * 1e3;
      const char* name = mode == TANDEM_ADDRESS_PHASEV ? "PHASE/V" : "AISLE";
      fmt::print("{:>7} {:>6} {:>8} {:>11.2f} {:>9} {:>9} {:>9.3f} {:>10.2f}\n", n, pages, name, per_node, r.tlb.hits,
                 r.tlb.misses, ms, sim_s);
      csv += fmt::format("{},{},{},{},{:.3f},{},{},{:.6f},{:.3f}\n", n, pages, name, cycles, per_node, r.tlb.hits,
                         r.tlb.misses, ms, sim_s);
      rows.push_back({{"nodes", n}, {"pages", pages}, {"mode", name}, {"cycles", cycles}, {"cycles_per_node", per_node},
                      {"tlb_hits", r.tlb.hits}, {"tlb_misses", r.tlb.misses}, {"device_s", ms * 1e-3}});
    }
  }
  write_file(o.out + "/rtl.csv", csv);
  return rows;
#else
  (void)o;
  fmt::print("RTL list_walk: this build has no RTL device (TANDEM_BUILD_RTL off)\n");
  return json::array();
#endif
}

void run_vm(const VmOptions& o) {
  const OutputDir out_dir(o.out);  // removed again if the run fails before writing to it
  const int64_t t0 = now_ns();
  fmt::print("virtual memory: seed 004 Table 1 on the emulated fabric through a private tandemd ({})\n",
             o.quick ? "quick" : "full");
  json summary;
  {
    VmExperiment e(o);
    summary = e.run();
    summary["service"] = e.run_service();
    summary["rtl"] = run_rtl(o);
    // PHASE/V over AISLE cycles of the RTL walk at 32768 nodes (128 pages: twice the TLB's reach).
    double aisle_cycles = 0, phasev_cycles = 0;
    for (const auto& r : summary["rtl"]) {
      if (r["nodes"].get<uint64_t>() != 32768) continue;
      (r["mode"] == "AISLE" ? aisle_cycles : phasev_cycles) = r["cycles"].get<double>();
    }
    summary["rtl_phasev_over_aisle_32k"] = aisle_cycles > 0 ? phasev_cycles / aisle_cycles : 0;
    for (const char* key : {"service_rtt_poll_over_pingpong", "service_rtt_sleep_over_futex"}) summary[key] = summary["service"][key];
  }
  summary["command"] = std::string("tandem experiment virtual-memory") + (o.quick ? " --quick" : "") + " --out " + o.out;
  summary["seconds"] = static_cast<double>(now_ns() - t0) * 1e-9;
  write_file(o.out + "/summary.json", summary.dump(2) + "\n");
  for (const char* key : {"phasev_over_aisle_16k", "phasev_over_aisle_128k", "phasev_over_sw_128k", "phasev_paged_over_aisle_128k",
                          "service_rtt_poll_over_pingpong", "service_rtt_sleep_over_futex", "rtl_phasev_over_aisle_32k"}) {
    fmt::print("{} {:.3f}\n", key, summary[key].get<double>());
  }
  fmt::print("paper: phasev_over_aisle_16k {:.3f}, phasev_over_aisle_128k {:.3f}, phasev_over_sw_128k {:.3f}\n",
             3.5 / 3.4, 64.0 / 27.4, 64.0 / 68.3);
  fmt::print("wrote {}/table1.csv, service_rtt.csv, rtl.csv, summary.json\n", o.out);
}

}  // namespace

void add_vm_experiment(CLI::App& experiment) {
  auto o = std::make_shared<VmOptions>();
  CLI::App* cmd = experiment.add_subcommand(
      "virtual-memory", "Shared virtual memory (seed 004 Table 1): list_walk in software, with AISLE, PHASE/V and "
                        "PHASE/V with demand paging, through tandemd on the emulated fabric");
  cmd->add_option("--out", o->out, "Output folder")->capture_default_str();
  cmd->add_flag("--quick", o->quick, "Two list lengths, two samples (seconds; the tests run this)");
  cmd->callback([o] { run_vm(*o); });
}

}  // namespace tandem::tools
