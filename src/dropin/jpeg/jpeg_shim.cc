// libtandem_jpeg.so: an unmodified libjpeg program (cjpeg, ...) accelerated by preloading this library
// (LD_PRELOAD). It wraps jpeg_start_compress: once libjpeg has set a compression up, the forward-DCT
// object's forward_DCT method is replaced by ours. libjpeg asks for a few blocks of one block row at a
// time (one MCU); the first request of a row sends the whole row (every block of that component's 8
// sample rows) to tandem's dct_quant in one call, and this and the later requests of the row are
// answered from its result, after checking that their samples are the ones the row was computed from.
// Anything else (other DCTs, a library it does not recognise, a failed call) goes to libjpeg's own
// method, so the output is always libjpeg's, byte for byte (docs/dropin.md).
//
// Environment (read once):
//   TANDEM_JPEG=tandem|measure|off   tandem (default); measure: libjpeg's own DCT, timed per row (the
//                                    experiment's DCT share); off: nothing wrapped
//   TANDEM_RUNTIME=auto|embedded|daemon  auto (default): tandemd if one runs (TANDEM_SOCKET or the default
//                                    socket), else the embedded runtime, else libjpeg
//   TANDEM_WAIT=spin|block|<us>       how a row's call waits for its jobs (open_runtime.h)
//   TANDEM_MODE, TANDEM_CONFIG, TANDEM_SOCKET  as for any tandem program
//   TANDEM_VERBOSE=1                 one line on stderr per thing not taken over, and a summary at exit
//   TANDEM_JPEG_STATS=FILE           counters and the time spent per stage, as JSON, written at exit
#include <time.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>

#include "dropin/jpeg/libjpeg_turbo.hpp"
#include "dropin/open_runtime.h"
#include "tandem/tandem.h"

namespace tandem::dropin::jpeg {

namespace {

enum class ShimMode { tandem, measure, off };

constexpr int kRowsPerComponent = 4;  // block rows of one component in an MCU row (v_samp_factor <= 4)
constexpr size_t kSampleBlockBytes = 64;
constexpr size_t kCoefBlockBytes = 64 * sizeof(JCOEF);
static_assert(sizeof(JCOEF) == sizeof(int16_t) && sizeof(JSAMPLE) == 1 && DCTSIZE == 8 && DCTSIZE2 == 64);

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::string env(const char* name, const char* fallback = "") {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

struct Settings {
  ShimMode mode = ShimMode::tandem;
  bool verbose = false;
  std::string stats_path;
  std::string bad_setting;  // a value not understood (reported once, defaults used)

  Settings() {
    const std::string m = env("TANDEM_JPEG", "tandem");
    if (m == "measure") {
      mode = ShimMode::measure;
    } else if (m == "off") {
      mode = ShimMode::off;
    } else if (m != "tandem" && !m.empty()) {
      bad_setting = "TANDEM_JPEG='" + m + "' (tandem|measure|off): using tandem";
    }
    const std::string v = env("TANDEM_VERBOSE");
    verbose = !v.empty() && v != "0";
    stats_path = env("TANDEM_JPEG_STATS");
  }
};

// Counters of the whole process (any thread may compress).
struct Counters {
  std::atomic<uint64_t> compressions{0};  // jpeg_start_compress calls
  std::atomic<uint64_t> handled{0};       // compressions whose DCT the shim took over
  std::atomic<uint64_t> rows{0};          // block rows computed (one dct_quant call each in tandem mode)
  std::atomic<uint64_t> blocks{0};        // blocks in those rows
  std::atomic<uint64_t> requests{0};      // libjpeg's forward_DCT calls answered from a row
  std::atomic<uint64_t> refreshed_rows{0};  // rows computed again in a slot: libjpeg's next MCU row, or
                                            // samples that changed under a kept row (told by the samples)
  std::atomic<uint64_t> passed_requests{0};  // forward_DCT calls handed to libjpeg's own method
  std::atomic<uint64_t> failed_calls{0};  // dct_quant calls that failed (the compression went back to libjpeg)
  // Time per stage (ns), measured only when TANDEM_JPEG_STATS is set.
  std::atomic<int64_t> gather_ns{0};  // copying a row's samples into the call's input (buffer fill)
  std::atomic<int64_t> call_ns{0};    // the dct_quant calls (measure mode: libjpeg's own forward_DCT per row)
  std::atomic<int64_t> serve_ns{0};   // checking samples and copying coefficients out (buffer read)
  std::atomic<int64_t> open_ns{0};    // opening the runtime
};

// Memory of one block row: samples (blocks x 64 bytes, block-major), coefficients, the table.
// From the runtime (zero copy under tandemd) in tandem mode, else from the heap.
class RowMemory {
 public:
  RowMemory() = default;
  ~RowMemory() { release(); }
  RowMemory(const RowMemory&) = delete;
  RowMemory& operator=(const RowMemory&) = delete;

  bool reserve(tandem_runtime_t* rt, JDIMENSION blocks) {
    if (blocks <= capacity_ && base_ != nullptr) return true;
    release();
    const size_t bytes = size_t{blocks} * (kSampleBlockBytes + kCoefBlockBytes) + 64 * sizeof(uint16_t);
    base_ = rt != nullptr ? tandem_alloc(rt, bytes) : std::malloc(bytes);
    if (base_ == nullptr) return false;
    rt_ = rt;
    capacity_ = blocks;
    return true;
  }
  void release() {
    if (base_ != nullptr) (rt_ != nullptr ? tandem_free(rt_, base_) : std::free(base_));
    base_ = nullptr;
    capacity_ = 0;
  }
  // Coefficients first: they are 2-byte aligned like the table; samples need no alignment.
  JBLOCKROW coefs() const { return static_cast<JBLOCKROW>(base_); }
  uint16_t* table() const { return reinterpret_cast<uint16_t*>(static_cast<char*>(base_) + capacity_ * kCoefBlockBytes); }
  uint8_t* samples() const {
    return static_cast<uint8_t*>(base_) + capacity_ * kCoefBlockBytes + 64 * sizeof(uint16_t);
  }

 private:
  void* base_ = nullptr;
  tandem_runtime_t* rt_ = nullptr;
  JDIMENSION capacity_ = 0;
};

// One block row of one component, as last computed.
struct Row {
  bool valid = false;
  JSAMPARRAY sample_rows = nullptr;  // libjpeg's row pointers the row was read through
  JDIMENSION start_row = 0;
  JDIMENSION blocks = 0;
  RowMemory memory;
};

// A compression the shim took over. Its thread counts its requests in plain fields (a request costs
// tens of nanoseconds; an atomic add per request would be a good part of that) and adds them to the
// process's counters when the compression's state goes.
struct Compression {
  explicit Compression(Counters& process) : counters(process) {}
  ~Compression() {
    counters.requests.fetch_add(requests, std::memory_order_relaxed);
    counters.refreshed_rows.fetch_add(refreshed_rows, std::memory_order_relaxed);
    counters.passed_requests.fetch_add(passed_requests, std::memory_order_relaxed);
  }
  Compression(const Compression&) = delete;
  Compression& operator=(const Compression&) = delete;

  Counters& counters;
  ForwardDctFn original = nullptr;  // libjpeg's forward_DCT
  bool disabled = false;            // a call failed: the rest of this compression is libjpeg's
  uint64_t requests = 0, refreshed_rows = 0, passed_requests = 0;
  std::array<Row, MAX_COMPONENTS * kRowsPerComponent> rows;
};

class Shim {
 public:
  static Shim& get() {
    static Shim shim;
    return shim;
  }

  const Settings& settings() const { return settings_; }
  Counters& counters() { return counters_; }
  // The runtime, in the process that opened it only: a forked child has a copy of its state but not its
  // threads (embedded) or its own session (daemon), so the child's compressions are libjpeg's.
  tandem_runtime_t* runtime() const { return getpid() == opener_ ? runtime_ : nullptr; }

  // Prints "tandem_jpeg: <text>" once per distinct text when TANDEM_VERBOSE is set.
  void note(const std::string& text) {
    if (!settings_.verbose) return;
    std::lock_guard lock(mutex_);
    if (noted_.insert(text).second) std::fprintf(stderr, "tandem_jpeg: %s\n", text.c_str());
  }

  // The runtime for tandem mode, opened on first use: null if none can be opened (libjpeg then).
  tandem_runtime_t* open_runtime() {
    std::call_once(open_once_, [this] {
      const int64_t t0 = now_ns();
      char why[512];
      int fell_back = 0;
      const tandem_status_t s = tandem_dropin_open(&runtime_, &fell_back, why, sizeof why);
      opener_ = getpid();
      if (fell_back) note(std::string(why) + ": the embedded runtime instead");
      counters_.open_ns.store(now_ns() - t0, std::memory_order_relaxed);
      if (s != TANDEM_OK) {
        note(std::string("no tandem runtime (") + why + "): libjpeg's own DCT");
      } else {
        runtime_kind_ = tandem_runtime_kind(runtime_);
        note("forward DCT + quantization through tandem's dct_quant (" + runtime_kind_ + " runtime)");
        // At exit the runtime closes before anything libtandem set up while opening it is torn down:
        // handlers run in reverse order of registration.
        std::atexit([] { Shim::get().close_runtime(); });
      }
    });
    return runtime();
  }

  // The stats file and the summary line are written at exit, after the runtime closed (see open_runtime).
  void report_at_exit() {
    std::call_once(report_once_, [] { std::atexit([] { Shim::get().report(); }); });
  }

  // The state of `cinfo`'s compression, replaced (a new compression on the same object starts afresh).
  Compression& begin(j_compress_ptr cinfo, ForwardDctFn original) {
    auto fresh = std::make_unique<Compression>(counters_);
    fresh->original = original;
    Compression& c = *fresh;
    std::lock_guard lock(mutex_);
    compressions_[cinfo] = std::move(fresh);
    generation_.fetch_add(1, std::memory_order_release);
    any_original_.store(original, std::memory_order_relaxed);
    return c;
  }
  void end(const void* cinfo) {
    std::unique_ptr<Compression> gone;  // released outside the lock
    std::lock_guard lock(mutex_);
    auto it = compressions_.find(static_cast<j_compress_ptr>(const_cast<void*>(cinfo)));
    if (it == compressions_.end()) return;
    gone = std::move(it->second);
    compressions_.erase(it);
    generation_.fetch_add(1, std::memory_order_release);
  }
  // Lock-free for the usual caller: one thread compressing one image remembers its entry until the
  // registry changes.
  Compression* find(j_compress_ptr cinfo) {
    thread_local j_compress_ptr last_cinfo = nullptr;
    thread_local Compression* last = nullptr;
    thread_local uint64_t last_generation = 0;
    const uint64_t generation = generation_.load(std::memory_order_acquire);
    if (cinfo == last_cinfo && generation == last_generation) return last;
    std::lock_guard lock(mutex_);
    auto it = compressions_.find(cinfo);
    last_cinfo = cinfo;
    last = it == compressions_.end() ? nullptr : it->second.get();
    last_generation = generation_.load(std::memory_order_relaxed);
    return last;
  }
  // libjpeg's forward_DCT as seen last (the same method for every integer-DCT compression).
  ForwardDctFn any_original() const { return any_original_.load(std::memory_order_relaxed); }

  // At exit: the rows' memory (the runtime's) is released, the counters read, the runtime closed.
  void close_runtime() {
    std::unique_lock lock(mutex_);
    compressions_.clear();
    generation_.fetch_add(1, std::memory_order_release);
    lock.unlock();
    if (runtime_ == nullptr) return;
    if (getpid() != opener_) {  // a forked child: closing would stop threads it does not have
      runtime_ = nullptr;
      return;
    }
    have_call_stats_ = tandem_get_call_stats(runtime_, &call_stats_, sizeof call_stats_) == TANDEM_OK;
    tandem_close(runtime_);
    runtime_ = nullptr;
  }

  void report() {
    close_runtime();  // when it was never opened: only the state goes
    if (!settings_.stats_path.empty()) write_stats(have_call_stats_ ? &call_stats_ : nullptr);
    if (settings_.verbose) {
      std::fprintf(stderr,
                   "tandem_jpeg: %llu compression(s), %llu taken over: %llu block rows, %llu blocks; %llu accelerator "
                   "jobs, %llu blocks on accelerators, %llu in software\n",
                   ull(counters_.compressions), ull(counters_.handled), ull(counters_.rows), ull(counters_.blocks),
                   static_cast<unsigned long long>(call_stats_.hw_jobs),
                   static_cast<unsigned long long>(call_stats_.hw_units),
                   static_cast<unsigned long long>(call_stats_.sw_units));
    }
  }

 private:
  Shim() {
    if (!settings_.bad_setting.empty()) note(settings_.bad_setting);
  }

  static unsigned long long ull(const std::atomic<uint64_t>& v) { return v.load(std::memory_order_relaxed); }

  void write_stats(const tandem_call_stats_t* stats) {
    FILE* f = std::fopen(settings_.stats_path.c_str(), "w");
    if (f == nullptr) {
      std::fprintf(stderr, "tandem_jpeg: cannot write TANDEM_JPEG_STATS file %s\n", settings_.stats_path.c_str());
      return;
    }
    const auto i64 = [](const std::atomic<int64_t>& v) { return static_cast<long long>(v.load()); };
    const char* mode = settings_.mode == ShimMode::tandem ? "tandem" : settings_.mode == ShimMode::measure ? "measure" : "off";
    std::fprintf(f,
                 "{\"mode\": \"%s\", \"runtime\": \"%s\", \"compressions\": %llu, \"handled\": %llu, \"rows\": %llu, "
                 "\"blocks\": %llu, \"requests\": %llu, \"refreshed_rows\": %llu, \"passed_requests\": %llu, "
                 "\"failed_calls\": %llu, \"gather_ns\": %lld, \"call_ns\": %lld, \"serve_ns\": %lld, \"open_ns\": %lld",
                 mode, runtime_kind_.c_str(), ull(counters_.compressions),
                 ull(counters_.handled), ull(counters_.rows), ull(counters_.blocks), ull(counters_.requests),
                 ull(counters_.refreshed_rows), ull(counters_.passed_requests), ull(counters_.failed_calls),
                 i64(counters_.gather_ns), i64(counters_.call_ns), i64(counters_.serve_ns), i64(counters_.open_ns));
    if (stats != nullptr) {
      std::fprintf(f,
                   ", \"tandem\": {\"calls\": %llu, \"sw_calls\": %llu, \"accelerated_calls\": %llu, \"hw_jobs\": %llu, "
                   "\"hw_units\": %llu, \"sw_units\": %llu, \"demand_jobs\": %llu, \"fallbacks\": %llu}",
                   static_cast<unsigned long long>(stats->calls), static_cast<unsigned long long>(stats->sw_calls),
                   static_cast<unsigned long long>(stats->accelerated_calls),
                   static_cast<unsigned long long>(stats->hw_jobs), static_cast<unsigned long long>(stats->hw_units),
                   static_cast<unsigned long long>(stats->sw_units), static_cast<unsigned long long>(stats->demand_jobs),
                   static_cast<unsigned long long>(stats->fallbacks));
    }
    std::fprintf(f, "}\n");
    std::fclose(f);
  }

  Settings settings_;
  Counters counters_;
  std::once_flag open_once_;
  std::once_flag report_once_;
  tandem_runtime_t* runtime_ = nullptr;
  pid_t opener_ = 0;  // the process that opened runtime_
  std::string runtime_kind_ = "none";  // what runtime_ was ("embedded", "daemon"), kept past its close
  tandem_call_stats_t call_stats_{};
  bool have_call_stats_ = false;
  std::mutex mutex_;
  std::set<std::string> noted_;
  std::unordered_map<j_compress_ptr, std::unique_ptr<Compression>> compressions_;
  std::atomic<uint64_t> generation_{1};
  std::atomic<ForwardDctFn> any_original_{nullptr};
};

// The 8 sample rows of blocks [first, first + count) equal what the row was computed from.
bool same_samples(const Row& row, const JSAMPROW* rows, JDIMENSION first, JDIMENSION count) {
  const uint8_t* kept = row.memory.samples();
  for (JDIMENSION b = first; b < first + count; ++b) {
    for (int r = 0; r < DCTSIZE; ++r) {
      if (std::memcmp(kept + size_t{b} * kSampleBlockBytes + r * DCTSIZE, rows[r] + size_t{b} * DCTSIZE, DCTSIZE) != 0) {
        return false;
      }
    }
  }
  return true;
}

// Computes every block of a component's block row (8 sample rows from start_row) into `row`.
bool compute_row(Shim& shim, j_compress_ptr cinfo, Compression& c, Row& row, jpeg_component_info* comp,
                 JSAMPARRAY sample_rows, JDIMENSION start_row) {
  const bool timed = !shim.settings().stats_path.empty();
  const bool measure = shim.settings().mode == ShimMode::measure;
  const JDIMENSION blocks = comp->width_in_blocks;
  row.valid = false;
  if (blocks == 0 || !row.memory.reserve(measure ? nullptr : shim.runtime(), blocks)) return false;
  const int64_t t0 = timed ? now_ns() : 0;
  // Gather: block-major 8x8 samples (what dct_quant reads, and what later requests are checked against).
  uint8_t* samples = row.memory.samples();
  for (int r = 0; r < DCTSIZE; ++r) {
    const JSAMPLE* src = sample_rows[start_row + r];
    for (JDIMENSION b = 0; b < blocks; ++b) std::memcpy(samples + size_t{b} * kSampleBlockBytes + r * DCTSIZE, src + size_t{b} * DCTSIZE, DCTSIZE);
  }
  const int64_t t1 = timed ? now_ns() : 0;
  Counters& n = shim.counters();
  if (measure) {
    // libjpeg's own method over the whole row, into our memory: the time it spends on the DCT.
    const int64_t d0 = now_ns();
    c.original(cinfo, comp, sample_rows, row.memory.coefs(), start_row, 0, blocks);
    n.call_ns.fetch_add(now_ns() - d0, std::memory_order_relaxed);
  } else {
    const UINT16* quantval = cinfo->quant_tbl_ptrs[comp->quant_tbl_no]->quantval;
    uint16_t* table = row.memory.table();
    for (int i = 0; i < DCTSIZE2; ++i) table[i] = quantval[i];
    const tandem_status_t s = tandem_dct_quant(shim.runtime(), TANDEM_DCT_MODE_DCT_QUANTIZE, samples,
                                               reinterpret_cast<int16_t*>(row.memory.coefs()), blocks, table);
    if (timed) n.call_ns.fetch_add(now_ns() - t1, std::memory_order_relaxed);
    if (s != TANDEM_OK) {
      n.failed_calls.fetch_add(1, std::memory_order_relaxed);
      shim.note(std::string("dct_quant failed (") + tandem_status_name(s) + ": " + tandem_last_error() +
                "): libjpeg finishes the compression");
      c.disabled = true;
      return false;
    }
  }
  if (timed) n.gather_ns.fetch_add(t1 - t0, std::memory_order_relaxed);
  n.rows.fetch_add(1, std::memory_order_relaxed);
  n.blocks.fetch_add(blocks, std::memory_order_relaxed);
  row.valid = true;
  row.sample_rows = sample_rows;
  row.start_row = start_row;
  row.blocks = blocks;
  return true;
}

// Answers one forward_DCT request from its block row; false: libjpeg's own method must answer it.
bool serve(Shim& shim, j_compress_ptr cinfo, Compression& c, jpeg_component_info* comp, JSAMPARRAY sample_rows,
           JBLOCKROW coef_blocks, JDIMENSION start_row, JDIMENSION start_col, JDIMENSION num_blocks) {
  if (c.disabled || start_row % DCTSIZE != 0 || start_row / DCTSIZE >= kRowsPerComponent || start_col % DCTSIZE != 0 ||
      comp->component_index < 0 || comp->component_index >= MAX_COMPONENTS) {
    return false;
  }
  const JDIMENSION first = start_col / DCTSIZE;
  if (first + num_blocks > comp->width_in_blocks) return false;
  Row& row = c.rows[static_cast<size_t>(comp->component_index) * kRowsPerComponent + start_row / DCTSIZE];
  const bool timed = !shim.settings().stats_path.empty();
  const int64_t t0 = timed ? now_ns() : 0;
  int64_t computing_ns = 0;  // the row's own stages, counted by compute_row
  const bool cached = row.valid && row.sample_rows == sample_rows && row.start_row == start_row &&
                      row.blocks == comp->width_in_blocks;
  if (!cached || !same_samples(row, sample_rows + start_row, first, num_blocks)) {
    if (cached) ++c.refreshed_rows;
    const int64_t c0 = timed ? now_ns() : 0;
    if (!compute_row(shim, cinfo, c, row, comp, sample_rows, start_row)) return false;
    if (timed) computing_ns = now_ns() - c0;
  }
  std::memcpy(coef_blocks, row.memory.coefs() + first, size_t{num_blocks} * kCoefBlockBytes);
  ++c.requests;
  if (timed) shim.counters().serve_ns.fetch_add(now_ns() - t0 - computing_ns, std::memory_order_relaxed);
  return true;
}

// libjpeg calls this instead of its forward_DCT for every compression the shim took over.
void forward_dct(j_compress_ptr cinfo, jpeg_component_info* comp, JSAMPARRAY sample_rows, JBLOCKROW coef_blocks,
                 JDIMENSION start_row, JDIMENSION start_col, JDIMENSION num_blocks) {
  Shim& shim = Shim::get();
  Compression* c = shim.find(cinfo);
  ForwardDctFn original = c != nullptr ? c->original : shim.any_original();
  bool done = false;
  if (c != nullptr) {
    try {
      done = serve(shim, cinfo, *c, comp, sample_rows, coef_blocks, start_row, start_col, num_blocks);
    } catch (...) {  // nothing may unwind through libjpeg's C frames; libjpeg answers instead
      done = false;
    }
  }
  if (done) return;
  if (c != nullptr) {
    ++c->passed_requests;
  } else {
    shim.counters().passed_requests.fetch_add(1, std::memory_order_relaxed);
  }
  original(cinfo, comp, sample_rows, coef_blocks, start_row, start_col, num_blocks);
}

// After libjpeg set up a compression: take its DCT over if it is one we handle.
void take_over(j_compress_ptr cinfo) noexcept {
  Shim& shim = Shim::get();
  try {
    shim.report_at_exit();
    shim.counters().compressions.fetch_add(1, std::memory_order_relaxed);
    if (shim.settings().mode == ShimMode::off) return;
    const std::string why = unhandled_reason(cinfo, library());
    if (!why.empty()) {
      shim.note("left to libjpeg: " + why);
      shim.end(cinfo);  // a previous compression's state must not answer for this one
      return;
    }
    if (shim.settings().mode == ShimMode::tandem && shim.open_runtime() == nullptr) {
      shim.end(cinfo);
      return;
    }
    ForwardDctHead* head = fdct_head(cinfo);
    shim.begin(cinfo, head->forward_DCT);
    head->forward_DCT = forward_dct;
    shim.counters().handled.fetch_add(1, std::memory_order_relaxed);
  } catch (...) {
    shim.end(cinfo);  // out of memory: this compression stays libjpeg's
  }
}

}  // namespace

}  // namespace tandem::dropin::jpeg

// The jpeg62 entry points this library wraps (exported with libjpeg's symbol version, libjpeg62.map).
extern "C" {

__attribute__((visibility("default"))) void jpeg_start_compress(j_compress_ptr cinfo, boolean write_all_tables) {
  namespace j = tandem::dropin::jpeg;
  j::library().start_compress(cinfo, write_all_tables);
  j::take_over(cinfo);
}

__attribute__((visibility("default"))) void jpeg_destroy_compress(j_compress_ptr cinfo) {
  namespace j = tandem::dropin::jpeg;
  j::Shim::get().end(cinfo);
  j::library().destroy_compress(cinfo);
}

__attribute__((visibility("default"))) void jpeg_destroy(j_common_ptr cinfo) {
  namespace j = tandem::dropin::jpeg;
  if (cinfo != nullptr && !cinfo->is_decompressor) j::Shim::get().end(cinfo);
  j::library().destroy(cinfo);
}

}  // extern "C"
