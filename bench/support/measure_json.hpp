// nlohmann::json conversion for Summary, found by ADL: `nlohmann::json j = summary;`.
// Keys carry the unit: {"median_ns", "min_ns", "p99_ns", "mean_ns", "max_ns", "samples"}.
#pragma once

#include <nlohmann/json.hpp>

#include "support/measure.hpp"

namespace tandem::bench {

inline void to_json(nlohmann::json& j, const Summary& s) {
  j = nlohmann::json{{"median_ns", s.median}, {"min_ns", s.min},   {"p99_ns", s.p99},
                     {"mean_ns", s.mean},     {"max_ns", s.max},   {"samples", s.samples}};
}

}  // namespace tandem::bench
