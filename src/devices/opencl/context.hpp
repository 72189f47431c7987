// The OpenCL host layer: one device's context and its programs (built once, build logs kept), and
// slots, each an in-order command queue that runs one catalog job at a time with the copy or the
// zero-copy access method. Set-up (constructors) throws tandem::Error naming the device and the
// problem; everything a job passes through returns a Status.
//
// A job on a slot is: the buffers it reads written to the device (copy: clEnqueueWriteBuffer into
// the slot's staging buffers, reused and grown as needed; zero-copy: buffers made over the caller's
// memory with CL_MEM_USE_HOST_PTR), the kernel, then the results made visible to the caller (copy:
// clEnqueueReadBuffer; zero-copy: a map and unmap of the output), plus a read of the reduction
// partials for accumulate and work. A buffer in device-local memory moves nowhere: the kernel gets a
// sub-buffer of the local buffer (or, where its offset misses the device's base alignment, a staging
// buffer filled and drained by copies on the device). Everything is enqueued without waiting; the job is done when the
// event enqueue() returns completes, and finish() then gives the call's value.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "abi/status.hpp"
#include "devices/kernel_plan.hpp"
#include "devices/local_memory.hpp"
#include "devices/opencl/cl.hpp"
#include "devices/opencl/kernel_sources.hpp"
#include "devices/opencl/platform.hpp"
#include "funcs/function.hpp"

namespace tandem::devices::opencl {

// How a job's buffers reach the device (the data-access methods of DESIGN.md, on OpenCL).
enum class ClAccess : uint8_t {
  copy,       // staging buffers on the device, clEnqueueWriteBuffer / clEnqueueReadBuffer
  zero_copy,  // CL_MEM_USE_HOST_PTR over the caller's memory, map/unmap for the results
};
std::string_view access_name(ClAccess access);

struct ClOptions {
  std::string platform;  // selector: index or part of the name ("" = first)
  std::string device;
  // Work-groups of a reduction job (accumulate, work); 0: 8 per compute unit.
  uint32_t reduction_groups = 0;
  bool profiling = true;  // CL_QUEUE_PROFILING_ENABLE: device_ns from the events, not the host clock
  // Test hooks: replaces a kernel's OpenCL C text (a program that does not build, a kernel that runs
  // too long). Empty: the embedded source.
  std::array<std::string, kKernelCount> source_overrides{};
  // Test hook for OpenclDevice: its next n rebuilds of a slot's command queue fail.
  uint32_t failing_rebuilds = 0;
};

struct ClProgram {
  ProgramPtr program;
  Status status = Status::device_error;  // ok once built
  std::string log;                       // the build log (kept for errors), or why it failed
  int64_t build_ns = 0;                  // measured clBuildProgram time
};

class ClContext {
 public:
  // Discovers the platforms, selects one device, creates the context and builds every kernel's
  // program. A program that fails to build leaves its kernel unusable (program(k).status, .log);
  // the others work. Throws tandem::Error when no device matches or the context cannot be made.
  explicit ClContext(const ClOptions& options);
  ClContext(const ClSelection& selection, const ClOptions& options);
  ~ClContext();
  ClContext(const ClContext&) = delete;
  ClContext& operator=(const ClContext&) = delete;

  const ClDeviceInfo& device() const { return selection_.device; }
  const ClSelection& selection() const { return selection_; }
  // Every platform and device the discovery found (describe_platforms), the selection's among them;
  // empty for a context made from a given selection.
  const std::string& found() const { return found_; }
  const ClOptions& options() const { return options_; }
  cl_context context() const { return context_.get(); }
  const ClProgram& program(KernelId id) const { return programs_[static_cast<size_t>(id)]; }
  bool opencl2() const { return opencl2_; }
  // Work-groups a reduction job uses (accumulate, work).
  uint32_t reduction_groups() const { return reduction_groups_; }

  // (Re)builds one kernel's program from `source` (or the embedded/overridden text when empty).
  Status build(KernelId id, std::string_view source = {});

  // Device-local memory (the runtime's LocalMemory, docs/devices.md): one buffer of `bytes` in the
  // device's memory that the host addresses [base, base + bytes) stand for; they are never touched.
  // Set-up: throws tandem::Error if the device cannot allocate it.
  void attach_local(const char* base, uint64_t bytes);
  // Where host addresses lie in the local buffer (LocalWindow::offset_of).
  const LocalWindow& local() const { return local_window_; }
  // A sub-buffer of the local buffer that covers [offset, offset + bytes) (bytes > 0), starting at the
  // base-aligned offset at or below `offset`, `start`. Commands never use the local buffer itself:
  // OpenCL leaves concurrent use of a buffer and its sub-buffers undefined. LocalMemory's blocks are
  // base-aligned, so the sub-buffer stays within the block that `offset` is in.
  cl_int local_region(uint64_t offset, uint64_t bytes, MemPtr& out, uint64_t& start) const;

  // Fault injection for tests ([device.opencl] fail_every_launches): every n-th job or batch launched
  // on the context's slots ends with a command that waits on a user event then set to an error status,
  // so the driver terminates it on the device (append_fault). 0: never. Dispatcher thread only.
  void fail_every_launches(uint32_t n) {
    fail_every_ = n;
    launches_ = 0;
  }
  // Counts a launch; the user event it must end waiting on when it is one to fail (else null).
  // fail_launch(event) sets its error status and releases it.
  cl_event launch_fault();
  static void fail_launch(cl_event fault);
  // Fault injection for tests ([device.opencl] fail_allocations_over_kib): a staging buffer of more
  // than `bytes` fails as the driver's CL_MEM_OBJECT_ALLOCATION_FAILURE would (no device memory left).
  // 0: never. Dispatcher thread only.
  void fail_allocations_over(uint64_t bytes) { fail_allocations_over_ = bytes; }
  bool allocation_fails(uint64_t bytes) const { return fail_allocations_over_ > 0 && bytes > fail_allocations_over_; }

 private:
  void init();

  ClSelection selection_;
  std::string found_;
  ClOptions options_;
  ContextPtr context_;
  std::array<ClProgram, kKernelCount> programs_{};
  LocalWindow local_window_;
  MemPtr local_;
  bool opencl2_ = false;
  uint32_t reduction_groups_ = 8;
  uint32_t fail_every_ = 0;
  uint64_t launches_ = 0;
  uint64_t fail_allocations_over_ = 0;
};

// After a job's last command completed: ok, or the status of the first of `events` (a job's
// commands, null entries skipped) that the driver terminated, with `what` saying which. An in-order
// queue may go on to run the commands after a failed one (PoCL does), so the last command's success
// says nothing about the kernel's.
Status terminated_command(std::initializer_list<cl_event> events, std::string& what, cl_event known_ok = nullptr);

// Fault injection (ClContext::fail_every_launches). For a launch chosen to fail, append_fault enqueues
// a marker after the job's commands (`last`, the job's last command so far) that waits on a user event
// (`fault`): the marker becomes the job's last command (`new_last`), and `before` keeps the command
// ahead of it. inject_pending_fault then sets the event's error status, once `before` has ended, so
// that the driver terminates the marker on the device. It is the job's last command because PoCL 3.1
// races, and asserts, when a terminated command has commands after it or a second dependency still
// pending (pocl/pocl#2216: a double finish; also "event->status == CL_SUBMITTED" in
// pocl_update_event_running_unlocked, seen in tandemd under these tests).
cl_int append_fault(ClContext& context, cl_command_queue queue, const EventPtr& last, EventPtr& new_last, EventPtr& fault,
                    EventPtr& before);
void inject_pending_fault(EventPtr& fault, EventPtr& before);

class ClSlot {
 public:
  // An in-order command queue on the context's device. Throws tandem::Error if it cannot be made.
  ClSlot(ClContext& context, uint32_t index);
  ~ClSlot();
  ClSlot(const ClSlot&) = delete;
  ClSlot& operator=(const ClSlot&) = delete;

  uint32_t index() const { return index_; }
  cl_command_queue queue() const { return queue_.get(); }

  // "Loading a function": this slot's kernel object for `id`, made from the built program (the
  // reconfiguration delay is this call's measured time). device_error if the program did not build.
  Status select(KernelId id);
  bool selected(KernelId id) const { return kernels_[static_cast<size_t>(id)] != nullptr; }

  // Enqueues `job` (planned from `call`) without waiting and flushes the queue. On success `*done`
  // is a new event (the caller releases it) that completes when the job is finished; a planned job
  // with nothing to launch still gets a (user) event, already complete. On failure nothing is left
  // running that uses the caller's memory, and the message says what failed.
  Status enqueue(const funcs::Call& call, const KernelJob& job, ClAccess access, cl_event* done);
  // After `done` completed with CL_COMPLETE: the call's value; device_ns from the profiling events
  // (0 without profiling).
  int64_t finish();
  int64_t device_ns() const;
  const std::string& last_error() const { return last_error_; }
  // After `done` completed: ok, or the status of a command of the job that the driver terminated (the
  // message in last_error()). `known_ok`: a command whose success is known already (its callback said).
  Status commands_status(cl_event known_ok = nullptr);
  // Fault injection (ClContext::fail_every_launches): after enqueue() and once the caller has registered
  // its callbacks, a job chosen to fail waits for its commands, then has its trailing marker terminated
  // (append_fault). Nothing otherwise.
  void inject_fault() { inject_pending_fault(pending_fault_, before_fault_); }

  // Plans, enqueues, waits and finishes: the whole job, synchronously (tests, calibration, raw baselines).
  Result<int64_t> run(const funcs::Call& call, ClAccess access);

  // A copy engine's transfer (the slot serves as its queue): host to device-local memory, back, or
  // within it (ClContext::local() tells which side is local; overlapping is allowed), waited for at
  // most `timeout_ns`: past it, TIMEOUT, and the queue is abandoned for a new one (OpenCL cannot cancel
  // a command; the device may still write the destination). Host to host is a memmove.
  Status transfer(void* dst, const void* src, uint64_t bytes, int64_t timeout_ns);
  // Reads [offset, offset + bytes) of device-local memory into `dst`, waited for (a few bytes the host
  // must see: dct_quant's table).
  Status read_local(uint64_t offset, void* dst, uint64_t bytes);

  // Host buffers this slot's jobs used in place and copied, since it was made (dispatcher thread).
  uint64_t buffers_in_place() const { return in_place_; }
  uint64_t buffers_copied() const { return copied_; }
  void reset_buffer_counts() { in_place_ = copied_ = 0; }

 private:
  uint64_t in_place_ = 0, copied_ = 0;
  Status fail(Status status, std::string message);
  void make_queue();  // throws tandem::Error
  Status stage(uint32_t role, const KernelBuffer& buffer, void* host, ClAccess access, cl_mem& out);
  Status ensure_staging(uint32_t role, uint64_t bytes);
  Status set_args_and_launch(const KernelJob& job, const std::array<cl_mem, 3>& mems);

  ClContext& context_;
  uint32_t index_;
  QueuePtr queue_;
  std::vector<QueuePtr> abandoned_;  // queues left with a transfer that ran past its time limit
  std::array<KernelPtr, kKernelCount> kernels_{};
  // Copy staging, one per buffer role; kept between jobs and grown to the largest job seen.
  std::array<MemPtr, 3> staging_{};
  std::array<uint64_t, 3> staging_bytes_{};
  // Zero-copy buffers and device-local sub-buffers of the job in flight (released by the next job; the
  // runtime keeps its own references while commands use them).
  std::array<MemPtr, 3> job_buffers_{};
  // Per role of a device-local buffer: where it starts in its sub-buffer (0: the kernel uses the
  // sub-buffer in place; else it works on staging), or LocalWindow::kNotLocal for host memory.
  std::array<uint64_t, 3> local_offsets_{};
  MemPtr bounce_;  // an overlapping copy within local memory goes through it (kBounceBytes)
  static constexpr uint64_t kBounceBytes = uint64_t{1} << 20;
  MemPtr partials_;
  std::vector<int64_t> partials_host_;
  // The job in flight.
  KernelJob job_{};
  uint32_t groups_ = 0;
  // The job's first and last commands, and its kernel when that is neither (for commands_status).
  EventPtr first_event_, kernel_event_, last_event_;
  EventPtr pending_fault_, before_fault_;  // fault injection: the event the launch waits on, and the command before it
  std::string last_error_;
};

// Many small accumulate jobs as one launch (batching; the OpenCL device forms batches from the jobs
// the dispatcher hands it in one turn of its loop). add() gathers a job's input into one host buffer
// behind a table of (first element, count) per job (the copy method); enqueue() writes that buffer,
// runs tandem_accumulate_batch (a work-group per job) and reads the sums back: three commands for the
// whole batch instead of three per job. On a device with fine-grain buffer SVM the gathered buffer and
// the sums live in SVM instead, and the kernel is the batch's one command: no write, no read (on PoCL
// this halves a batch's round trip). One batch in flight per object; the caller keeps it until the
// event enqueue() returned has completed.
class ClAccumulateBatch {
 public:
  // Room for `max_jobs` jobs. Throws tandem::Error when the accumulate program has no batch kernel
  // (a source override) or the kernel cannot be made. `allow_svm` false: the copy path on any device.
  ClAccumulateBatch(ClContext& context, uint32_t max_jobs, bool allow_svm = true);
  ClAccumulateBatch(const ClAccumulateBatch&) = delete;
  ClAccumulateBatch& operator=(const ClAccumulateBatch&) = delete;

  void clear();
  // Appends one planned accumulate job, its input copied now. False, and nothing appended, when the
  // batch is full: max_jobs jobs, or kMaxBytes (or the device's largest allocation) in all.
  bool add(const funcs::Call& call, const KernelJob& job);
  static constexpr uint64_t kMaxBytes = uint64_t{64} << 20;
  uint32_t size() const { return jobs_; }
  // Enqueues the batch on `queue` without waiting and flushes it; `*done` as ClSlot::enqueue.
  Status enqueue(cl_command_queue queue, cl_event* done);
  // After `done` completed: job i's value; the whole batch's time on the device (profiling events).
  int64_t value(uint32_t i) const { return sums_[i]; }
  int64_t device_ns() const;
  const std::string& last_error() const { return last_error_; }
  // After `done` completed: as ClSlot::commands_status.
  Status commands_status(cl_event known_ok = nullptr);
  void inject_fault() { inject_pending_fault(pending_fault_, before_fault_); }  // as ClSlot's
  bool uses_svm() const { return svm_; }

 private:
  Status fail(cl_command_queue queue, Status status, std::string message);
  // Room for `words` gathered words (the used ones kept); false when it cannot be had.
  bool reserve(uint64_t words);
  Status enqueue_copies(cl_command_queue queue, uint64_t bytes, size_t global, size_t local, cl_event& ev);
  Status launch(cl_command_queue queue, size_t global, size_t local, cl_event& ev);
  struct SvmFree {
    cl_context context;
    void operator()(void* p) const noexcept {
      if (p != nullptr) clSVMFree(context, p);
    }
  };
  using SvmPtr = std::unique_ptr<void, SvmFree>;

  ClContext& context_;
  uint32_t max_jobs_;
  KernelPtr kernel_;
  uint32_t jobs_ = 0;
  // What is written: the table, two words per job (its first element counted from the buffer's
  // start, its count), room for max_jobs; then each job's input from a 64-byte line. `words_` is
  // host_'s data or the SVM buffer; `sums_` likewise sums_host_'s or the SVM sums.
  bool svm_ = false;
  std::vector<uint64_t> host_;
  SvmPtr svm_words_, svm_sums_;
  uint64_t* words_ = nullptr;
  uint64_t capacity_words_ = 0;
  uint64_t used_words_ = 0;
  std::vector<int64_t> sums_host_;
  int64_t* sums_ = nullptr;
  MemPtr input_, output_;
  uint64_t input_bytes_ = 0;
  EventPtr first_event_, kernel_event_, last_event_;
  EventPtr pending_fault_, before_fault_;
  std::string last_error_;
};

}  // namespace tandem::devices::opencl
