#include "noop_probe.hpp"

#include "support/measure.hpp"

namespace tandem::tools {

Result<std::vector<double>> noop_round_trips(client::Runtime& rt, client::Queue& q, rt::WaitMode mode, size_t samples,
                                             int cpu) {
  bench::ScopedPin pin(cpu);
  tandem_completion_t* recs = rt.thread_records();
  if (recs == nullptr) return Result<std::vector<double>>(Status::no_memory, "no completion records");
  rt::reset_record(&recs[0]);
  rt::WaitPolicy policy;
  policy.mode = mode;
  policy.timeout_ns = 2'000'000'000;
  bench::SamplePlan plan;
  plan.samples = samples;
  uint64_t n = 0;
  return bench::sample_loop_status(plan, [&]() -> Status {
    tandem_completion_t* rec = &recs[n % 2];
    tandem_completion_t* next = &recs[++n % 2];
    if (Status s = q.dispatch(TANDEM_FN_NOP, nullptr, 0, 0, rec); s != Status::ok) return s;
    rt::reset_record(next);
    return rt.wait(rec, policy);
  });
}

}  // namespace tandem::tools
