/* The C API from C99: open, high-level calls, low-level packets, barrier, wait, errors, close. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tandem/tandem.h"

static int failures = 0;

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

int main(void) {
  tandem_options_t options;
  tandem_runtime_t* rt = NULL;
  tandem_queue_t* queue = NULL;
  tandem_completion_t* a;
  tandem_completion_t* b;
  tandem_completion_t* bar;
  const tandem_completion_t* deps[1];
  int32_t* data;
  int64_t sum = 0, expected = 0;
  uint64_t args[2];
  uint64_t index;
  size_t i;

  tandem_options_init(&options);
  options.embedded = 1;
  options.mode = TANDEM_MODE_HW;
  CHECK(tandem_open(&options, &rt) == TANDEM_OK);
  if (rt == NULL) return 1;
  CHECK(strcmp(tandem_runtime_kind(rt), "embedded") == 0);

  data = (int32_t*)tandem_alloc(rt, 1000 * sizeof(int32_t));
  CHECK(data != NULL);
  for (i = 0; i < 1000; ++i) {
    data[i] = (int32_t)(i * 7) - 3000;
    expected += data[i];
  }
  CHECK(tandem_accumulate(rt, data, 1000, &sum) == TANDEM_OK);
  CHECK(sum == expected);
  CHECK(tandem_work(rt, 10000) == TANDEM_OK);
  CHECK(tandem_accumulate(rt, NULL, 5, &sum) == TANDEM_INVALID_ARGUMENT);
  CHECK(strlen(tandem_last_error()) > 0);
  CHECK(strcmp(tandem_status_name(TANDEM_TRANSLATION_FAULT), "translation_fault") == 0);
  CHECK(tandem_alloc(rt, (size_t)-1) == NULL); /* the rounding would overflow */
  CHECK(strstr(tandem_last_error(), "tandem_alloc") != NULL);
  CHECK(tandem_register(rt, data, 4096, -1, 0) == TANDEM_INVALID_ARGUMENT);
  CHECK(strstr(tandem_last_error(), "tandem_register") != NULL);

  CHECK(tandem_queue_create(rt, 16, &queue) == TANDEM_OK);
  a = (tandem_completion_t*)tandem_alloc(rt, 3 * sizeof(tandem_completion_t));
  b = a + 1;
  bar = a + 2;
  tandem_completion_init(a);
  tandem_completion_init(b);
  tandem_completion_init(bar);

  /* Low level: reserve, write the body, publish the header last. */
  CHECK(tandem_reserve(queue, &index) == TANDEM_OK);
  {
    tandem_packet_t* p = tandem_packet_at(queue, index);
    memset(&p->body, 0, sizeof p->body);
    p->flags = 0;
    p->body.dispatch.workload = 1000 * sizeof(int32_t);
    p->body.dispatch.args[0] = (uint64_t)(uintptr_t)data;
    p->body.dispatch.args[1] = 1000;
    p->user_data = 0;
    p->completion = (uint64_t)(uintptr_t)a;
    tandem_publish(queue, index, tandem_header(TANDEM_PACKET_DISPATCH, TANDEM_FN_ACCUMULATE, 0));
  }
  deps[0] = a;
  CHECK(tandem_barrier_and(queue, deps, 1, bar) == TANDEM_OK);
  args[0] = 500;
  CHECK(tandem_dispatch(queue, TANDEM_FN_WORK, args, 1, 500, b) == TANDEM_OK);
  CHECK(tandem_wait(rt, bar, TANDEM_WAIT_BLOCK, 0, -1) == TANDEM_OK);
  CHECK(tandem_wait(rt, a, TANDEM_WAIT_SPIN, 0, -1) == TANDEM_OK);
  CHECK(a->value == expected);
  CHECK(tandem_wait(rt, b, TANDEM_WAIT_SPIN_THEN_BLOCK, 1000, -1) == TANDEM_OK);
  CHECK(b->value == 500);

  /* A record nobody completes times out. */
  tandem_completion_init(b);
  CHECK(tandem_wait(rt, b, TANDEM_WAIT_SPIN_THEN_BLOCK, 1000, 1000000) == TANDEM_TIMEOUT);

  /* Partitioned calls: a fixed share for the accelerators, set at run time, gives the same sum. */
  CHECK(tandem_set_mode(rt, TANDEM_MODE_ALPHA, 0.37) == TANDEM_OK);
  CHECK(tandem_accumulate(rt, data, 1000, &sum) == TANDEM_OK);
  CHECK(sum == expected);
  CHECK(tandem_set_mode(rt, TANDEM_MODE_ALPHA, 1.5) == TANDEM_INVALID_ARGUMENT);
  CHECK(tandem_set_mode(rt, TANDEM_MODE_AUTO, 0) == TANDEM_OK);
  CHECK(tandem_accumulate(rt, data, 1000, &sum) == TANDEM_OK);
  CHECK(sum == expected);

  /* Cancel: a record nobody's job carries is not found (value 0); the answer is still OK. */
  tandem_completion_init(a);
  tandem_completion_init(b);
  CHECK(tandem_cancel(queue, b, a) == TANDEM_OK);
  CHECK(tandem_wait(rt, a, TANDEM_WAIT_SPIN_THEN_BLOCK, 1000, -1) == TANDEM_OK);
  CHECK(a->value == 0);
  CHECK(tandem_cancel(queue, NULL, a) == TANDEM_INVALID_ARGUMENT);

  tandem_queue_destroy(queue);
  tandem_free(rt, a);
  tandem_free(rt, data);
  tandem_close(rt);
  tandem_close(NULL);

  /* Options versioning: a caller built against the first header (struct up to spin_ns) still opens,
   * with the new fields at their defaults; sizes outside the known range do not. */
  tandem_options_init(&options);
  options.embedded = 1;
  options.mode = TANDEM_MODE_SW;
  options.struct_size = (uint32_t)(offsetof(tandem_options_t, spin_ns) + sizeof(int64_t));
  rt = NULL;
  CHECK(tandem_open(&options, &rt) == TANDEM_OK);
  tandem_close(rt);
  options.mode = TANDEM_MODE_ALPHA; /* needs the alpha field, which this size lacks */
  rt = NULL;
  CHECK(tandem_open(&options, &rt) == TANDEM_INVALID_ARGUMENT);
  options.struct_size = 8;
  CHECK(tandem_open(&options, &rt) == TANDEM_INVALID_ARGUMENT);
  tandem_options_init(&options);
  options.embedded = 1;
  options.mode = TANDEM_MODE_ALPHA;
  options.alpha = 2.0;
  CHECK(tandem_open(&options, &rt) == TANDEM_INVALID_ARGUMENT);
  options.alpha = 0.5;
  rt = NULL;
  CHECK(tandem_open(&options, &rt) == TANDEM_OK);
  if (rt != NULL) {
    data = (int32_t*)tandem_alloc(rt, 1000 * sizeof(int32_t));
    expected = 0;
    for (i = 0; i < 1000; ++i) {
      data[i] = (int32_t)(i * 13) - 777;
      expected += data[i];
    }
    CHECK(tandem_accumulate(rt, data, 1000, &sum) == TANDEM_OK);
    CHECK(sum == expected);
    tandem_free(rt, data);
    tandem_close(rt);
  }
  if (failures == 0) printf("c_api: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
