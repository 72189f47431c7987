// The kernels' high-level calls (tandem_sobel, tandem_matmul, tandem_dct_quant, tandem_priority_queue)
// through the C API, against the software references of src/funcs/ref computed here, at many sizes
// (0, 1, odd, large), on the embedded runtime and through a private tandemd (buffers in session memory,
// and on the heap, which the runtime's access methods reach), in every mode. Outputs are followed by guard
// bytes that must stay untouched; in hw mode every unit must have run on an accelerator.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "daemon_harness.hpp"
#include "funcs/ref/dct_quant_ref.hpp"
#include "funcs/ref/matmul_ref.hpp"
#include "funcs/ref/pq_ref.hpp"
#include "funcs/ref/sobel_ref.hpp"
#include "tandem/tandem.h"
#include "tandem/tandem.hpp"

namespace {

using tandem::testing::DaemonProcess;

// Every kernel resident on the emulated fabric (two replicas of the row-split ones).
constexpr const char* kConfig =
    "[device.emu]\nslots = 6\nresident = [\"sobel\", \"matmul\", \"dct_quant\", \"priority_queue\", \"dct_quant\", "
    "\"sobel\"]\n";

struct ModeCase {
  const char* name;
  tandem_mode_t mode;
  double alpha;
};
constexpr ModeCase kModes[] = {{"sw", TANDEM_MODE_SW, 0},
                               {"hw", TANDEM_MODE_HW, 0},
                               {"auto", TANDEM_MODE_AUTO, 0},
                               {"alpha", TANDEM_MODE_ALPHA, 0.5}};

// A private daemon for the whole binary, and the embedded runtime's configuration file.
class Environment {
 public:
  static Environment& get() {
    static Environment e;
    return e;
  }
  const std::string& config_path() const { return config_path_; }
  DaemonProcess& daemon() {
    if (!daemon_) daemon_ = std::make_unique<DaemonProcess>(kConfig);
    return *daemon_;
  }

 private:
  Environment() {
    char tmpl[] = "/tmp/tandem-calls-XXXXXX.toml";
    const int fd = mkstemps(tmpl, 5);
    config_path_ = tmpl;
    FILE* f = fdopen(fd, "w");
    std::fputs(kConfig, f);
    std::fclose(f);
  }
  ~Environment() { std::remove(config_path_.c_str()); }
  std::string config_path_;
  std::unique_ptr<DaemonProcess> daemon_;
};

// Memory from tandem_alloc (what accelerators reach in place under tandemd), or the heap; `count`
// elements followed by guard bytes.
template <class T>
class Buffer {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kFill = 0xa5;
  Buffer(tandem_runtime_t* rt, size_t count, bool session_memory) : rt_(session_memory ? rt : nullptr), count_(count) {
    const size_t bytes = count * sizeof(T) + kGuard;
    p_ = static_cast<uint8_t*>(rt_ != nullptr ? tandem_alloc(rt_, bytes) : std::malloc(bytes));
    std::memset(p_, kFill, bytes);
  }
  ~Buffer() { rt_ != nullptr ? tandem_free(rt_, p_) : std::free(p_); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* data() { return count_ == 0 ? nullptr : reinterpret_cast<T*>(p_); }
  T& operator[](size_t i) { return reinterpret_cast<T*>(p_)[i]; }
  bool guard_intact() const {
    return std::all_of(p_ + count_ * sizeof(T), p_ + count_ * sizeof(T) + kGuard, [](uint8_t b) { return b == kFill; });
  }
  bool equals(const std::vector<T>& expected) const {
    return expected.size() == count_ && (count_ == 0 || std::memcmp(p_, expected.data(), count_ * sizeof(T)) == 0);
  }

 private:
  tandem_runtime_t* rt_;
  size_t count_;
  uint8_t* p_;
};

// Where a test's runtime runs and where its buffers live. daemon_heap_phasev: heap buffers named in
// place (zero-copy) by a PHASE/V session, so tandemd faults their pages in while the jobs run (issue 12:
// demand paging for every function that reads client memory).
enum class Placement { embedded, daemon_session_memory, daemon_heap, daemon_heap_phasev };

class Calls : public ::testing::TestWithParam<std::tuple<Placement, ModeCase>> {
 protected:
  void SetUp() override {
    daemon_ = std::get<0>(GetParam()) != Placement::embedded;
    const Placement placement = std::get<0>(GetParam());
    session_ = placement != Placement::daemon_heap && placement != Placement::daemon_heap_phasev;
    mode_ = std::get<1>(GetParam());
    tandem_options_t o;
    tandem_options_init(&o);
    o.mode = mode_.mode;
    o.alpha = mode_.alpha;
    if (daemon_) {
      o.socket_path = Environment::get().daemon().socket().c_str();
    } else {
      o.embedded = 1;
      o.config_path = Environment::get().config_path().c_str();
    }
    ASSERT_EQ(tandem_open(&o, &rt_), TANDEM_OK) << tandem_last_error();
    ASSERT_STREQ(tandem_runtime_kind(rt_), daemon_ ? "daemon" : "embedded");
    if (placement == Placement::daemon_heap_phasev) {
      ASSERT_EQ(tandem_set_address_mode(rt_, TANDEM_ADDRESS_PHASEV), TANDEM_OK) << tandem_last_error();
      ASSERT_EQ(tandem_set_access(rt_, TANDEM_ACCESS_ZERO_COPY), TANDEM_OK) << tandem_last_error();
    }
  }
  void TearDown() override { tandem_close(rt_); }

  tandem_call_stats_t stats() {
    tandem_call_stats_t s{};
    EXPECT_EQ(tandem_get_call_stats(rt_, &s, sizeof s), TANDEM_OK);
    return s;
  }
  // What the mode promises about where `units` of a call ran (stats before and after it).
  void expect_placement(const tandem_call_stats_t& before, uint64_t units, const std::string& what) {
    const tandem_call_stats_t after = stats();
    if (units == 0) return;
    if (mode_.mode == TANDEM_MODE_SW) {
      EXPECT_EQ(after.hw_jobs, before.hw_jobs) << what << ": sw mode sent a job";
      EXPECT_EQ(after.sw_units - before.sw_units, units) << what;
    } else if (mode_.mode == TANDEM_MODE_HW) {
      EXPECT_EQ(after.hw_units - before.hw_units, units) << what << ": hw mode left work in software";
      EXPECT_GT(after.hw_jobs, before.hw_jobs) << what;
    } else {
      EXPECT_EQ(after.hw_units - before.hw_units + after.sw_units - before.sw_units, units) << what;
    }
  }

  bool daemon_ = false;
  bool session_ = true;  // buffers from tandem_alloc (else malloc)
  ModeCase mode_{};
  tandem_runtime_t* rt_ = nullptr;
};

TEST_P(Calls, SobelEqualsTheReference) {
  const std::pair<uint32_t, uint32_t> sizes[] = {{0, 0},  {0, 7},   {7, 0},    {1, 1},    {2, 3},     {3, 3},
                                                 {5, 17}, {64, 64}, {333, 101}, {1, 4000}, {1024, 768}};
  std::mt19937_64 rng(3);
  for (auto [w, h] : sizes) {
    const std::string what = "sobel " + std::to_string(w) + "x" + std::to_string(h);
    const size_t n = size_t{w} * h;
    Buffer<uint8_t> image(rt_, n, session_), out(rt_, n, session_);
    for (size_t i = 0; i < n; ++i) image[i] = static_cast<uint8_t>(rng() >> 56);
    std::vector<uint8_t> expected(n);
    if (n > 0) {
      ASSERT_EQ(tandem::funcs::ref::sobel({image.data(), n}, expected, w, h), tandem::Status::ok);
    }
    const tandem_call_stats_t before = stats();
    ASSERT_EQ(tandem_sobel(rt_, image.data(), out.data(), w, h), TANDEM_OK) << what << ": " << tandem_last_error();
    EXPECT_TRUE(out.equals(expected)) << what;
    EXPECT_TRUE(out.guard_intact()) << what;
    expect_placement(before, n, what);
  }
}

TEST_P(Calls, MatmulEqualsTheReference) {
  const std::tuple<uint32_t, uint32_t, uint32_t> sizes[] = {{0, 0, 0}, {0, 3, 4},   {1, 1, 1},    {2, 0, 3},
                                                            {1, 7, 1}, {3, 5, 7},   {17, 33, 9},  {64, 64, 64},
                                                            {257, 100, 31}};
  std::mt19937_64 rng(4);
  for (auto [m, k, n] : sizes) {
    const std::string what = "matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n);
    Buffer<int16_t> a(rt_, size_t{m} * k, session_), b(rt_, size_t{k} * n, session_);
    Buffer<int32_t> c(rt_, size_t{m} * n, session_);
    for (size_t i = 0; i < size_t{m} * k; ++i) a[i] = static_cast<int16_t>(rng());
    for (size_t i = 0; i < size_t{k} * n; ++i) b[i] = static_cast<int16_t>(rng());
    if (m > 0) a[0] = INT16_MIN;  // the extremes wrap modulo 2^32
    std::vector<int32_t> expected(size_t{m} * n, 0);
    if (k > 0 && m * n > 0) {
      ASSERT_EQ(tandem::funcs::ref::matmul({a.data(), size_t{m} * k}, {b.data(), size_t{k} * n}, expected, m, k, n),
                tandem::Status::ok);
    }
    const tandem_call_stats_t before = stats();
    ASSERT_EQ(tandem_matmul(rt_, a.data(), b.data(), c.data(), m, k, n), TANDEM_OK) << what << ": " << tandem_last_error();
    EXPECT_TRUE(c.equals(expected)) << what;
    EXPECT_TRUE(c.guard_intact()) << what;
    expect_placement(before, uint64_t{m} * n * std::max<uint64_t>(k, 1), what);
  }
}

TEST_P(Calls, DctQuantEqualsTheReferenceInEveryMode) {
  namespace ref = tandem::funcs::ref;
  const size_t block_counts[] = {0, 1, 2, 7, 64, 1001, 20000};
  std::mt19937_64 rng(5);
  for (uint32_t mode : {TANDEM_DCT_MODE_DCT, TANDEM_DCT_MODE_QUANTIZE, TANDEM_DCT_MODE_DCT_QUANTIZE}) {
    for (size_t blocks : block_counts) {
      const int quality = blocks % 2 == 0 ? 50 : 1 + static_cast<int>(blocks % 100);
      const std::string what = "dct_quant mode " + std::to_string(mode) + ", " + std::to_string(blocks) +
                               " blocks, quality " + std::to_string(quality);
      const ref::QuantTable qt = ref::jpeg_luma_quant_table(quality, false);
      Buffer<uint16_t> table(rt_, 64, session_);
      std::memcpy(table.data(), qt.data(), sizeof qt);
      Buffer<int16_t> out(rt_, blocks * 64, session_);
      std::vector<int16_t> expected(blocks * 64);
      const tandem_call_stats_t before = stats();
      tandem_status_t s;
      if (mode == TANDEM_DCT_MODE_QUANTIZE) {
        Buffer<int16_t> coefs(rt_, blocks * 64, session_);
        for (size_t i = 0; i < blocks * 64; ++i) coefs[i] = static_cast<int16_t>(static_cast<int64_t>(rng() % 32768) - 16384);
        for (size_t b = 0; b < blocks; ++b) {
          ref::CoefBlock c;
          std::memcpy(c.data(), &coefs[b * 64], 128);
          const ref::CoefBlock q = ref::quantize(c, qt);
          std::memcpy(&expected[b * 64], q.data(), 128);
        }
        s = tandem_dct_quant(rt_, mode, coefs.data(), out.data(), blocks, table.data());
      } else {
        Buffer<uint8_t> samples(rt_, blocks * 64, session_);
        for (size_t i = 0; i < blocks * 64; ++i) samples[i] = static_cast<uint8_t>(rng() >> 56);
        if (blocks > 2) std::memset(&samples[64], 255, 64), std::memset(&samples[128], 0, 64);  // the extremes
        for (size_t b = 0; b < blocks; ++b) {
          ref::SampleBlock in;
          std::memcpy(in.data(), &samples[b * 64], 64);
          ref::CoefBlock c = ref::fdct_islow(in);
          if (mode == TANDEM_DCT_MODE_DCT_QUANTIZE) c = ref::quantize(c, qt);
          std::memcpy(&expected[b * 64], c.data(), 128);
        }
        s = tandem_dct_quant(rt_, mode, samples.data(), out.data(), blocks,
                             mode == TANDEM_DCT_MODE_DCT ? nullptr : table.data());
      }
      ASSERT_EQ(s, TANDEM_OK) << what << ": " << tandem_last_error();
      EXPECT_TRUE(out.equals(expected)) << what;
      EXPECT_TRUE(out.guard_intact()) << what;
      expect_placement(before, blocks, what);
    }
  }
}

TEST_P(Calls, PriorityQueueEqualsTheReference) {
  namespace ref = tandem::funcs::ref;
  const size_t counts[] = {0, 1, 2, 17, 300, 4096};
  std::mt19937_64 rng(6);
  for (size_t count : counts) {
    const std::string what = "priority_queue " + std::to_string(count);
    Buffer<uint64_t> commands(rt_, count, session_), responses(rt_, count, session_);
    // Pushes first (past the capacity for the longer batches), then a mix of every operation.
    for (size_t i = 0; i < count; ++i) {
      const uint8_t prio = static_cast<uint8_t>(rng() % 8 * 31);
      const int op = i < count / 2 ? 0 : static_cast<int>(rng() % 5);
      commands[i] = op == 0   ? tandem_pq_push(static_cast<uint32_t>(i + 1), prio, static_cast<int>(rng() % 4 == 0))
                    : op == 1 ? tandem_pq_pop(prio, 0)
                    : op == 2 ? tandem_pq_pop(0, 1)
                    : op == 3 ? tandem_pq_peek(prio, 0)
                              : tandem_pq_peek(0, 1);
    }
    ref::PriorityQueueRef queue(ref::kPqRefCapacity);
    std::vector<uint64_t> expected(count);
    for (size_t i = 0; i < count; ++i) {
      expected[i] = ref::encode_pq_response(queue.execute(ref::decode_pq_command(commands[i])));
    }
    uint64_t remaining = 12345;
    const tandem_call_stats_t before = stats();
    ASSERT_EQ(tandem_priority_queue(rt_, commands.data(), responses.data(), count, &remaining), TANDEM_OK)
        << what << ": " << tandem_last_error();
    EXPECT_TRUE(responses.equals(expected)) << what;
    EXPECT_TRUE(responses.guard_intact()) << what;
    EXPECT_EQ(remaining, queue.size()) << what;
    expect_placement(before, count, what);
  }
}

std::string mode_case_name(const ::testing::TestParamInfo<std::tuple<Placement, ModeCase>>& info) {
  const Placement p = std::get<0>(info.param);
  return std::string(p == Placement::embedded             ? "embedded_"
                     : p == Placement::daemon_heap        ? "daemon_heap_"
                     : p == Placement::daemon_heap_phasev ? "daemon_heap_phasev_"
                                                          : "daemon_") +
         std::get<1>(info.param).name;
}
INSTANTIATE_TEST_SUITE_P(EveryRuntimeAndMode, Calls,
                         ::testing::Combine(::testing::Values(Placement::embedded, Placement::daemon_session_memory,
                                                              Placement::daemon_heap, Placement::daemon_heap_phasev),
                                            ::testing::ValuesIn(kModes)),
                         mode_case_name);

// ---- the header's helpers, the C++ wrapper, errors ----

// Options of an embedded runtime on the fabric above, in hw mode.
tandem_options_t embedded_hw_options() {
  tandem_options_t o;
  tandem_options_init(&o);
  o.embedded = 1;
  o.mode = TANDEM_MODE_HW;
  o.config_path = Environment::get().config_path().c_str();
  return o;
}

TEST(CallsApi, PriorityQueueWordsMatchTheAcceleratorsLayout) {
  namespace ref = tandem::funcs::ref;
  EXPECT_EQ(tandem_pq_push(0xdeadbeef, 200, 1), ref::encode_pq_command({1, 0xdeadbeef, 200, true, false}));
  EXPECT_EQ(tandem_pq_pop(7, 0), ref::encode_pq_command({2, 0, 7, false, false}));
  EXPECT_EQ(tandem_pq_peek(0, 1), ref::encode_pq_command({3, 0, 0, false, true}));
  const uint64_t r = ref::encode_pq_response({77, 9, true, 300});
  EXPECT_EQ(tandem_pq_response_handle(r), 77u);
  EXPECT_EQ(tandem_pq_response_priority(r), 9u);
  EXPECT_EQ(tandem_pq_response_ok(r), 1);
  EXPECT_EQ(tandem_pq_response_occupancy(r), 300u);
  EXPECT_EQ(TANDEM_PQ_CAPACITY, ref::kPqRefCapacity);
}

TEST(CallsApi, BadArgumentsAreRefusedWithAMessageAndNothingWritten) {
  const tandem_options_t o = embedded_hw_options();
  tandem_runtime_t* rt = nullptr;
  ASSERT_EQ(tandem_open(&o, &rt), TANDEM_OK);
  std::vector<uint8_t> img(64, 7), out(64, 0xee);
  const auto refused = [](tandem_status_t s, const char* needle) {
    return s == TANDEM_INVALID_ARGUMENT && std::string(tandem_last_error()).find(needle) != std::string::npos;
  };
  EXPECT_TRUE(refused(tandem_sobel(nullptr, img.data(), out.data(), 8, 8), "null runtime"));
  EXPECT_TRUE(refused(tandem_sobel(rt, nullptr, out.data(), 8, 8), "null"));
  EXPECT_TRUE(refused(tandem_sobel(rt, img.data(), img.data() + 8, 8, 8), "overlapping"));
  EXPECT_TRUE(refused(tandem_sobel(rt, img.data(), out.data(), (1u << 20) + 1, 1), "2^20"));
  EXPECT_TRUE(std::all_of(out.begin(), out.end(), [](uint8_t v) { return v == 0xee; }));
  std::vector<int16_t> a(4, 1), coefs(64, 0x5555);
  std::vector<int32_t> c(4, 0x5555);
  EXPECT_TRUE(refused(tandem_matmul(rt, a.data(), nullptr, c.data(), 2, 2, 2), "null"));
  EXPECT_TRUE(refused(tandem_matmul(rt, a.data(), a.data(), c.data(), 70000, 1, 1), "65535"));
  EXPECT_EQ(c[0], 0x5555);
  std::vector<uint16_t> table(64, 16);
  EXPECT_TRUE(refused(tandem_dct_quant(rt, 4, img.data(), coefs.data(), 1, table.data()), "unknown mode"));
  EXPECT_TRUE(refused(tandem_dct_quant(rt, TANDEM_DCT_MODE_DCT_QUANTIZE, img.data(), coefs.data(), 1, nullptr), "table"));
  table[17] = 0;
  EXPECT_TRUE(refused(tandem_dct_quant(rt, TANDEM_DCT_MODE_DCT_QUANTIZE, img.data(), coefs.data(), 1, table.data()),
                      "entry 17 is 0"));
  EXPECT_TRUE(std::all_of(coefs.begin(), coefs.end(), [](int16_t v) { return v == 0x5555; }));
  std::vector<uint64_t> cmds(4, tandem_pq_push(1, 1, 0)), resp(4, 0);
  EXPECT_TRUE(refused(tandem_priority_queue(rt, cmds.data(), nullptr, 4, nullptr), "null"));
  EXPECT_TRUE(refused(tandem_priority_queue(rt, cmds.data(), cmds.data() + 1, 3, nullptr), "overlapping"));
  EXPECT_TRUE(refused(tandem_get_call_stats(rt, nullptr, 0), "null"));
  // Zero-sized calls need no buffers.
  EXPECT_EQ(tandem_sobel(rt, nullptr, nullptr, 0, 5), TANDEM_OK);
  EXPECT_EQ(tandem_matmul(rt, nullptr, nullptr, nullptr, 0, 9, 9), TANDEM_OK);
  EXPECT_EQ(tandem_dct_quant(rt, TANDEM_DCT_MODE_DCT, nullptr, nullptr, 0, nullptr), TANDEM_OK);
  EXPECT_EQ(tandem_priority_queue(rt, nullptr, nullptr, 0, nullptr), TANDEM_OK);
  // A caller built with an older, shorter tandem_call_stats_t gets its prefix only.
  uint64_t prefix[3] = {0, 0, 0xabcdef};
  EXPECT_EQ(tandem_get_call_stats(rt, reinterpret_cast<tandem_call_stats_t*>(prefix), 2 * sizeof(uint64_t)), TANDEM_OK);
  EXPECT_GT(prefix[0], 0u);
  EXPECT_EQ(prefix[2], 0xabcdefu);
  tandem_close(rt);
}

TEST(CallsApi, CppWrapperRunsEveryCallAndChecksSpans) {
  const tandem_options_t o = embedded_hw_options();
  tandem::Runtime rt(&o);
  namespace ref = tandem::funcs::ref;
  std::vector<uint8_t> img(40 * 30), edges(img.size()), expected(img.size());
  for (size_t i = 0; i < img.size(); ++i) img[i] = static_cast<uint8_t>(i * 37);
  rt.sobel(img, edges, 40, 30);
  ASSERT_EQ(ref::sobel(img, expected, 40, 30), tandem::Status::ok);
  EXPECT_EQ(edges, expected);
  EXPECT_THROW(rt.sobel(img, std::span(edges).first(10), 40, 30), tandem::ApiError);

  std::vector<int16_t> a(6 * 5, 3), b(5 * 4, -2);
  std::vector<int32_t> c(6 * 4);
  rt.matmul(a, b, c, 6, 5, 4);
  EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](int32_t v) { return v == -30; }));

  const ref::QuantTable table = ref::jpeg_luma_quant_table(75, false);
  std::vector<uint8_t> samples(3 * 64);
  for (size_t i = 0; i < samples.size(); ++i) samples[i] = static_cast<uint8_t>(i * 5);
  std::vector<int16_t> coefs(samples.size()), quantized(samples.size()), chained(samples.size());
  rt.dct(samples, coefs);
  rt.quantize(coefs, quantized, table);
  rt.dct_quant(samples, chained, table);
  EXPECT_EQ(quantized, chained);  // the chain is the two stages
  ref::SampleBlock first;
  std::copy_n(samples.begin(), 64, first.begin());
  const ref::CoefBlock expected_first = ref::quantize(ref::fdct_islow(first), table);
  EXPECT_TRUE(std::equal(expected_first.begin(), expected_first.end(), chained.begin()));
  EXPECT_THROW(rt.dct(std::span(samples).first(63), coefs), tandem::ApiError);

  const std::vector<uint64_t> commands{tandem_pq_push(5, 1, 0), tandem_pq_push(6, 9, 0), tandem_pq_pop(0, 1)};
  std::vector<uint64_t> responses(commands.size());
  EXPECT_EQ(rt.priority_queue(commands, responses), 1u);
  EXPECT_EQ(tandem_pq_response_handle(responses[2]), 6u);  // the highest priority first
  EXPECT_THROW(rt.priority_queue(commands, std::span(responses).first(1)), tandem::ApiError);
  const tandem_call_stats_t s = rt.call_stats();
  EXPECT_GE(s.calls, 6u);
  EXPECT_GT(s.hw_jobs, 0u);
}

}  // namespace
