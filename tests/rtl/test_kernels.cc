// The catalog entries of the kernels with Verilog accelerators (sobel, matmul, dct_quant,
// priority_queue): argument rules, software paths equal to the references, splits that add up to
// the whole call; the [device] configuration; the RTL catalog's constants against the area table.
// No Verilator needed (label unit).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include "config/config.hpp"
#include "devices/emu/emu_device.hpp"
#include "devices/rtl/rtl_catalog.hpp"
#include "funcs/function.hpp"
#include "funcs/ref/dct_quant_ref.hpp"
#include "funcs/ref/matmul_ref.hpp"
#include "funcs/ref/pq_ref.hpp"
#include "funcs/ref/sobel_ref.hpp"
#include "funcs/throughput.hpp"
#include "abi/status.hpp"

namespace tandem {
namespace {

using funcs::BufferList;
using funcs::Call;
using funcs::FunctionInfo;
namespace ref = funcs::ref;

uint64_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

// Describes a call with the buffers at the addresses the arguments name (embedded mode).
struct Described {
  Status status = Status::ok;
  Call call;
  BufferList buffers;
};
Described describe(uint16_t id, std::vector<uint64_t> args) {
  Described d;
  d.status = funcs::describe_call(*funcs::find_function(id), args, d.call, d.buffers);
  for (uint32_t i = 0; i < d.buffers.count; ++i) {
    d.call.buffers[i] = reinterpret_cast<void*>(static_cast<uintptr_t>(d.call.args[d.buffers.items[i].arg]));
  }
  return d;
}

// A part of a split is a valid call in its own right: its arguments describe its workload, and every
// buffer it names lies inside the same buffer of the whole call.
void expect_valid_part(const FunctionInfo& fn, const Call& whole, const BufferList& whole_buffers, const Call& part) {
  Call again;
  BufferList buffers;
  ASSERT_EQ(funcs::describe_call(fn, {part.args.data(), part.arg_count}, again, buffers), Status::ok);
  EXPECT_EQ(again.workload, part.workload);
  for (uint32_t i = 0; i < buffers.count; ++i) {
    const funcs::BufferUse& b = buffers.items[i];
    bool inside = false;
    for (uint32_t j = 0; j < whole_buffers.count; ++j) {
      const funcs::BufferUse& w = whole_buffers.items[j];
      if (w.arg != b.arg || w.write != b.write) continue;
      inside = part.args[b.arg] >= whole.args[w.arg] && part.args[b.arg] + b.bytes <= whole.args[w.arg] + w.bytes;
    }
    EXPECT_TRUE(inside) << fn.name << ": part buffer " << i << " leaves the whole call's buffer";
    EXPECT_EQ(static_cast<const char*>(part.buffers[i]) - static_cast<const char*>(whole.buffers[i]),
              static_cast<ptrdiff_t>(part.args[b.arg] - whole.args[b.arg]));
  }
}

// Runs `call` as parts cut at `cuts` (sorted, inside [0, workload]); part k runs in software if k is
// even and through run_accel otherwise (the emulated accelerator), as a cooperative call would.
int64_t run_split(const FunctionInfo& fn, const Described& whole, std::vector<uint64_t> cuts) {
  cuts.insert(cuts.begin(), 0);
  cuts.push_back(whole.call.workload);
  int64_t value = 0;
  bool have = false;
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    Call part;
    fn.slice(whole.call, cuts[k], cuts[k + 1], part);
    expect_valid_part(fn, whole.call, whole.buffers, part);
    const int64_t v = k % 2 == 0 ? fn.run_sw(part, 0, part.workload) : fn.run_accel(part, 0, part.workload);
    value = have ? fn.combine(value, v) : v;
    have = true;
  }
  return value;
}

std::vector<uint64_t> random_cuts(std::mt19937_64& rng, uint64_t workload, int n) {
  std::vector<uint64_t> cuts;
  for (int i = 0; i < n; ++i) cuts.push_back(workload == 0 ? 0 : rng() % (workload + 1));
  std::sort(cuts.begin(), cuts.end());
  return cuts;
}

// ---------------- sobel ----------------

TEST(KernelSobel, WholeAndSplitCallsEqualTheReference) {
  std::mt19937_64 rng(11);
  const std::pair<uint32_t, uint32_t> sizes[] = {{1, 1}, {2, 5}, {3, 3}, {17, 9}, {64, 33}, {5, 40}};
  for (auto [w, h] : sizes) {
    std::vector<uint8_t> image(size_t{w} * h), want(image.size());
    for (auto& p : image) p = static_cast<uint8_t>(rng() % 4 == 0 ? 255 : rng());
    ASSERT_EQ(ref::sobel(image, want, w, h), Status::ok);
    std::vector<uint8_t> out(image.size(), 0xAB);
    auto d = describe(TANDEM_FN_SOBEL, {address(image.data()), address(out.data()), w, h});
    ASSERT_EQ(d.status, Status::ok);
    EXPECT_EQ(d.call.workload, uint64_t{w} * h);
    ASSERT_EQ(d.buffers.count, 2u);
    EXPECT_TRUE(d.buffers.items[1].write);
    funcs::run_sw(*funcs::find_function(TANDEM_FN_SOBEL), d.call);
    EXPECT_EQ(out, want) << w << "x" << h;
    for (int round = 0; round < 6; ++round) {
      std::fill(out.begin(), out.end(), 0xAB);
      run_split(*funcs::find_function(TANDEM_FN_SOBEL), d, random_cuts(rng, d.call.workload, round % 4));
      EXPECT_EQ(out, want) << w << "x" << h << " round " << round;
    }
  }
}

TEST(KernelSobel, PartsOfPartsKeepTheirHalo) {
  std::mt19937_64 rng(12);
  const uint32_t w = 23, h = 31;
  std::vector<uint8_t> image(size_t{w} * h), want(image.size()), out(image.size(), 7);
  for (auto& p : image) p = static_cast<uint8_t>(rng());
  ASSERT_EQ(ref::sobel(image, want, w, h), Status::ok);
  const FunctionInfo& fn = *funcs::find_function(TANDEM_FN_SOBEL);
  auto d = describe(TANDEM_FN_SOBEL, {address(image.data()), address(out.data()), w, h});
  // Rows 0-9, 10-19 (split again into 10-14 and 15-19), 20-30.
  Call a, b, c, b1, b2;
  fn.slice(d.call, 0, 10 * w, a);
  fn.slice(d.call, 10 * w, 20 * w, b);
  fn.slice(d.call, 20 * w, h * w, c);
  EXPECT_EQ(b.args[3], 10 | TANDEM_SOBEL_HALO_ABOVE | TANDEM_SOBEL_HALO_BELOW);
  EXPECT_EQ(b.args[0], address(image.data()) + 9 * w) << "the halo row above is part of the input";
  EXPECT_EQ(a.args[3], 10 | TANDEM_SOBEL_HALO_BELOW);
  EXPECT_EQ(c.args[3], 11 | TANDEM_SOBEL_HALO_ABOVE);
  fn.slice(b, 0, 5 * w - 3, b1);  // rounds up to row 5 of the part
  fn.slice(b, 5 * w - 3, b.workload, b2);
  EXPECT_EQ(b1.workload, 5u * w);
  EXPECT_EQ(b2.workload, 5u * w);
  for (const Call* part : {&a, &b1, &b2, &c}) fn.run_sw(*part, 0, part->workload);
  EXPECT_EQ(out, want);
}

TEST(KernelSobel, ArgumentRules) {
  std::vector<uint8_t> buf(64);
  const uint64_t in = address(buf.data()), out = address(buf.data() + 32);
  EXPECT_EQ(describe(TANDEM_FN_SOBEL, {in, out, 4, 4}).status, Status::ok);
  EXPECT_EQ(describe(TANDEM_FN_SOBEL, {in, out, 4, 4 | (uint64_t{1} << 34)}).status, Status::invalid_argument)
      << "reserved bits of args[3]";
  EXPECT_EQ(describe(TANDEM_FN_SOBEL, {in, out, (uint64_t{1} << 20) + 1, 1}).status, Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_SOBEL, {in, in + 8, 4, 4}).status, Status::invalid_argument) << "overlap";
  auto empty = describe(TANDEM_FN_SOBEL, {0, 0, 0, 100});
  EXPECT_EQ(empty.status, Status::ok);
  EXPECT_EQ(empty.call.workload, 0u);
  EXPECT_EQ(empty.buffers.count, 0u);
  auto halo = describe(TANDEM_FN_SOBEL, {in, out, 4, 2 | TANDEM_SOBEL_HALO_ABOVE | TANDEM_SOBEL_HALO_BELOW});
  EXPECT_EQ(halo.status, Status::ok);
  EXPECT_EQ(halo.buffers.items[0].bytes, 16u) << "two rows plus the halo rows";
  EXPECT_EQ(halo.buffers.items[1].bytes, 8u);
  EXPECT_EQ(halo.call.workload, 8u);
}

// ---------------- matmul ----------------

TEST(KernelMatmul, WholeAndSplitCallsEqualTheReference) {
  std::mt19937_64 rng(21);
  const uint32_t dims[][3] = {{1, 1, 1}, {3, 0, 5}, {17, 13, 11}, {8, 100, 3}, {40, 2, 40}};
  for (auto [m, k, n] : dims) {
    std::vector<int16_t> a(size_t{m} * k), b(size_t{k} * n);
    for (auto& v : a) v = static_cast<int16_t>(rng() % 3 == 0 ? INT16_MIN : rng());
    for (auto& v : b) v = static_cast<int16_t>(rng() % 3 == 0 ? INT16_MIN : rng());
    std::vector<int32_t> want(size_t{m} * n), c(want.size(), 99);
    ASSERT_EQ(ref::matmul(a, b, want, m, k, n), Status::ok);
    auto d = describe(TANDEM_FN_MATMUL,
                      {address(a.data()), address(b.data()), address(c.data()), TANDEM_MATMUL_DIMS(m, k, n)});
    ASSERT_EQ(d.status, Status::ok);
    EXPECT_EQ(d.call.workload, uint64_t{m} * n * std::max(k, 1u));
    ASSERT_EQ(d.buffers.count, k == 0 ? 1u : 3u);
    funcs::run_sw(*funcs::find_function(TANDEM_FN_MATMUL), d.call);
    EXPECT_EQ(c, want) << m << "x" << k << "x" << n;
    for (int round = 0; round < 6; ++round) {
      std::fill(c.begin(), c.end(), 99);
      run_split(*funcs::find_function(TANDEM_FN_MATMUL), d, random_cuts(rng, d.call.workload, round % 4));
      EXPECT_EQ(c, want) << m << "x" << k << "x" << n << " round " << round;
    }
  }
}

TEST(KernelMatmul, ArgumentRules) {
  alignas(8) int16_t a[4] = {};
  alignas(8) int16_t b[4] = {};
  alignas(8) int32_t c[8] = {};
  const uint64_t dims = TANDEM_MATMUL_DIMS(2, 2, 2);
  EXPECT_EQ(describe(TANDEM_FN_MATMUL, {address(a), address(b), address(c), dims}).status, Status::ok);
  EXPECT_EQ(describe(TANDEM_FN_MATMUL, {address(a), address(b), address(c), dims | (uint64_t{1} << 50)}).status,
            Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_MATMUL, {address(a), address(b), address(c) + 2, dims}).status,
            Status::invalid_argument)
      << "C must be 4-byte aligned";
  EXPECT_EQ(describe(TANDEM_FN_MATMUL, {address(a) + 1, address(b), address(c), dims}).status,
            Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_MATMUL, {address(c), address(b), address(c), dims}).status, Status::invalid_argument)
      << "C overlaps A";
  auto empty = describe(TANDEM_FN_MATMUL, {0, 0, 0, TANDEM_MATMUL_DIMS(0, 5, 5)});
  EXPECT_EQ(empty.status, Status::ok);
  EXPECT_EQ(empty.call.workload, 0u);
  EXPECT_EQ(empty.buffers.count, 0u);
}

// ---------------- dct_quant ----------------

TEST(KernelDctQuant, EveryModeEqualsTheReferenceWholeAndSplit) {
  std::mt19937_64 rng(31);
  const uint64_t blocks = 13;
  std::vector<uint8_t> samples(blocks * 64);
  for (auto& s : samples) s = static_cast<uint8_t>(rng());
  std::vector<int16_t> coefs(blocks * 64);
  for (auto& c : coefs) c = static_cast<int16_t>(rng());
  std::vector<uint16_t> table(64);
  for (auto& q : table) q = static_cast<uint16_t>(1 + rng() % 32767);
  ref::QuantTable qt;
  std::copy(table.begin(), table.end(), qt.begin());
  for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
    std::vector<int16_t> want(blocks * 64), out(blocks * 64, 5);
    for (uint64_t b = 0; b < blocks; ++b) {
      ref::CoefBlock c;
      if (mode == TANDEM_DCT_MODE_QUANTIZE) {
        std::copy_n(coefs.begin() + b * 64, 64, c.begin());
      } else {
        ref::SampleBlock s;
        std::copy_n(samples.begin() + b * 64, 64, s.begin());
        c = ref::fdct_islow(s);
      }
      if (mode != TANDEM_DCT_MODE_DCT) c = ref::quantize(c, qt);
      std::copy(c.begin(), c.end(), want.begin() + b * 64);
    }
    const uint64_t in = mode == TANDEM_DCT_MODE_QUANTIZE ? address(coefs.data()) : address(samples.data());
    auto d = describe(TANDEM_FN_DCT_QUANT, {in, address(out.data()), TANDEM_DCT_ARG(blocks, mode), address(table.data())});
    ASSERT_EQ(d.status, Status::ok);
    EXPECT_EQ(d.buffers.count, mode == TANDEM_DCT_MODE_DCT ? 2u : 3u);
    EXPECT_EQ(funcs::run_sw(*funcs::find_function(TANDEM_FN_DCT_QUANT), d.call), 0);
    EXPECT_EQ(out, want) << "mode " << mode;
    for (int round = 0; round < 4; ++round) {
      std::fill(out.begin(), out.end(), 5);
      EXPECT_EQ(run_split(*funcs::find_function(TANDEM_FN_DCT_QUANT), d, random_cuts(rng, blocks, round + 1)), 0);
      EXPECT_EQ(out, want) << "mode " << mode << " round " << round;
    }
  }
}

TEST(KernelDctQuant, ArgumentRulesAndBadTables) {
  std::vector<uint8_t> samples(64, 10);
  std::vector<int16_t> out(64, 3);
  std::vector<uint16_t> table(64, 1);
  const uint64_t s = address(samples.data()), o = address(out.data()), t = address(table.data());
  EXPECT_EQ(describe(TANDEM_FN_DCT_QUANT, {s, o, TANDEM_DCT_ARG(1, 0), t}).status, Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_DCT_QUANT, {s, o, TANDEM_DCT_ARG(1, 4), t}).status, Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_DCT_QUANT, {s, o, TANDEM_DCT_ARG(1, 3)}).status, Status::invalid_argument)
      << "the quantizer needs its table";
  EXPECT_EQ(describe(TANDEM_FN_DCT_QUANT, {s, o, TANDEM_DCT_ARG(1, 1)}).status, Status::ok);
  EXPECT_EQ(describe(TANDEM_FN_DCT_QUANT, {s, o + 1, TANDEM_DCT_ARG(1, 1)}).status, Status::invalid_argument);
  // A table entry outside 1..32767: the call returns 1 and writes nothing.
  for (uint16_t bad : {uint16_t{0}, uint16_t{32768}, uint16_t{65535}}) {
    table[17] = bad;
    auto d = describe(TANDEM_FN_DCT_QUANT, {s, o, TANDEM_DCT_ARG(1, 3), t});
    ASSERT_EQ(d.status, Status::ok);
    EXPECT_EQ(funcs::run_sw(*funcs::find_function(TANDEM_FN_DCT_QUANT), d.call), 1);
    EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](int16_t v) { return v == 3; }));
  }
}

// ---------------- priority_queue ----------------

TEST(KernelPriorityQueue, EqualsTheReferenceFromAnEmptyQueue) {
  std::mt19937_64 rng(41);
  const size_t n = 3000;
  std::vector<uint64_t> commands(n), responses(n);
  for (auto& c : commands) {
    const uint64_t r = rng();
    ref::PqCommand cmd{static_cast<uint8_t>(1 + r % 4), static_cast<uint32_t>(r >> 8), static_cast<uint8_t>(r >> 40),
                       ((r >> 50) & 1) != 0, ((r >> 51) & 1) != 0};
    c = ref::encode_pq_command(cmd);
    if (r % 97 == 0) c |= uint64_t{1} << 45;  // reserved bit: fails
  }
  auto d = describe(TANDEM_FN_PRIORITY_QUEUE, {address(commands.data()), address(responses.data()), n});
  ASSERT_EQ(d.status, Status::ok);
  const FunctionInfo& fn = *funcs::find_function(TANDEM_FN_PRIORITY_QUEUE);
  EXPECT_EQ(fn.granularity, funcs::kNotSplittable);
  const int64_t left = funcs::run_sw(fn, d.call);
  ref::PriorityQueueRef q(ref::kPqRefCapacity);
  size_t failed_reserved = 0;
  for (size_t i = 0; i < n; ++i) {
    const ref::PqResponse want = q.execute(ref::decode_pq_command(commands[i]));
    ASSERT_EQ(responses[i], ref::encode_pq_response(want)) << i;
    failed_reserved += (commands[i] >> 45) & 1;
  }
  EXPECT_GT(failed_reserved, 0u);
  EXPECT_EQ(left, static_cast<int64_t>(q.size()));
  // The same call again gives the same answers: no state survives a call.
  std::vector<uint64_t> first = responses;
  EXPECT_EQ(funcs::run_sw(fn, d.call), left);
  EXPECT_EQ(responses, first);
  EXPECT_EQ(describe(TANDEM_FN_PRIORITY_QUEUE, {address(commands.data()), address(responses.data()) + 4, 2}).status,
            Status::invalid_argument);
  EXPECT_EQ(describe(TANDEM_FN_PRIORITY_QUEUE, {8, 16, (uint64_t{1} << 24) + 1}).status, Status::invalid_argument);
}

TEST(Kernels, CatalogEntriesAndSoftwareRates) {
  for (uint16_t id : {TANDEM_FN_SOBEL, TANDEM_FN_MATMUL, TANDEM_FN_DCT_QUANT, TANDEM_FN_PRIORITY_QUEUE}) {
    const FunctionInfo* fn = funcs::find_function(id);
    ASSERT_NE(fn, nullptr);
    EXPECT_EQ(funcs::find_function(fn->name), fn);
    EXPECT_GT(funcs::software_throughput(id), 0) << fn->name;
    EXPECT_LE(fn->max_args, TANDEM_INLINE_ARGS) << "the partitioner dispatches inline";
    const auto* entry = devices::rtl::find_rtl_entry(id);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->name, fn->name);
    EXPECT_EQ(entry->unit, fn->units);
  }
  EXPECT_EQ(devices::rtl::find_rtl_entry(uint16_t{TANDEM_FN_WORK}), nullptr);
  EXPECT_EQ(devices::rtl::find_rtl_entry(uint16_t{TANDEM_FN_ACCUMULATE})->unit, "bytes");
}

// ---------------- the RTL catalog and the configuration ----------------

// docs/results/rtl_area.md is what scripts/rtl_area.sh wrote; the constants must be its numbers.
TEST(RtlCatalog, AreaMatchesTheCheckedInTable) {
  std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/docs/results/rtl_area.md");
  ASSERT_TRUE(in) << "docs/results/rtl_area.md";
  std::stringstream ss;
  ss << in.rdbuf();
  // Rows: | name | slice LUTs | LUTs (memory) | LUTs (logic) | flip-flops | BRAMs | DSPs | ...
  size_t rows = 0;
  std::string line;
  while (std::getline(ss, line)) {
    std::vector<std::string> cells;
    std::stringstream cs(line);
    std::string cell;
    while (std::getline(cs, cell, '|')) {
      const size_t b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
    }
    if (cells.size() < 8) continue;
    const auto* entry = cells[1] == "list_walk" ? &devices::rtl::kListWalkAccelerator
                                                : devices::rtl::find_rtl_entry(std::string_view(cells[1]));
    if (entry == nullptr) continue;  // the header and separator rows
    EXPECT_EQ(entry->area.luts, std::stoul(cells[2])) << cells[1];
    EXPECT_EQ(entry->area.flip_flops, std::stoul(cells[5])) << cells[1];
    EXPECT_EQ(entry->area.bram36, std::stod(cells[6])) << cells[1];
    EXPECT_EQ(entry->area.dsps, std::stoul(cells[7])) << cells[1];
    ++rows;
  }
  EXPECT_EQ(rows, devices::rtl::rtl_catalog().size() + 1) << "the stream accelerators and list_walk";
}

TEST(DeviceConfig, Defaults) {
  const config::Config c = config::parse_config("", "t");
  EXPECT_EQ(c.device.kinds, (std::vector<std::string>{"emu"}));
  EXPECT_EQ(c.device.emu.reconfig_delay, "fixed");
  EXPECT_DOUBLE_EQ(c.device.rtl.clock_hz, 200e6);
}

TEST(DeviceConfig, TheRtlDeviceHasItsAcceleratorsResident) {
  const config::Config c = config::parse_config("[device]\nkinds = [\"rtl\"]\n", "t");
  EXPECT_EQ(c.device.rtl.resident,
            (std::vector<std::string>{"accumulate", "sobel", "matmul", "dct_quant", "priority_queue"}));
  EXPECT_EQ(c.device.rtl.reconfig_delay, "bitstream");
  const auto two = config::parse_config("[device]\nkinds = [\"rtl\"]\n[device.rtl]\nslots = 2\n", "t");
  EXPECT_EQ(two.device.rtl.resident, (std::vector<std::string>{"accumulate", "sobel"}));
  const auto mine = config::parse_config("[device.rtl]\nresident = [\"matmul\", \"matmul\"]\n", "t");
  EXPECT_EQ(mine.device.rtl.resident, (std::vector<std::string>{"matmul", "matmul"}));
}

// Whatever a reconfiguration policy asks, the engine never loads a function into a slot whose device
// lacks it: with 4 emulated and 4 RTL slots, `work` fits only the emulated ones.
TEST(DeviceConfig, TheEngineLoadsOnlyWhatTheDeviceHolds) {
  const auto config = config::parse_config("[device]\nkinds = [\"emu\", \"rtl\"]\n[device.emu]\nslots = 4\n"
                                           "[device.rtl]\nslots = 4\n", "t");
  engine::EngineConfig ec;
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) ec.known.set(fn->id);
  engine::SlotClass emu{4, {}, devices::emu_models(config)};
  for (const funcs::FunctionInfo* fn : funcs::all_functions()) emu.loadable.set(fn->id);
  engine::SlotClass rtl{4, {}, devices::rtl::rtl_models(config)};
  for (const auto& e : devices::rtl::rtl_catalog()) rtl.loadable.set(e.function);
  ec.slot_classes = {emu, rtl};
  engine::Engine engine(ec);
  EXPECT_EQ(engine.slot_count(), 8u);
  engine::Actions actions;
  EXPECT_TRUE(engine.load(0, TANDEM_FN_WORK, 0, actions));
  EXPECT_FALSE(engine.load(7, TANDEM_FN_WORK, 0, actions));
  EXPECT_FALSE(engine.load(6, TANDEM_FN_NOP, 0, actions));
  EXPECT_TRUE(engine.load(5, TANDEM_FN_SOBEL, 0, actions));
  EXPECT_TRUE(engine.load(1, TANDEM_FN_SOBEL, 0, actions));
  // Each slot reconfigures in its own device's time: the RTL slot pays the bitstream delay.
  EXPECT_EQ(engine.slot(5).until, engine.slot_model(5, TANDEM_FN_SOBEL).reconfig_ns());
  EXPECT_EQ(engine.slot(1).until, engine.slot_model(1, TANDEM_FN_SOBEL).reconfig_ns());
  EXPECT_NE(engine.slot(5).until, engine.slot(1).until);
  // A function no device holds is never accelerated.
  engine::EngineConfig rtl_only;
  rtl_only.known = ec.known;
  rtl_only.slot_classes = {rtl};
  engine::Engine only(rtl_only);
  EXPECT_FALSE(only.load(0, TANDEM_FN_WORK, 0, actions));
  engine::JobSpec job;
  job.session = only.open_session();
  job.function = TANDEM_FN_WORK;
  job.workload = 10;
  job.completion = 64;
  actions.clear();
  (void)only.submit(job, 0, actions);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].status, Status::not_accelerated);
}

TEST(DeviceConfig, ModelsFollowTheDevice) {
  namespace rtl = devices::rtl;
  // The emulated fabric's default timing of the kernels is the RTL accelerators' at 200 MHz.
  const auto emu = devices::emu_models(config::parse_config("", "t"));
  for (const rtl::RtlCatalogEntry& e : rtl::rtl_catalog()) {
    if (e.function == TANDEM_FN_ACCUMULATE) continue;  // keeps the thesis's numbers (Table 4.3)
    const model::AccelModel nominal = rtl::nominal_model(e, 200e6);
    EXPECT_NEAR(emu[e.function].throughput / nominal.throughput, 1.0, 1e-3) << e.name;
    EXPECT_NEAR(emu[e.function].latency_s, nominal.latency_s, 1e-9) << e.name;
    EXPECT_DOUBLE_EQ(emu[e.function].reconfig_s, 1e-3) << e.name;
  }
  // The rtl device: nominal timing at its clock, the bitstream delay, no accelerator for `work`.
  const auto r = rtl::rtl_models(config::parse_config("[device.rtl]\nclock_mhz = 100\n", "t"));
  // A slot holds any of them: at least dct_quant's logic and DSPs and matmul's BRAMs (docs/rtl.md).
  const double bitstream_s = rtl::slot_reconfiguration_s(1, rtl::ConfigPort{});
  for (const rtl::RtlCatalogEntry& e : rtl::rtl_catalog()) {
    EXPECT_GT(bitstream_s, rtl::reconfiguration_delay_s(e.area) * (e.name == "dct_quant" ? 1.0 : 1.1)) << e.name;
  }
  EXPECT_NEAR(bitstream_s, 1.052e-3, 0.01e-3);
  for (const rtl::RtlCatalogEntry& e : rtl::rtl_catalog()) {
    EXPECT_NEAR(r[e.function].throughput, rtl::nominal_model(e, 100e6).throughput, 1) << e.name;
    EXPECT_NEAR(r[e.function].latency_s, e.fixed_cycles / 100e6, 1e-12) << e.name;
    EXPECT_DOUBLE_EQ(r[e.function].reconfig_s, bitstream_s) << e.name;
  }
  EXPECT_EQ(r[TANDEM_FN_WORK].throughput, 0);
  EXPECT_EQ(r[TANDEM_FN_NOP].throughput, 0);
  // The emulated fabric with the bitstream delay: RTL functions only; a slower port takes longer.
  const auto b = devices::emu_models(
      config::parse_config("[device]\nconfig_port_mbps = 200\nreconfig_setup_us = 50\n"
                           "[device.emu]\nreconfig_delay = \"bitstream\"\n", "t"));
  EXPECT_NEAR(b[TANDEM_FN_SOBEL].reconfig_s, 2 * (bitstream_s) + 50e-6, 1e-8);
  EXPECT_DOUBLE_EQ(b[TANDEM_FN_WORK].reconfig_s, 1e-3);
  EXPECT_GT(b[TANDEM_FN_SOBEL].throughput, 0);
}

}  // namespace
}  // namespace tandem
