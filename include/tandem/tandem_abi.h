/* tandem shared ABI: every structure that two parties (a client and the engine, possibly in different
 * processes) read and write. C99-compatible so that C clients and the C++ runtime share one definition.
 *
 * Rules (see docs/abi.md):
 *  - Shared memory holds offsets and client virtual addresses, never pointers of the reader's process.
 *  - Every shared structure has a fixed size and alignment, checked below.
 *  - The header word of a packet is written last with release semantics; the consumer loads it with
 *    acquire semantics and, after copying the packet, resets it to INVALID.
 *  - A completion record's status and waiters fields form one 8-byte word that both sides change only
 *    with atomic read-modify-writes of the whole word; the engine publishes the status last.
 */
#ifndef TANDEM_ABI_H
#define TANDEM_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
#define TANDEM_STATIC_ASSERT(cond, msg) static_assert(cond, msg)
extern "C" {
#elif defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define TANDEM_STATIC_ASSERT(cond, msg) _Static_assert(cond, msg)
#else
#define TANDEM_STATIC_ASSERT_CAT2(a, b) a##b
#define TANDEM_STATIC_ASSERT_CAT(a, b) TANDEM_STATIC_ASSERT_CAT2(a, b)
#define TANDEM_STATIC_ASSERT(cond, msg) \
  typedef char TANDEM_STATIC_ASSERT_CAT(tandem_static_assert_, __LINE__)[(cond) ? 1 : -1]
#endif

#define TANDEM_ABI_VERSION 1u
#define TANDEM_CACHE_LINE 64u

/* ---- status codes: one space for API return values and completion records ---- */
typedef enum tandem_status {
  TANDEM_OK = 0,
  TANDEM_PENDING = 1,            /* completion record: not finished yet */
  TANDEM_INVALID_PACKET = 2,     /* malformed packet: bad type, flags or sizes */
  TANDEM_UNKNOWN_FUNCTION = 3,   /* function id names no function */
  TANDEM_NOT_ACCELERATED = 4,    /* function exists but no queue serves it now (demand recorded) */
  TANDEM_QUEUE_FULL = 5,         /* the function's job queue or the submission ring is full */
  TANDEM_TRANSLATION_FAULT = 6,  /* an address or length lies outside the session's regions */
  TANDEM_DEVICE_ERROR = 7,       /* the device failed to run the job */
  TANDEM_CANCELLED = 8,          /* the job was cancelled (session closed, daemon stopping, cancel packet) */
  TANDEM_DISCONNECTED = 9,       /* the daemon went away */
  TANDEM_JOB_TOO_LARGE = 10,     /* workload above the maximum job size (thesis 5.4.1) */
  TANDEM_DEPENDENCY_FAILED = 11, /* a barrier's dependency completed with an error */
  TANDEM_INVALID_ARGUMENT = 12,  /* API misuse: null handle, bad size, ... */
  TANDEM_NO_MEMORY = 13,
  TANDEM_LIMIT_EXCEEDED = 14,    /* a per-session limit (queues, bytes, jobs in flight) */
  TANDEM_TIMEOUT = 15,
  TANDEM_PROTOCOL_ERROR = 16,    /* malformed control message or wrong protocol version */
  TANDEM_PERMISSION_DENIED = 17,
  TANDEM_IO_ERROR = 18,          /* a system call failed */
  TANDEM_BUFFER_UNMAPPED = 19,   /* a page of a buffer the job uses could not be reached (unmapped meanwhile) */
  TANDEM_DEVICE_MEMORY_FULL = 20,/* device-local memory is exhausted */
  TANDEM_ACCESS_UNSUPPORTED = 21,/* the access method named cannot serve this buffer on this device */
  TANDEM_SERVICE_FAILED = 22,    /* a job's service request to its client failed: no service ring, no
                                    callback for the id, or a malformed answer (docs/abi.md, "Service requests") */
  TANDEM_STATUS_COUNT_ = 23
} tandem_status_t;

/* ---- packet header word: bits 0-7 type, bit 8 barrier (ring order), bits 16-31 function id ---- */
typedef enum tandem_packet_type {
  TANDEM_PACKET_INVALID = 0,
  TANDEM_PACKET_DISPATCH = 1,
  TANDEM_PACKET_BARRIER_AND = 2,
  /* Withdraws a job of the same session that has not started (see the cancel body below). */
  TANDEM_PACKET_CANCEL = 3
} tandem_packet_type_t;

#define TANDEM_HEADER_TYPE_MASK 0xffu
/* Barrier bit: packets behind this one in the same ring wait until it completes (HSA AQL). A
 * BARRIER_AND packet always behaves as if it were set. */
#define TANDEM_HEADER_BARRIER (1u << 8)
#define TANDEM_HEADER_FUNCTION_SHIFT 16
#define TANDEM_HEADER_RESERVED_MASK 0x0000fe00u

#define TANDEM_PACKET_SIZE 64u
#define TANDEM_INLINE_ARGS 4u     /* 64-bit words carried inline in a dispatch packet */
#define TANDEM_BARRIER_DEPS 5u    /* dependency records in a BARRIER_AND packet */
#define TANDEM_MAX_ARG_WORDS 32u  /* 64-bit words in an argument block */

/* dispatch packet flags */
#define TANDEM_FLAG_ARGS_INDIRECT (1u << 0) /* args[0] = address of an argument block, args[1] = its bytes */
#define TANDEM_FLAG_DEMAND_ONLY (1u << 1)   /* empty job: records demand, never queued (Algorithm 2 l.8) */
/* Bits 2-4: how the job's buffers reach the device (docs/abi.md, "Access methods"). */
#define TANDEM_FLAG_ACCESS_SHIFT 2
#define TANDEM_FLAG_ACCESS_MASK (7u << TANDEM_FLAG_ACCESS_SHIFT)
#define TANDEM_FLAG_ACCESS(method) ((uint32_t)(method) << TANDEM_FLAG_ACCESS_SHIFT)
#define TANDEM_FLAG_KNOWN_MASK 0x1fu

typedef enum tandem_access {
  /* The device works in place on session memory (tandem_alloc / tandem_register): user-mapped DMA. */
  TANDEM_ACCESS_ZERO_COPY = 0,
  /* The buffers are a staging copy in session memory, made by the client library from any memory and
   * copied back after the job: the copy a classic driver makes. Device cost as zero-copy. */
  TANDEM_ACCESS_COPY = 1,
  /* The buffers are anywhere in the client's own address space (malloc, stack, file mappings): the
   * device walks a list of the client's pages (tandemd reaches them with process_vm_readv/writev). */
  TANDEM_ACCESS_SCATTER_GATHER = 2,
  /* The buffers are device-local memory (device addresses, tandem_buffer_alloc), filled and drained
   * by copy engines shared among the slots; the data stays there between jobs. */
  TANDEM_ACCESS_DEVICE_LOCAL = 3,
  TANDEM_ACCESS_COUNT_ = 4
} tandem_access_t;

/* Device addresses: bit 63 set (never a user-space address on 64-bit Linux), the buffer's id in bits
 * 40-62, the byte offset within it in bits 0-39. */
#define TANDEM_DEVICE_ADDRESS_BIT (1ull << 63)
#define TANDEM_DEVICE_ADDRESS(buffer, offset) \
  (TANDEM_DEVICE_ADDRESS_BIT | ((uint64_t)(buffer) & 0x7fffffull) << 40 | ((uint64_t)(offset) & 0xffffffffffull))
#define TANDEM_DEVICE_BUFFER_OF(address) ((uint32_t)(((address) >> 40) & 0x7fffffull))
#define TANDEM_DEVICE_OFFSET_OF(address) ((address) & 0xffffffffffull)

/* A 64-byte packet. Dispatch, barrier-AND and cancel share the first and the last two words. */
typedef struct tandem_packet {
  uint32_t header;          /* written last, release; see TANDEM_HEADER_* */
  uint32_t flags;           /* TANDEM_FLAG_* */
  union {
    struct {
      uint64_t workload;                  /* work units of this job (bytes, cycles): monitor figures */
      uint64_t args[TANDEM_INLINE_ARGS];  /* inline arguments, or (address, bytes) of an argument block */
    } dispatch;
    struct {
      uint64_t deps[TANDEM_BARRIER_DEPS]; /* client addresses of completion records; 0 = unused */
    } barrier;
    struct {
      /* Client address of the completion record of the job to withdraw (nonzero). If that job is
       * still queued it completes with TANDEM_CANCELLED, and this packet's record gets TANDEM_OK with
       * value 1; if it already runs, has finished or is unknown, value 0. Function id and flags: 0. */
      uint64_t target;
      uint64_t reserved[TANDEM_BARRIER_DEPS - 1]; /* zero */
    } cancel;
  } body;
  uint64_t user_data;       /* opaque to tandem */
  uint64_t completion;      /* client address of a tandem_completion record; 0 = fire and forget */
} tandem_packet_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_packet_t) == TANDEM_PACKET_SIZE, "packet is 64 bytes");
TANDEM_STATIC_ASSERT(offsetof(tandem_packet_t, header) == 0, "header first");
TANDEM_STATIC_ASSERT(offsetof(tandem_packet_t, body) == 8, "body at 8");
TANDEM_STATIC_ASSERT(offsetof(tandem_packet_t, user_data) == 48, "user_data at 48");
TANDEM_STATIC_ASSERT(offsetof(tandem_packet_t, completion) == 56, "completion at 56");

/* A completion record, in client memory (docs/abi.md). `status` and `waiters` are one aligned 8-byte
 * word, changed only by atomic read-modify-writes of the whole word. The engine writes value, device_ns
 * and slot, then completes the record with one exchange of the word (final status, waiters cleared,
 * release) and wakes futex sleepers on `status` only if the old word had `waiters` set; it never reads
 * the record after that. A waiter spins on `status` (acquire), then sets `waiters` with a
 * compare-and-swap that succeeds only while the status is TANDEM_PENDING, and sleeps on `status`. */
typedef struct tandem_completion {
  uint32_t status;     /* TANDEM_PENDING until done; futex word (low half of the word) */
  uint32_t waiters;    /* nonzero while a waiter may sleep on status (high half of the word) */
  int64_t value;       /* function return value */
  uint64_t device_ns;  /* modelled device time of the job (0 if it never ran) */
  uint32_t slot;       /* slot that ran it, or UINT32_MAX */
  uint32_t done_ns_lo; /* low 32 bits of the CLOCK_MONOTONIC ns at which the engine completed it */
} tandem_completion_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_completion_t) == 32, "completion record is 32 bytes");
TANDEM_STATIC_ASSERT(offsetof(tandem_completion_t, waiters) == 4, "status and waiters form one word");
TANDEM_STATIC_ASSERT(offsetof(tandem_completion_t, value) == 8, "value at 8");

/* ---- submission ring: header page followed by capacity packets ---- */
#define TANDEM_RING_MAGIC 0x474e4952444e4154ull /* "TANDRING" */
#define TANDEM_RING_NEED_WAKEUP (1u << 0)       /* consumer sleeps: ring the doorbell */
#define TANDEM_RING_MIN_CAPACITY 2u
#define TANDEM_RING_MAX_CAPACITY (1u << 20)

/* Fields prefixed k_ are shared; each group written by one side sits on its own cache line. */
typedef struct tandem_ring_header {
  /* line 0: immutable after creation */
  uint64_t k_magic;
  uint32_t k_version;
  uint32_t k_capacity;        /* power of two */
  uint64_t k_packets_offset;  /* from the start of this header */
  uint64_t k_ring_id;         /* assigned by the engine; informational */
  uint8_t pad0[TANDEM_CACHE_LINE - 32];
  /* line 1: producers */
  uint64_t k_write_index;     /* reserved by fetch_add (or CAS for try-reserve) */
  uint32_t k_busy_callers;    /* the client's threads inside high-level calls (its default ring; the
                                 engine's monitor reads it once a period and never trusts it further) */
  uint32_t k_reserved1;       /* zero */
  uint64_t k_caller_cpus;     /* bit (cpu % 64) set for each CPU a thread entered a high-level call on
                                 since the engine's monitor last took (and cleared) the mask */
  uint8_t pad1[TANDEM_CACHE_LINE - 24];
  /* line 2: consumer */
  uint64_t k_read_index;      /* release-stored by the consumer after resetting a header */
  uint32_t k_other_callers;   /* the other sessions' k_busy_callers summed at the last monitoring
                                 period: the threads this client's CPU share competes with */
  uint8_t pad2[TANDEM_CACHE_LINE - 12];
  /* line 3: wake-up protocol */
  uint32_t k_flags;           /* TANDEM_RING_NEED_WAKEUP, set by the consumer before it sleeps */
  uint32_t k_doorbell;        /* futex word: producers increment it and wake */
  uint8_t pad3[TANDEM_CACHE_LINE - 8];
} tandem_ring_header_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_ring_header_t) == 4 * TANDEM_CACHE_LINE, "ring header is 4 lines");
TANDEM_STATIC_ASSERT(offsetof(tandem_ring_header_t, k_write_index) == 64, "write index on line 1");
TANDEM_STATIC_ASSERT(offsetof(tandem_ring_header_t, k_busy_callers) == 72, "busy callers on line 1");
TANDEM_STATIC_ASSERT(offsetof(tandem_ring_header_t, k_caller_cpus) == 80, "caller CPUs on line 1, 8-aligned");
TANDEM_STATIC_ASSERT(offsetof(tandem_ring_header_t, k_read_index) == 128, "read index on line 2");
TANDEM_STATIC_ASSERT(offsetof(tandem_ring_header_t, k_flags) == 192, "flags on line 3");

/* Bytes of shared memory a ring of `capacity` packets needs (header padded to a page). */
#define TANDEM_RING_HEADER_BYTES 4096u
#define TANDEM_RING_BYTES(capacity) ((size_t)TANDEM_RING_HEADER_BYTES + (size_t)(capacity) * TANDEM_PACKET_SIZE)

/* ---- the read-only metrics page (thesis 5.4.6): the system monitor's figures per function ----
 * Written by the engine's driver once per monitoring period, read by clients' partitioners. Each entry
 * is a seqlock: `seq` is odd while the writer updates the entry; a reader retries until it reads the
 * same even value before and after copying the fields. Mapped read-only by clients under tandemd. */
#define TANDEM_METRICS_MAGIC 0x5352544d444e4154ull /* "TANDMTRS" */

typedef struct tandem_function_metrics {
  uint32_t seq;                  /* seqlock sequence: odd while being written */
  uint16_t accelerators;         /* n_a: slots configured and usable for this function */
  uint16_t configuring;          /* slots being loaded with it */
  uint32_t queued_jobs;          /* jobs waiting in its queue */
  uint32_t running_jobs;
  uint64_t queued_work;          /* work units waiting in its queue */
  uint64_t outstanding_work;     /* queued plus running jobs' work units (Eq 5.2's sum) */
  uint64_t submitted_work;       /* work units submitted during the last period */
  double queue_wait_s;           /* D_q, Eq 5.2: worst-case wait of a job submitted now */
  double effective_throughput;   /* X'_a, Eq 5.1: units/s one accelerator delivers now */
  double utilization;            /* busy fraction of its slots during the last period */
  double demand;                 /* max(remaining, submitted) work in the last period (Algorithm 1) */
  double demand_per_accelerator; /* demand / n_a (Algorithm 1's per-slot demand) */
  uint64_t requests;             /* NOT_ACCELERATED / demand-only submissions, total */
  uint8_t pad[TANDEM_CACHE_LINE * 2 - 88];
} tandem_function_metrics_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_function_metrics_t) == 2 * TANDEM_CACHE_LINE, "metrics entry is 2 lines");

typedef struct tandem_metrics_page {
  uint64_t k_magic;
  uint32_t k_version;
  uint32_t k_function_count;     /* entries in functions[] (TANDEM_FN_MAX) */
  uint32_t k_slot_count;
  uint32_t k_seq;                /* seqlock over the fields of this header line */
  uint64_t k_period_ns;          /* monitoring period P */
  uint64_t k_updated_ns;         /* driver clock at the last update */
  double k_available_bandwidth;  /* BW, bytes/s (0: unknown) */
  double k_engine_cores;         /* CPU the engine's driver thread used in the last period, in cores
                                    (polling, emulated devices' compute): what it takes from clients */
  uint8_t pad[TANDEM_CACHE_LINE - 56];
  tandem_function_metrics_t functions[256];
} tandem_metrics_page_t;

TANDEM_STATIC_ASSERT(offsetof(tandem_metrics_page_t, functions) == TANDEM_CACHE_LINE, "entries after one line");
TANDEM_STATIC_ASSERT(sizeof(tandem_metrics_page_t) == TANDEM_CACHE_LINE * (1 + 2 * 256), "metrics page size");

/* Function ids known to the runtime; accelerated library functions register theirs in src/funcs. */
enum {
  TANDEM_FN_NOP = 0,
  TANDEM_FN_ACCUMULATE = 1,
  TANDEM_FN_WORK = 2,
  TANDEM_FN_SOBEL = 3,          /* 3x3 Sobel edge magnitude of an 8-bit image (docs/abi.md) */
  TANDEM_FN_MATMUL = 4,         /* int16 matrix product, int32 result modulo 2^32 */
  TANDEM_FN_DCT_QUANT = 5,      /* JPEG 8x8 forward DCT (libjpeg islow) and quantizer */
  TANDEM_FN_PRIORITY_QUEUE = 6, /* a batch of scheduler-queue commands (thesis Ch3) */
  TANDEM_FN_COPY = 7,           /* a copy engine's transfer: args dst, src, bytes (device <-> host) */
  TANDEM_FN_LIST_WALK = 8,      /* follow a linked list in client memory: args head, max nodes (seed 004 Table 1) */
  TANDEM_FN_SERVICE_CHAIN = 9,  /* a chain of service requests to the client: args service id, steps, seed */
  TANDEM_FN_WORK_BASE = 16,   /* work functions 16..16+TANDEM_WORK_FUNCTIONS-1 (thesis 5.5.2) */
  TANDEM_WORK_FUNCTIONS = 16,
  TANDEM_FN_MAX = 256         /* function ids are below this */
};

/* Argument words of the kernels above (the layouts are in docs/abi.md). */
#define TANDEM_SOBEL_HALO_ABOVE (1ull << 32)  /* sobel args[3]: a row above the first (split jobs) */
#define TANDEM_SOBEL_HALO_BELOW (1ull << 33)  /* sobel args[3]: a row below the last (split jobs) */
#define TANDEM_MATMUL_DIMS(m, k, n) ((uint64_t)(m) | (uint64_t)(k) << 16 | (uint64_t)(n) << 32)
#define TANDEM_DCT_MODE_DCT 1u          /* samples -> coefficients */
#define TANDEM_DCT_MODE_QUANTIZE 2u     /* coefficients -> quantized coefficients */
#define TANDEM_DCT_MODE_DCT_QUANTIZE 3u /* samples -> quantized coefficients (chained) */
#define TANDEM_DCT_ARG(blocks, mode) ((uint64_t)(uint32_t)(blocks) | (uint64_t)(mode) << 32)

/* ---- list_walk's node (docs/abi.md, "Virtual memory"): 16 bytes, 8-aligned, anywhere in client
 * memory. The walk starts at args[0], follows `next` (a client virtual address; 0 ends the list) for at
 * most args[1] nodes, and returns the sum of the visited nodes' values modulo 2^64. ---- */
typedef struct tandem_list_node {
  uint64_t next;
  int64_t value;
} tandem_list_node_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_list_node_t) == 16, "list node is 16 bytes");

/* ---- how a session's jobs name memory (tandem_set_address_mode) ----
 * AISLE: buffers and pointers lie in the session's registered windows (tandem_alloc / tandem_register),
 * translated with a constant offset per window; an address outside them ends the job with
 * TANDEM_TRANSLATION_FAULT. PHASE/V: any address of the client's own address space; a page outside
 * the windows is faulted in on demand through the device's TLB (page walks cost device time). */
typedef enum tandem_address_mode {
  TANDEM_ADDRESS_AISLE = 0,
  TANDEM_ADDRESS_PHASEV = 1,
  TANDEM_ADDRESS_MODE_COUNT_ = 2
} tandem_address_mode_t;

/* ---- service requests (FastPath, docs/abi.md "Service requests"): a running job asks its client to run
 * a callback. One ring per session in memory the client creates and shares: a header, then fixed
 * 64-byte slots. One producer (the engine's device side) and one consumer (the client library).
 * A slot's `state` is (sequence << 2) | kind: the producer writes the body, then release-stores
 * (seq << 2) | POSTED and bumps k_posted; the client copies the body, runs the callback, writes
 * `answer` and `status`, then release-stores (seq << 2) | ANSWERED and bumps k_answered. The producer
 * keeps each slot's sequence privately and accepts only that exact word back. ---- */
#define TANDEM_SERVICE_MAGIC 0x56524553u /* "SERV" */
#define TANDEM_SERVICE_VERSION 1u
#define TANDEM_SERVICE_MAX_SLOTS 256u
#define TANDEM_SERVICE_IDS 256u          /* service ids are below this */
#define TANDEM_SERVICE_ARGS 4u
#define TANDEM_SERVICE_HEADER_BYTES 256u
#define TANDEM_SERVICE_BYTES(slots) ((size_t)TANDEM_SERVICE_HEADER_BYTES + (size_t)(slots) * 64u)

typedef enum tandem_service_kind {
  TANDEM_SERVICE_FREE = 0,
  TANDEM_SERVICE_POSTED = 1,
  TANDEM_SERVICE_ANSWERED = 2
} tandem_service_kind_t;

#define TANDEM_SERVICE_SLEEPING 1u /* k_client_flags / k_device_flags: that side sleeps on the other's counter */

typedef struct tandem_service_header {
  uint32_t k_magic;
  uint32_t k_version;
  uint32_t k_slots;
  uint32_t k_reserved;
  uint8_t k_pad0[TANDEM_CACHE_LINE - 16];
  /* written by the device side */
  uint32_t k_posted;       /* requests posted so far: the futex word a sleeping client waits on */
  uint32_t k_device_flags; /* TANDEM_SERVICE_SLEEPING: the device side waits on k_answered */
  uint8_t k_pad1[TANDEM_CACHE_LINE - 8];
  /* written by the client */
  uint32_t k_answered;     /* answers written so far: the futex word a sleeping device side waits on */
  uint32_t k_client_flags; /* TANDEM_SERVICE_SLEEPING: the client waits on k_posted */
  uint8_t k_pad2[TANDEM_CACHE_LINE - 8];
  uint8_t k_pad3[TANDEM_CACHE_LINE];
} tandem_service_header_t;

typedef struct tandem_service_slot {
  uint32_t state;   /* (sequence << 2) | tandem_service_kind_t */
  uint32_t service; /* the callback's id, below TANDEM_SERVICE_IDS */
  uint64_t token;   /* the job's (informational) */
  uint64_t args[TANDEM_SERVICE_ARGS];
  uint64_t answer;
  uint32_t status;  /* the client's: TANDEM_OK, or why it has no answer */
  uint32_t reserved;
} tandem_service_slot_t;

TANDEM_STATIC_ASSERT(sizeof(tandem_service_header_t) == TANDEM_SERVICE_HEADER_BYTES, "service header size");
TANDEM_STATIC_ASSERT(sizeof(tandem_service_slot_t) == 64, "service slot is one cache line");

#ifdef __cplusplus
}
#endif
#endif /* TANDEM_ABI_H */
