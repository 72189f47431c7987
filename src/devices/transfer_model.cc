#include <algorithm>

#include "devices/device.hpp"

namespace tandem::devices {

double TransferModel::job_s(const JobAccess& a, double compute_s) const {
  double setup = 0, stream = 0;
  const double host = static_cast<double>(a.host_bytes());
  if (a.host_bytes() > 0) {
    if (a.method == TANDEM_ACCESS_SCATTER_GATHER) {
      const double bps = sg_bps > 0 ? sg_bps : link_bps;
      setup = sg_setup_s + sg_page_s * a.pages;
      stream = bps > 0 ? host / bps : 0;
    } else {  // zero-copy and copy: DMA from host memory (the copy's staging buffer is host memory too)
      setup = dma_setup_s;
      stream = link_bps > 0 ? host / link_bps : 0;
    }
  }
  if (a.local_bytes > 0 && local_bps > 0) stream += static_cast<double>(a.local_bytes) / local_bps;
  return setup + std::max(compute_s, stream);  // nothing moves: no set-up (a no-op stays a no-op)
}

}  // namespace tandem::devices
