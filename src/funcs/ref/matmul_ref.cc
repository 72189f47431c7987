#include "funcs/ref/matmul_ref.hpp"

namespace tandem::funcs::ref {

Status matmul(std::span<const int16_t> a, std::span<const int16_t> b, std::span<int32_t> c,
              uint32_t m, uint32_t k, uint32_t n) {
  if (a.size() != size_t{m} * k || b.size() != size_t{k} * n || c.size() != size_t{m} * n) {
    return Status::invalid_argument;
  }
  for (uint32_t i = 0; i < m; ++i) {
    for (uint32_t j = 0; j < n; ++j) {
      uint32_t acc = 0;  // unsigned: wrap-around is defined
      for (uint32_t x = 0; x < k; ++x) {
        const int32_t product = int32_t{a[size_t{i} * k + x]} * int32_t{b[size_t{x} * n + j]};
        acc += static_cast<uint32_t>(product);
      }
      c[size_t{i} * n + j] = static_cast<int32_t>(acc);
    }
  }
  return Status::ok;
}

}  // namespace tandem::funcs::ref
