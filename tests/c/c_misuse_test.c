/* The C API misused from C99, as docs/api.md promises it survives: closed handles, foreign and double
 * frees, queues of a closed runtime, options with values outside their enumerations or sizes no header
 * wrote, misaligned data, waits with no practical limit. Each is an error (or ignored where the docs
 * say so), never a crash; the sanitizer builds catch what a check here cannot. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "tandem/tandem.h"

static int failures = 0;

static void closed_handles(void) {
  tandem_runtime_t* rt = open_embedded_hw();
  tandem_runtime_t* other;
  tandem_queue_t* q = NULL;
  tandem_queue_t* q2 = NULL;
  uint64_t index = 0;
  tandem_completion_t* rec;
  if (rt == NULL) {
    ++failures;
    return;
  }
  CHECK(tandem_queue_create(rt, 16, &q) == TANDEM_OK);
  tandem_queue_destroy(q);
  CHECK(tandem_queue_create(rt, 16, &q2) == TANDEM_OK);
  CHECK(q2 != q); /* a closed handle's address is not handed out again at once */
  CHECK(tandem_try_reserve(q, &index) == TANDEM_INVALID_ARGUMENT);
  tandem_queue_destroy(q); /* twice: ignored, and q2 is untouched */
  CHECK(tandem_try_reserve(q2, &index) == TANDEM_OK);
  tandem_publish(q2, index, tandem_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_NOP, 0));

  /* The runtime closes while q2 is still held: q2 may only be destroyed, and says so. */
  rec = (tandem_completion_t*)tandem_alloc(rt, sizeof *rec);
  CHECK(rec != NULL);
  tandem_close(rt);
  CHECK(strcmp(tandem_runtime_kind(rt), "invalid") == 0);
  CHECK(tandem_alloc(rt, 64) == NULL);
  tandem_close(rt); /* twice: ignored */
  other = open_embedded_hw(); /* a new runtime does not take the closed one's address */
  CHECK(other != NULL && other != rt);
  CHECK(tandem_dispatch(q2, TANDEM_FN_NOP, NULL, 0, 0, NULL) == TANDEM_INVALID_ARGUMENT);
  CHECK(strstr(tandem_last_error(), "runtime is closed") != NULL);
  CHECK(tandem_reserve(q2, &index) == TANDEM_INVALID_ARGUMENT);
  CHECK(tandem_try_reserve(q2, &index) == TANDEM_INVALID_ARGUMENT);
  tandem_queue_destroy(q2);
  tandem_close(other);
}

static void foreign_and_double_frees(void) {
  tandem_runtime_t* rt = open_embedded_hw();
  int on_stack[16];
  char* m;
  if (rt == NULL) {
    ++failures;
    return;
  }
  m = (char*)tandem_alloc(rt, 256);
  CHECK(m != NULL);
  tandem_free(rt, on_stack);  /* not handed out: ignored */
  tandem_free(rt, m + 64);    /* inside a block, not its start: ignored */
  tandem_free(rt, m);
  tandem_free(rt, m);         /* twice: ignored */
  CHECK(tandem_alloc(rt, 4096) != NULL); /* kept to the end: released with the runtime (LeakSanitizer) */
  tandem_close(rt);
}

static void options_outside_their_ranges(void) {
  tandem_options_t o;
  tandem_runtime_t* rt = NULL;
  int32_t bad = 77;
  tandem_options_init(&o);
  o.embedded = 1;
  memcpy(&o.wait_mode, &bad, sizeof bad);
  CHECK(tandem_open(&o, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  CHECK(strstr(tandem_last_error(), "wait_mode") != NULL);
  tandem_options_init(&o);
  o.embedded = 1;
  memcpy(&o.mode, &bad, sizeof bad);
  CHECK(tandem_open(&o, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  tandem_options_init(&o);
  o.embedded = 1;
  o.spin_ns = -5;
  CHECK(tandem_open(&o, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  tandem_options_init(&o);
  o.embedded = 1;
  o.struct_size = (uint32_t)sizeof o - 4; /* between two layouts: no header wrote it */
  CHECK(tandem_open(&o, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  o.struct_size = (uint32_t)sizeof o + 8;
  CHECK(tandem_open(&o, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
}

/* A program built against the first header has a struct of the first layout's size (here followed by
 * bytes it owns for something else): the defaults for that layout, and not a byte past it. A size that is
 * no layout gives options tandem_open refuses; the function programs built before tandem_options_init
 * became a macro call writes the third layout. */
static void options_of_an_older_header(void) {
  const size_t first_layout = offsetof(tandem_options_t, spin_ns) + sizeof(int64_t);
  union {
    tandem_options_t options;
    unsigned char bytes[sizeof(tandem_options_t) + 16];
  } u;
  tandem_runtime_t* rt = NULL;
  size_t i, untouched = 0;
  memset(u.bytes, 0xAB, sizeof u.bytes);
  tandem_options_init_sized(&u.options, first_layout);
  for (i = first_layout; i < sizeof u.bytes; ++i) untouched += u.bytes[i] == 0xAB;
  CHECK(untouched == sizeof u.bytes - first_layout);
  CHECK(u.options.struct_size == first_layout && u.options.mode == TANDEM_MODE_AUTO && u.options.spin_ns == 20000);
  u.options.embedded = 1;
  CHECK(tandem_open(&u.options, &rt) == TANDEM_OK && rt != NULL);
  tandem_close(rt);
  rt = NULL;

  memset(u.bytes, 0xAB, sizeof u.bytes);
  tandem_options_init_sized(&u.options, sizeof u.bytes); /* a newer header's, longer struct */
  for (i = sizeof(tandem_options_t), untouched = 0; i < sizeof u.bytes; ++i) untouched += u.bytes[i] == 0xAB;
  CHECK(untouched == sizeof u.bytes - sizeof(tandem_options_t));
  CHECK(u.options.struct_size == 0);
  u.options.embedded = 1;
  CHECK(tandem_open(&u.options, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  CHECK(strstr(tandem_last_error(), "struct_size 0") != NULL);
  tandem_options_init_sized(&u.options, 3); /* not even struct_size's bytes */
  u.options.embedded = 1;
  CHECK(tandem_open(&u.options, &rt) == TANDEM_INVALID_ARGUMENT && rt == NULL);
  tandem_options_init_sized(NULL, sizeof(tandem_options_t)); /* ignored */

  (tandem_options_init)(&u.options);
  CHECK(u.options.struct_size == sizeof(tandem_options_t) && u.options.access == TANDEM_ACCESS_CHOOSE);
  tandem_options_init(&u.options);
  CHECK(u.options.struct_size == sizeof(tandem_options_t));
}

static void misaligned_data_and_long_waits(void) {
  tandem_runtime_t* rt = open_embedded_hw();
  tandem_queue_t* q = NULL;
  tandem_completion_t* rec;
  int32_t* data;
  int64_t sum = 0;
  uint64_t units = 2000;
  int32_t bad = 9;
  tandem_wait_mode_t mode;
  if (rt == NULL) {
    ++failures;
    return;
  }
  data = (int32_t*)tandem_alloc(rt, 64 * sizeof(int32_t));
  CHECK(data != NULL);
  memset(data, 0, 64 * sizeof(int32_t));
  CHECK(tandem_accumulate(rt, (const int32_t*)((const char*)data + 1), 8, &sum) == TANDEM_INVALID_ARGUMENT);
  CHECK(strstr(tandem_last_error(), "aligned") != NULL);
  CHECK(tandem_list_walk(rt, (const tandem_list_node_t*)((const char*)data + 1), 4, &sum) == TANDEM_INVALID_ARGUMENT);

  /* A timeout or spin budget of INT64_MAX is no limit, not an overflow into an immediate TIMEOUT. */
  rec = (tandem_completion_t*)tandem_alloc(rt, sizeof *rec);
  CHECK(tandem_queue_create(rt, 16, &q) == TANDEM_OK);
  tandem_completion_init(rec);
  CHECK(tandem_dispatch(q, TANDEM_FN_WORK, &units, 1, units, rec) == TANDEM_OK);
  CHECK(tandem_wait(rt, rec, TANDEM_WAIT_BLOCK, 0, INT64_MAX) == TANDEM_OK);
  tandem_completion_init(rec);
  CHECK(tandem_dispatch(q, TANDEM_FN_WORK, &units, 1, units, rec) == TANDEM_OK);
  CHECK(tandem_wait(rt, rec, TANDEM_WAIT_SPIN_THEN_BLOCK, INT64_MAX, INT64_MAX) == TANDEM_OK);
  memcpy(&mode, &bad, sizeof bad); /* an unknown mode waits as TANDEM_WAIT_SPIN_THEN_BLOCK (docs/api.md) */
  CHECK(tandem_wait(rt, rec, mode, 0, -1) == TANDEM_OK);
  tandem_queue_destroy(q);
  /* A device-buffer range that runs past any buffer is a translation fault, as docs/api.md says. */
  CHECK(tandem_buffer_read(rt, data, TANDEM_DEVICE_ADDRESS(5, 0), (size_t)-1) == TANDEM_TRANSLATION_FAULT);
  CHECK(tandem_buffer_write(rt, TANDEM_DEVICE_ADDRESS(5, 16), data, (size_t)1 << 40) == TANDEM_TRANSLATION_FAULT);
  tandem_close(rt);
}

/* Packets a ring still holds when its queue is destroyed or its runtime closes never run: their
 * records complete with TANDEM_CANCELLED, so that a wait on them (here from another runtime) ends. */
static void unread_packets_are_cancelled(void) {
  tandem_runtime_t* rt = open_embedded_hw();
  tandem_runtime_t* other = open_embedded_hw();
  tandem_queue_t* q = NULL;
  tandem_completion_t never, bar, after;
  const tandem_completion_t* deps[1];
  int round;
  if (rt == NULL || other == NULL) {
    ++failures;
    return;
  }
  for (round = 0; round < 2; ++round) {
    tandem_completion_init(&never); /* no job carries it: the barrier waits on it for ever */
    tandem_completion_init(&bar);
    tandem_completion_init(&after);
    deps[0] = &never;
    CHECK(tandem_queue_create(rt, 16, &q) == TANDEM_OK);
    CHECK(tandem_barrier_and(q, deps, 1, &bar) == TANDEM_OK);
    CHECK(tandem_dispatch(q, TANDEM_FN_NOP, NULL, 0, 0, &after) == TANDEM_OK); /* behind the barrier */
    if (round == 0) {
      tandem_queue_destroy(q);
    } else {
      tandem_close(rt); /* the queue is still held: its packets go with the runtime */
      tandem_queue_destroy(q);
    }
    CHECK(tandem_wait(other, &after, TANDEM_WAIT_BLOCK, 0, 2000000000) == TANDEM_CANCELLED);
    if (after.status != TANDEM_CANCELLED) fprintf(stderr, "round %d: after is %u\n", round, after.status);
  }
  tandem_close(other);
}

int main(void) {
  closed_handles();
  unread_packets_are_cancelled();
  foreign_and_double_frees();
  options_outside_their_ranges();
  options_of_an_older_header();
  misaligned_data_and_long_waits();
  if (failures == 0) printf("c_misuse: ok\n");
  return failures == 0 ? 0 : 1;
}
