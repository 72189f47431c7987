#include "rt/host_access.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/clock.hpp"

namespace tandem::rt {

namespace {

// Best of a few runs, bytes per second, of moving `bytes` with `move`.
template <class Move>
double best_rate(size_t bytes, Move move) {
  std::vector<double> rates;
  for (int run = 0; run < 7; ++run) {
    const int64_t t0 = now_ns();
    move();
    const int64_t t1 = now_ns();
    if (t1 > t0) rates.push_back(static_cast<double>(bytes) * 1e9 / static_cast<double>(t1 - t0));
  }
  return rates.empty() ? 0 : *std::max_element(rates.begin(), rates.end());
}

model::HostAccessCosts measure() {
  model::HostAccessCosts h;
  constexpr size_t kBytes = 1 << 20;  // larger than L2, as a call's data usually is
  std::vector<char> a(kBytes, 1), b(kBytes, 2);
  h.memcpy_bps = best_rate(kBytes, [&] { std::memcpy(b.data(), a.data(), kBytes); });
  // process_vm_readv of this very process through a page list: the same kernel path tandemd takes.
  const auto gather = [&](size_t bytes) {
    std::vector<iovec> remote;
    for (size_t off = 0; off < bytes; off += 4096) remote.push_back(iovec{a.data() + off, std::min<size_t>(4096, bytes - off)});
    iovec local{b.data(), bytes};
    for (size_t i = 0; i < remote.size(); i += 1024) {
      const size_t n = std::min<size_t>(1024, remote.size() - i);
      size_t chunk = 0;
      for (size_t k = 0; k < n; ++k) chunk += remote[i + k].iov_len;
      local.iov_len = chunk;
      if (process_vm_readv(getpid(), &local, 1, remote.data() + i, n, 0) < 0) return false;
      local.iov_base = static_cast<char*>(local.iov_base) + chunk;
    }
    return true;
  };
  if (gather(4096)) {
    const double large = best_rate(kBytes, [&] { gather(kBytes); });
    const double one_page = best_rate(4096, [&] { gather(4096); });
    h.gather_bps = large;
    // One page's time beyond its bytes at the large-transfer rate: the per-page cost.
    h.gather_page_s = one_page > 0 && large > 0 ? std::max(0.0, 4096.0 / one_page - 4096.0 / large) : 0;
  } else {
    h.gather_bps = h.memcpy_bps;  // not permitted here: assume a plain copy's rate
  }
  return h;
}

}  // namespace

const model::HostAccessCosts& host_access_costs() {
  static const model::HostAccessCosts costs = measure();
  return costs;
}

}  // namespace tandem::rt
