#include "funcs/ref/accumulate_ref.hpp"

namespace tandem::funcs::ref {

int64_t accumulate(std::span<const int32_t> values) {
  int64_t sum = 0;
  for (int32_t v : values) sum += v;
  return sum;
}

}  // namespace tandem::funcs::ref
