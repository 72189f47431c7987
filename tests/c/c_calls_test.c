/* The kernels' high-level calls from C99 (the header's inline helpers compile as strict C99): one call of
 * each on the embedded runtime in hw mode, checked against values worked out by hand. */
#include <stdio.h>
#include <string.h>

#include "c_check.h"
#include "tandem/tandem.h"

static int failures = 0;

int main(void) {
  tandem_runtime_t* rt = NULL;
  uint8_t image[16], edges[16], samples[64];
  int16_t a[2], b[2], coefs[64];
  int32_t c[1];
  uint16_t table[64];
  uint64_t commands[3], responses[3], remaining = 0;
  tandem_call_stats_t stats;
  size_t i;

  rt = open_embedded_hw();
  if (rt == NULL) return 1;

  /* A 4x4 image, dark left half and bright right half: the inner pixels see |Gx| = 4 * 100. */
  for (i = 0; i < 16; ++i) image[i] = (uint8_t)((i % 4) < 2 ? 0 : 100);
  CHECK(tandem_sobel(rt, image, edges, 4, 4) == TANDEM_OK);
  CHECK(edges[0] == 0 && edges[5] == 255 && edges[6] == 255 && edges[15] == 0);

  a[0] = 3, a[1] = -4, b[0] = 5, b[1] = 6; /* [3 -4] x [5 6]^T = -9 */
  CHECK(tandem_matmul(rt, a, b, c, 1, 2, 1) == TANDEM_OK);
  CHECK(c[0] == -9);

  /* A flat block of 228: DC = 8 * 8 * (228 - 128) = 6400 before quantization, 6400 / (8 * 16) = 50 after. */
  memset(samples, 228, sizeof samples);
  for (i = 0; i < 64; ++i) table[i] = 16;
  CHECK(tandem_dct_quant(rt, TANDEM_DCT_MODE_DCT_QUANTIZE, samples, coefs, 1, table) == TANDEM_OK);
  CHECK(coefs[0] == 50 && coefs[1] == 0 && coefs[63] == 0);

  commands[0] = tandem_pq_push(11, 3, 0);
  commands[1] = tandem_pq_push(22, 200, 0);
  commands[2] = tandem_pq_pop(0, 1);
  CHECK(tandem_priority_queue(rt, commands, responses, 3, &remaining) == TANDEM_OK);
  CHECK(tandem_pq_response_ok(responses[2]) && tandem_pq_response_handle(responses[2]) == 22);
  CHECK(tandem_pq_response_priority(responses[2]) == 200 && tandem_pq_response_occupancy(responses[2]) == 1);
  CHECK(remaining == 1);

  CHECK(tandem_get_call_stats(rt, &stats, sizeof stats) == TANDEM_OK);
  CHECK(stats.calls == 4 && stats.hw_jobs + stats.demand_jobs >= 4); /* the default fabric holds none of them */
  tandem_close(rt);
  if (failures == 0) printf("c_calls: ok\n");
  return failures == 0 ? 0 : 1;
}
