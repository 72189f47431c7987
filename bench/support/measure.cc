#include "support/measure.hpp"
#include "base/stats.hpp"

#include <pthread.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <numeric>

namespace tandem::bench {

int64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

bool invariant_tsc_available() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0x80000000u, nullptr) < 0x80000007u) return false;
  __cpuid(0x80000007u, eax, ebx, ecx, edx);
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

namespace {

// One (CLOCK_MONOTONIC, TSC) pair, taken so that the TSC read sits between two clock reads; the
// narrowest of a few tries bounds the pairing error to a few tens of ns.
struct ClockPair {
  int64_t ns;
  uint64_t tsc;
};

ClockPair read_clock_pair() {
  ClockPair best{};
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 8; ++i) {
    const int64_t before = now_ns();
    const uint64_t tsc = read_tsc();
    const int64_t after = now_ns();
    if (after - before < best_width) {
      best_width = after - before;
      best = {before + (after - before) / 2, tsc};
    }
  }
  return best;
}

}  // namespace

const TickClock& TickClock::get() {
  // A magic static: calibrated once, thread-safe.
  static const TickClock clock = [] {
    if (!invariant_tsc_available()) return TickClock(false, 1.0);
    const ClockPair first = read_clock_pair();
    timespec pause{0, 20'000'000};  // 20 ms: the pairing error is then about 1e-6 of the interval
    nanosleep(&pause, nullptr);
    const ClockPair second = read_clock_pair();
    const double ns = static_cast<double>(second.ns - first.ns);
    const double ticks = static_cast<double>(second.tsc - first.tsc);
    if (!(ns > 0) || !(ticks > 0)) return TickClock(false, 1.0);
    return TickClock(true, ns / ticks);
  }();
  return clock;
}

Summary summarize(std::span<const double> samples) {
  Summary s;
  if (samples.empty()) return s;
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  const std::size_t n = sorted.size();
  s.samples = n;
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = median(std::span<const double>(sorted));
  s.p99 = percentile_sorted(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(n);
  return s;
}

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

bool pin_this_thread(int cpu) noexcept {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

ScopedPin::ScopedPin(int cpu) noexcept {
  if (cpu < 0) return;
  CPU_ZERO(&saved_);
  restore_ = pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0;
  pinned_ = pin_this_thread(cpu);
}

ScopedPin::~ScopedPin() {
  if (restore_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
}

CpuPair pick_cpu_pair() {
  const std::vector<int> cpus = usable_cpus();
  if (cpus.empty()) return {0, 0, false};
  if (cpus.size() == 1) return {cpus[0], cpus[0], false};
  return {cpus[0], cpus[1], true};
}

std::vector<Result<std::vector<double>>> interleave(std::size_t rounds,
                                                    const std::vector<Measurement>& measurements) {
  std::vector<Result<std::vector<double>>> merged(measurements.size(), std::vector<double>{});
  for (std::size_t round = 0; round < rounds; ++round) {
    for (std::size_t i = 0; i < measurements.size(); ++i) {
      if (!merged[i].ok()) continue;
      Result<std::vector<double>> got = measurements[i]();
      if (!got.ok()) {
        merged[i] = std::move(got);
        continue;
      }
      merged[i]->insert(merged[i]->end(), got->begin(), got->end());
    }
  }
  return merged;
}

TextTable::TextTable(std::vector<std::string> header) : header_(std::move(header)) {}

void TextTable::add_row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

namespace {

bool looks_numeric(const std::string& cell) {
  if (cell.empty()) return false;
  bool digit = false;
  for (char c : cell) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '.' && c != '-' && c != '+' && c != 'e' && c != 'x' && c != '%' && c != ',') {
      return false;
    }
  }
  return digit;
}

}  // namespace

std::string TextTable::render() const {
  std::size_t columns = header_.size();
  for (const auto& row : rows_) columns = std::max(columns, row.size());
  std::vector<std::size_t> width(columns, 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);

  std::string out;
  auto emit = [&](const std::vector<std::string>& row, bool header) {
    std::string line;
    for (std::size_t c = 0; c < columns; ++c) {
      const std::string cell = c < row.size() ? row[c] : std::string();
      const std::string pad(width[c] - cell.size(), ' ');
      const bool right = !header && looks_numeric(cell);
      if (c > 0) line += "  ";
      line += right ? pad + cell : cell + pad;
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  };
  emit(header_, true);
  std::size_t rule = 0;
  for (std::size_t c = 0; c < columns; ++c) rule += width[c] + (c > 0 ? 2 : 0);
  out += std::string(rule, '-');
  out += '\n';
  for (const auto& row : rows_) emit(row, false);
  return out;
}

std::string fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

double process_cpu_seconds(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');  // the command name may hold spaces and parentheses
  if (close == std::string::npos) return 0;
  std::vector<std::string> fields;
  std::string field;
  for (size_t i = close + 2; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ' ') {
      fields.push_back(field);
      field.clear();
    } else {
      field += text[i];
    }
  }
  if (fields.size() < 13) return 0;
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  return (std::stod(fields[11]) + std::stod(fields[12])) / ticks;  // utime, stime
}

}  // namespace tandem::bench
