// io_uring NOP round trip through liburing: one NOP submitted, its completion reaped. The kernel
// completes a NOP inside io_uring_enter, so a round trip is one system call plus the ring updates.

#include <liburing.h>

#include <cstring>

#include "support/detail/peer_common.hpp"
#include "support/peers.hpp"

namespace tandem::bench {

namespace {

class Ring {
 public:
  Ring() = default;
  ~Ring() {
    if (ready_) io_uring_queue_exit(&ring_);
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // 0 or a negative errno.
  int init(unsigned entries) {
    const int rc = io_uring_queue_init(entries, &ring_, 0);
    ready_ = rc == 0;
    return rc;
  }
  io_uring* get() { return &ring_; }

 private:
  io_uring ring_{};
  bool ready_ = false;
};

}  // namespace

Result<Samples> iouring_nop_rtt(const PeerOptions& options) {
  Ring ring;
  if (const int rc = ring.init(8); rc < 0) {
    return {rc == -EPERM || rc == -EACCES ? Status::permission_denied : Status::io_error,
            std::string("io_uring NOP: io_uring_queue_init failed: ") + std::strerror(-rc)};
  }
  const detail::Placement where = detail::resolve_placement(options);
  ScopedPin pin(where.cpu_a);
  const long long timeout_ns = std::chrono::nanoseconds(options.timeout).count();
  uint64_t seq = 0;
  int failed_rc = 0;
  Result<Samples> samples = sample_loop_status(detail::sample_plan(options), [&] {
    io_uring_sqe* sqe = io_uring_get_sqe(ring.get());
    if (sqe == nullptr) return Status::queue_full;  // cannot happen: every NOP is reaped before the next
    io_uring_prep_nop(sqe);
    io_uring_sqe_set_data64(sqe, ++seq);
    if (const int rc = io_uring_submit(ring.get()); rc != 1) {
      failed_rc = rc;
      return Status::io_error;
    }
    __kernel_timespec ts{timeout_ns / 1'000'000'000, timeout_ns % 1'000'000'000};
    io_uring_cqe* cqe = nullptr;
    if (const int rc = io_uring_wait_cqe_timeout(ring.get(), &cqe, &ts); rc < 0) {
      failed_rc = rc;
      return rc == -ETIME ? Status::timeout : Status::io_error;
    }
    const bool ok = cqe->user_data == seq && cqe->res == 0;
    io_uring_cqe_seen(ring.get(), cqe);
    return ok ? Status::ok : Status::protocol_error;
  });
  if (!samples.ok()) {
    return {samples.status(), "io_uring NOP: " + samples.message() +
                                  (failed_rc < 0 ? std::string(": ") + std::strerror(-failed_rc) : "")};
  }
  return samples;
}

}  // namespace tandem::bench
