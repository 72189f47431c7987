#include "model/learning.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace tandem::model {

double cpu_share(const CpuLoad& load) {
  const double cores = load.cores > 0 ? load.cores : 1;
  const double apps = std::max(load.runnable_threads, 1.0);
  const double engine = std::clamp(load.engine_cores, 0.0, cores);
  if (apps + engine <= cores) return 1;
  // Water-filling: every thread gets the level L, the engine min(engine, L); apps * L + min(engine, L)
  // = cores. If the engine uses less than the level, the apps share what it leaves.
  const double level = cores / (apps + 1);
  if (engine >= level) return std::min(1.0, level);
  return std::min(1.0, (cores - engine) / apps);
}

void RunningMedian::seed(double prior) {
  prior_ = std::isfinite(prior) && prior > 0 ? prior : 0;
  if (count_ == 0) value_ = prior_;
}

void RunningMedian::add(double sample) {
  if (!std::isfinite(sample) || sample < 0) return;
  window_[next_] = sample;
  next_ = (next_ + 1) % kWindow;
  count_ = std::min(count_ + 1, kWindow);
  ++samples_;
  std::array<double, kWindow> sorted{};
  std::copy_n(window_.begin(), count_, sorted.begin());
  // With fewer samples than half the window the prior keeps a vote, so one sample cannot swing it.
  uint32_t n = count_;
  if (count_ < kWindow / 2 && prior_ > 0) sorted[n++] = prior_;
  std::sort(sorted.begin(), sorted.begin() + n);
  value_ = n % 2 == 1 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
}

double RunningMedian::mean() const {
  if (count_ == 0) return prior_;
  // Winsorized: a sample counts at most kMeanCap times the median. A round that waited for a slow
  // start-up (the first call of a process) would otherwise set the figure for the next kWindow calls,
  // and a figure that makes the hardware look slow stops the calls that would correct it.
  const double cap = value_ > 0 ? kMeanCap * value_ : std::numeric_limits<double>::infinity();
  double sum = 0;
  for (uint32_t i = 0; i < count_; ++i) sum += std::min(window_[i], cap);
  uint32_t n = count_;
  if (count_ < kWindow / 2 && prior_ > 0) {
    sum += prior_;
    ++n;
  }
  return sum / n;
}

void RunningMedian::restore(double value, uint64_t samples) {
  if (!std::isfinite(value) || value < 0 || samples == 0) return;
  count_ = static_cast<uint32_t>(std::min<uint64_t>(samples, kWindow));
  std::fill_n(window_.begin(), count_, value);
  next_ = count_ % kWindow;
  samples_ = samples;
  value_ = value;
}

void CostEstimator::seed(const CostParams& prior) {
  seed_ = prior;
  xc_.seed(prior.xc);
  xa_.seed(prior.xa);
  oc_.seed(prior.oc);
  trip_.seed(prior.da);
  device_latency_.seed(0);
}

void CostEstimator::observe_cpu(double units, double wall_s, double share) {
  if (!(units > 0) || !(wall_s > 0) || !(share > 0)) return;
  xc_.add(units / wall_s / std::min(share, 1.0));
}

void CostEstimator::observe_job(double units, double device_s, double round_trip_s, bool round_trip_bound) {
  if (!(units > 0) || !(device_s > 0)) return;
  ++jobs_;
  // X_a: the slope between this job and the previous one when their sizes differ enough for the
  // fixed latency to cancel out; else this job alone, less the latency learnt so far.
  double xa = 0;
  const double du = units - last_units_;
  if (last_units_ > 0 && (units > 1.5 * last_units_ || last_units_ > 1.5 * units)) {
    const double dt = device_s - last_device_s_;
    if (dt / du > 0) xa = du / dt;
  }
  if (xa > 0) {
    device_latency_.add(std::max(0.0, device_s - units / xa));
  } else {
    const double compute = std::max(device_s - device_latency_.value(), 0.5 * device_s);
    xa = units / compute;
  }
  xa_.add(xa);
  last_units_ = units;
  last_device_s_ = device_s;
  if (std::isfinite(round_trip_s) && round_trip_s >= 0) {
    // Where (nearly) every call wakes the dispatcher (calls 100 us or more apart), the wake-up is the
    // round trip those calls pay: after a window of bounds in a row they count as samples again, or
    // the figure would only ever fall.
    bounds_in_a_row_ = round_trip_bound ? bounds_in_a_row_ + 1 : 0;
    const bool only_a_bound = round_trip_bound && bounds_in_a_row_ < RunningMedian::kWindow;
    if (!(only_a_bound && round_trip_s >= trip_.mean())) trip_.add(round_trip_s);
  }
}

void CostEstimator::observe_job_overhead(double seconds) { oc_.add(seconds); }

CostParams CostEstimator::params() const {
  CostParams p = seed_;
  if (xc_.value() > 0) p.xc = xc_.value();
  if (xa_.value() > 0) p.xa = xa_.value();
  if (oc_.samples() > 0) p.oc = std::max(oc_.value(), p.o0);
  // D_a: the device's fixed time plus the host's round trip. The seed includes both, so until a round
  // trip was seen it stands (unless the device alone already takes longer).
  if (trip_.samples() > 0) {
    p.da = device_latency_.value() + trip_.mean();
  } else if (jobs_ > 0) {
    p.da = std::max(p.da, device_latency_.value());
  }
  return p;
}

void CostEstimator::restore(const CostParams& learnt, uint64_t cpu_samples, uint64_t job_samples,
                            uint64_t overhead_samples) {
  xc_.restore(learnt.xc, cpu_samples);
  xa_.restore(learnt.xa, job_samples);
  oc_.restore(learnt.oc, overhead_samples);
  if (job_samples > 0) {
    // D_a's host part depends on how busy the machine was when it was learnt (a run whose dispatcher
    // was starved ends with round trips 20-100x an idle engine's), so it counts as one sample, and as
    // the prior in place of the seed's, which this run's round trips outvote within three calls; not
    // as a full window that would start every later run with the hardware looking slow. (With the
    // seed as prior it was averaged with the seed at once and drifted towards it from run to run.)
    trip_.seed(learnt.da);
    trip_.restore(learnt.da, 1);
    device_latency_.restore(0, job_samples);
    jobs_ = job_samples;
  }
}

}  // namespace tandem::model
