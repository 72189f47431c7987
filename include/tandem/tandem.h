/* tandem: share accelerator slots among many concurrent, short-running tasks.
 *
 * The C API (C99). A runtime is either embedded (engine and emulated fabric inside this process) or
 * connected to the tandemd daemon; the API is the same. Two levels:
 *   - high-level calls (tandem_accumulate, tandem_work) that run on the CPU, the accelerators or both;
 *   - low-level AQL-style submission: reserve a packet in a queue, write it, publish it, wait on its
 *     completion record.
 * Every function returns a tandem_status_t (TANDEM_OK on success); tandem_last_error() gives a
 * message for the last failure on the calling thread. See docs/api.md.
 */
#ifndef TANDEM_H
#define TANDEM_H

#include <stddef.h>
#include <stdint.h>

#include "tandem_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tandem_runtime tandem_runtime_t;
typedef struct tandem_queue tandem_queue_t;

/* Where a high-level call runs. Every call is split between the calling thread and the accelerators
 * by the partitioner (docs/model.md):
 *   AUTO   the calibrated cost model decides whether and how much to accelerate, and rebalances;
 *   SW     software only;
 *   HW     everything on the accelerators (software, with demand requests, while none is resident);
 *   ALPHA  a fixed share `alpha` of every call for the accelerators, one split (experiments).
 * The TANDEM_MODE environment variable (auto|sw|hw|alpha=<x>) overrides AUTO. */
typedef enum tandem_mode {
  TANDEM_MODE_AUTO = 0,
  TANDEM_MODE_SW = 1,
  TANDEM_MODE_HW = 2,
  TANDEM_MODE_ALPHA = 3
} tandem_mode_t;

typedef enum tandem_wait_mode {
  TANDEM_WAIT_SPIN = 0,            /* poll the status word until done */
  TANDEM_WAIT_BLOCK = 1,           /* sleep on the status word (futex) */
  TANDEM_WAIT_SPIN_THEN_BLOCK = 2  /* poll for spin_ns, then sleep */
} tandem_wait_mode_t;

typedef struct tandem_options {
  uint32_t struct_size;        /* sizeof(tandem_options_t), set by tandem_options_init (0: not a layout) */
  const char* config_path;     /* embedded runtime's configuration; NULL: $TANDEM_CONFIG or built-in */
  const char* socket_path;     /* tandemd socket; NULL: $TANDEM_SOCKET or the default socket if present */
  int embedded;                /* nonzero: never connect to a daemon */
  tandem_mode_t mode;          /* where high-level calls run */
  tandem_wait_mode_t wait_mode;/* how high-level calls wait for accelerator jobs */
  int64_t spin_ns;             /* spin budget of TANDEM_WAIT_SPIN_THEN_BLOCK */
  /* ---- appended in the second layout (struct_size tells which fields a caller knows; older sizes are accepted) ---- */
  double alpha;                /* TANDEM_MODE_ALPHA's share for the accelerators, in [0, 1] */
  const char* calibration_path;/* cost-model calibration file; NULL: $TANDEM_CALIBRATION, the config's
                                  [calibration] file or ~/.config/tandem/calibration.toml */
  /* ---- appended in the third layout ---- */
  int32_t access;              /* TANDEM_ACCESS_CHOOSE (default): the runtime picks each call's access
                                  method; or a tandem_access_t forced for every call (experiments).
                                  $TANDEM_ACCESS=auto|zero_copy|copy|sg|local also forces one. */
} tandem_options_t;

#define TANDEM_ACCESS_CHOOSE (-1)

/* Fills *options with the defaults of the layout `size` bytes long: the sizeof(tandem_options_t) of the
 * header the caller was compiled with. It writes nothing past those bytes (nor past the layout this
 * library knows), so a program built against an older header stays safe with a newer library. A size
 * that is no published layout leaves struct_size 0, which tandem_open refuses. NULL is ignored. */
void tandem_options_init_sized(tandem_options_t* options, size_t size);
/* The defaults for this header's layout. A macro, so that the size passed is the caller's own; the
 * library still exports a function of this name for programs built before it became one, and that
 * function writes the third layout (the one those programs have) for good. */
void(tandem_options_init)(tandem_options_t* options);
#define tandem_options_init(options) tandem_options_init_sized((options), sizeof(tandem_options_t))

tandem_status_t tandem_open(const tandem_options_t* options, tandem_runtime_t** runtime);
void tandem_close(tandem_runtime_t* runtime);

/* "embedded" or "daemon". */
const char* tandem_runtime_kind(const tandem_runtime_t* runtime);
const char* tandem_status_name(tandem_status_t status);
/* Message of the last failed call on this thread ("" if none). */
const char* tandem_last_error(void);

/* ---- memory the accelerators may access (zero-copy session memory under a daemon) ---- */
/* 64-byte aligned memory the accelerators reach. NULL, with tandem_last_error() saying why, for a size
 * whose rounding overflows (e.g. SIZE_MAX), that exceeds the session's registered-memory limit
 * (tandemd's [limits] registered_mib_per_session), or that the system cannot provide. */
void* tandem_alloc(tandem_runtime_t* runtime, size_t bytes);
void tandem_free(tandem_runtime_t* runtime, void* memory);
/* Makes an existing memfd-backed mapping usable by the accelerators without copies: [address,
 * address + bytes) is mapped from `memfd` at `offset` (all page aligned). The arguments are checked
 * before anything is sent, in every runtime: TANDEM_INVALID_ARGUMENT (for this call only; the session
 * stays usable) unless the region is non-empty, page aligned and does not wrap, and `memfd` is an open
 * memfd created with MFD_ALLOW_SEALING (or already sealed against shrinking) that covers offset + bytes.
 * tandemd seals the memfd against shrinking. Embedded runtimes reach all memory. */
tandem_status_t tandem_register(tandem_runtime_t* runtime, void* address, size_t bytes, int memfd, uint64_t offset);
tandem_status_t tandem_unregister(tandem_runtime_t* runtime, void* address);

/* ---- device-local memory (docs/access.md) ----
 * Buffers that live on the device (its own memory), filled and drained by copy engines and resident
 * between calls: a chain of calls on them moves the data once. A buffer is named by a device address
 * (tandem_abi.h), which high-level calls accept wherever they take a pointer: TANDEM_DEVICE_PTR(a).
 * ACCESS_UNSUPPORTED when no device of the runtime has local memory; DEVICE_MEMORY_FULL when it is full. */
#define TANDEM_DEVICE_PTR(address) ((void*)(uintptr_t)(address))
tandem_status_t tandem_buffer_alloc(tandem_runtime_t* runtime, size_t bytes, uint64_t* device_address);
tandem_status_t tandem_buffer_free(tandem_runtime_t* runtime, uint64_t device_address);
/* Copies between this process's memory (any) and a device buffer (at any offset within it). */
tandem_status_t tandem_buffer_write(tandem_runtime_t* runtime, uint64_t device_address, const void* source, size_t bytes);
tandem_status_t tandem_buffer_read(tandem_runtime_t* runtime, void* destination, uint64_t device_address, size_t bytes);
/* Forces one access method for later high-level calls (a tandem_access_t), or TANDEM_ACCESS_CHOOSE. */
tandem_status_t tandem_set_access(tandem_runtime_t* runtime, int32_t access);

/* ---- high-level calls ---- */
tandem_status_t tandem_accumulate(tandem_runtime_t* runtime, const int32_t* data, size_t count, int64_t* sum);
/* Changes where later high-level calls of this runtime run (alpha: TANDEM_MODE_ALPHA's share). */
tandem_status_t tandem_set_mode(tandem_runtime_t* runtime, tandem_mode_t mode, double alpha);
/* Spends `units` CPU cycles of work (thesis 5.5.2), on the CPU, accelerators or both. */
tandem_status_t tandem_work(tandem_runtime_t* runtime, uint64_t units);
tandem_status_t tandem_work_fn(tandem_runtime_t* runtime, uint16_t function, uint64_t units);
/* Follows the linked list at `head` (tandem_list_node_t, anywhere the session's address mode reaches)
 * for at most `max_nodes` nodes and returns the sum of their values (seed 004 Table 1). */
tandem_status_t tandem_list_walk(tandem_runtime_t* runtime, const tandem_list_node_t* head, uint64_t max_nodes,
                                 int64_t* sum);
/* ---- service requests (FastPath, docs/api.md "Service requests"): a running accelerator job asks this
 * process to run a callback and resumes with its answer. Register callbacks by id (below
 * TANDEM_SERVICE_IDS; fn NULL removes one), then start serving once: TANDEM_SERVICE_POLL (the
 * application calls tandem_service_poll, and high-level calls that wait serve too),
 * TANDEM_SERVICE_SLEEP (a library thread sleeps on the ring's futex and serves), or both. A request
 * for an id with no callback fails its job with TANDEM_SERVICE_FAILED. Callbacks run on the serving
 * thread and must not wait for accelerator jobs. */
typedef uint64_t (*tandem_service_fn)(void* user, const uint64_t args[4]);
#define TANDEM_SERVICE_POLL 1u
#define TANDEM_SERVICE_SLEEP 2u
tandem_status_t tandem_service_register(tandem_runtime_t* runtime, uint32_t service_id, tandem_service_fn fn, void* user);
tandem_status_t tandem_service_start(tandem_runtime_t* runtime, uint32_t flags);
/* Serves every request posted now; `served` (may be NULL) gets how many. TANDEM_DISCONNECTED once the
 * daemon is gone; TANDEM_INVALID_ARGUMENT before tandem_service_start. */
tandem_status_t tandem_service_poll(tandem_runtime_t* runtime, uint32_t* served);
/* A job that asks callback `service_id` `steps` times, each request's arguments (value, step, seed,
 * value ^ step * 0x9e3779b97f4a7c15) from the chain's value so far, and folds each answer in
 * (value = (value ^ answer) * 0x100000001b3 + 0x9e3779b97f4a7c15, starting from seed); docs/abi.md. */
tandem_status_t tandem_service_chain(tandem_runtime_t* runtime, uint32_t service_id, uint64_t steps, uint64_t seed,
                                     uint64_t* value);
/* How this session's later jobs name memory (a tandem_address_mode_t): AISLE, registered windows only
 * (the default); PHASE/V, any address of this process, pages faulted in on demand through the device TLB. */
tandem_status_t tandem_set_address_mode(tandem_runtime_t* runtime, int32_t mode);

/* ---- high-level calls of the kernels with accelerators (docs/api.md) ----
 * Any memory works: buffers from tandem_alloc() are reached by the accelerators in place, others
 * through the access method the runtime picks with the split (copy staging, scatter-gather; see
 * tandem_set_access). Each call is split like tandem_accumulate between this thread and the
 * accelerators, and runs in software (the function's bit-exact reference) whatever the accelerators
 * do not. Inputs and outputs must not overlap.
 * A size of 0 is a valid call that does nothing. */

/* 3x3 Sobel edge magnitude of a row-major width x height 8-bit image into `out` (width * height
 * bytes): min(255, |Gx| + |Gy|), border pixels 0. Split by rows. width, height <= 2^20. */
tandem_status_t tandem_sobel(tandem_runtime_t* runtime, const uint8_t* image, uint8_t* out, uint32_t width,
                             uint32_t height);

/* C (m x n int32, modulo 2^32) = A (m x k int16) * B (k x n int16), all row-major. Split by rows of C.
 * m, k, n <= 65535; k = 0 writes zeros (a and b may then be NULL). */
tandem_status_t tandem_matmul(tandem_runtime_t* runtime, const int16_t* a, const int16_t* b, int32_t* c, uint32_t m,
                              uint32_t k, uint32_t n);

/* JPEG's forward DCT (libjpeg's accurate integer "islow" DCT, bit-exact) and quantizer over `blocks` 8x8
 * blocks in natural (row-major) order, split by runs of blocks. `mode`:
 *   TANDEM_DCT_MODE_DCT           input: blocks x 64 uint8 samples -> output: 64 int16 coefficients each
 *                                 (the 2-D DCT scaled by 8, as libjpeg's); table unused (may be NULL)
 *   TANDEM_DCT_MODE_QUANTIZE      input: blocks x 64 int16 coefficients -> quantized coefficients
 *   TANDEM_DCT_MODE_DCT_QUANTIZE  input: samples -> quantized coefficients (the chained accelerators)
 * Quantization divides coefficient i by 8 * table[i] and rounds half away from zero (libjpeg's rule);
 * every table entry must be in 1..32767. blocks <= 2^32 - 1. */
tandem_status_t tandem_dct_quant(tandem_runtime_t* runtime, uint32_t mode, const void* input, int16_t* output,
                                 size_t blocks, const uint16_t* table);

/* The hardware priority queue of the thesis's scheduler (Ch3): `count` commands run in order on a queue
 * that starts empty (TANDEM_PQ_CAPACITY entries, priorities 0..255 with 255 highest, FIFO within a
 * priority); responses[i] answers commands[i]; `remaining` (may be NULL) gets the entries still queued
 * after the last command. A batch is never split: it runs wholly on one accelerator or on this thread.
 * count <= 2^24. Build the command words with the helpers below. */
#define TANDEM_PQ_CAPACITY 256u
tandem_status_t tandem_priority_queue(tandem_runtime_t* runtime, const uint64_t* commands, uint64_t* responses,
                                      size_t count, uint64_t* remaining);

/* Command word: [31:0] handle, [39:32] priority, [40] at head, [41] highest, [63:56] opcode. */
#define TANDEM_PQ_OP_PUSH 1u
#define TANDEM_PQ_OP_POP 2u
#define TANDEM_PQ_OP_PEEK 3u
/* Queues `handle` at the tail of its priority (a thread that became runnable), or at the head
 * (at_head != 0: a thread that was preempted). Fails (ok = 0) when the queue is full. */
static inline uint64_t tandem_pq_push(uint32_t handle, uint8_t priority, int at_head) {
  return (uint64_t)handle | (uint64_t)priority << 32 | (uint64_t)(at_head != 0) << 40 | (uint64_t)TANDEM_PQ_OP_PUSH << 56;
}
/* Removes (pop) or reads (peek) the oldest entry of `priority`, or of the highest non-empty priority
 * when `highest` != 0. Fails (ok = 0, handle 0) when there is none. */
static inline uint64_t tandem_pq_pop(uint8_t priority, int highest) {
  return (uint64_t)priority << 32 | (uint64_t)(highest != 0) << 41 | (uint64_t)TANDEM_PQ_OP_POP << 56;
}
static inline uint64_t tandem_pq_peek(uint8_t priority, int highest) {
  return (uint64_t)priority << 32 | (uint64_t)(highest != 0) << 41 | (uint64_t)TANDEM_PQ_OP_PEEK << 56;
}
/* Response word: [31:0] handle, [39:32] priority used, [40] ok, [63:48] entries queued after it. */
static inline uint32_t tandem_pq_response_handle(uint64_t response) { return (uint32_t)response; }
static inline uint8_t tandem_pq_response_priority(uint64_t response) { return (uint8_t)(response >> 32); }
static inline int tandem_pq_response_ok(uint64_t response) { return (int)((response >> 40) & 1u); }
static inline uint32_t tandem_pq_response_occupancy(uint64_t response) { return (uint32_t)(response >> 48); }

/* What this runtime's high-level calls did so far (all threads). Fields may be added at the end:
 * pass sizeof your struct; the fields it covers are filled. */
typedef struct tandem_call_stats {
  uint64_t calls;             /* high-level calls */
  uint64_t sw_calls;          /* ran wholly in software */
  uint64_t accelerated_calls; /* ran partly or wholly on accelerators */
  uint64_t hw_jobs;           /* accelerator jobs submitted */
  uint64_t hw_units;          /* work units the accelerators completed (the function's units) */
  uint64_t sw_units;          /* work units run in software */
  uint64_t demand_jobs;       /* requests for an accelerator that was not resident */
  uint64_t fallbacks;         /* calls that wanted the accelerators but ran (partly) in software */
} tandem_call_stats_t;
tandem_status_t tandem_get_call_stats(tandem_runtime_t* runtime, tandem_call_stats_t* stats, size_t stats_size);

/* ---- low-level submission ---- */
/* A queue is a multi-producer ring; any thread may submit to it. capacity: power of two (0: 1024). */
tandem_status_t tandem_queue_create(tandem_runtime_t* runtime, uint32_t capacity, tandem_queue_t** queue);
void tandem_queue_destroy(tandem_queue_t* queue);

/* Prepares a record for a new packet: status PENDING. */
void tandem_completion_init(tandem_completion_t* completion);

/* Reserves a packet index, waiting while the ring is full (DISCONNECTED if the daemon went away). */
tandem_status_t tandem_reserve(tandem_queue_t* queue, uint64_t* index);
/* Reserves a packet index only if the ring has room now (QUEUE_FULL otherwise). */
tandem_status_t tandem_try_reserve(tandem_queue_t* queue, uint64_t* index);
/* The packet at a reserved index: write its body (not the header). */
tandem_packet_t* tandem_packet_at(tandem_queue_t* queue, uint64_t index);
/* Publishes the packet: stores `header` last with release semantics; rings the doorbell if needed. */
void tandem_publish(tandem_queue_t* queue, uint64_t index, uint32_t header);
/* Publishes without the doorbell check, for batches; call tandem_notify once after the batch. */
void tandem_publish_quiet(tandem_queue_t* queue, uint64_t index, uint32_t header);
void tandem_notify(tandem_queue_t* queue);
/* Header word for a packet type, function and barrier bit. */
uint32_t tandem_header(tandem_packet_type_t type, uint16_t function, int barrier);

/* Convenience: one dispatch packet with up to 4 inline argument words. completion may be NULL. */
tandem_status_t tandem_dispatch(tandem_queue_t* queue, uint16_t function, const uint64_t* args, uint32_t arg_count,
                                uint64_t workload, tandem_completion_t* completion);
/* A cancel packet: withdraws the job whose completion record is `target` if it has not started yet
 * (it then completes with TANDEM_CANCELLED). `completion` (may be NULL) gets TANDEM_OK with value 1 if
 * the job was withdrawn, 0 if it already runs, has finished or is unknown. */
tandem_status_t tandem_cancel(tandem_queue_t* queue, const tandem_completion_t* target, tandem_completion_t* completion);
/* A barrier-AND packet: completes when every dependency has; later packets of the queue wait for it. */
tandem_status_t tandem_barrier_and(tandem_queue_t* queue, const tandem_completion_t* const* deps, uint32_t dep_count,
                                   tandem_completion_t* completion);

/* Waits for a record to leave PENDING and returns its status (TIMEOUT after timeout_ns if >= 0). */
tandem_status_t tandem_wait(tandem_runtime_t* runtime, const tandem_completion_t* completion,
                            tandem_wait_mode_t mode, int64_t spin_ns, int64_t timeout_ns);

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_H */
