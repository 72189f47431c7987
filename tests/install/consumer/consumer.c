/* A program outside the tandem tree, built against the installed package (pkg-config or
 * find_package(tandem)): it opens an embedded runtime and checks real results of three calls. */
#include <stdio.h>
#include <string.h>

#include <tandem/tandem.h>

int main(void) {
  tandem_options_t options;
  tandem_runtime_t* rt = NULL;
  int32_t data[1000];
  int64_t sum = 0, expected = 0;
  uint8_t samples[64];
  int16_t coefs[64];
  uint16_t table[64];
  uint64_t commands[2], responses[2], remaining = 0;
  size_t i;

  tandem_options_init(&options);
  options.embedded = 1;
  if (tandem_open(&options, &rt) != TANDEM_OK) {
    fprintf(stderr, "consumer: tandem_open: %s\n", tandem_last_error());
    return 1;
  }
  for (i = 0; i < 1000; ++i) {
    data[i] = (int32_t)(i * 7919 % 2001) - 1000;
    expected += data[i];
  }
  memset(samples, 228, sizeof samples);
  for (i = 0; i < 64; ++i) table[i] = 16;
  commands[0] = tandem_pq_push(42, 7, 0);
  commands[1] = tandem_pq_pop(0, 1);
  if (tandem_accumulate(rt, data, 1000, &sum) != TANDEM_OK || sum != expected ||
      tandem_dct_quant(rt, TANDEM_DCT_MODE_DCT_QUANTIZE, samples, coefs, 1, table) != TANDEM_OK || coefs[0] != 50 ||
      tandem_priority_queue(rt, commands, responses, 2, &remaining) != TANDEM_OK ||
      tandem_pq_response_handle(responses[1]) != 42 || remaining != 0) {
    fprintf(stderr, "consumer: wrong result (%s)\n", tandem_last_error());
    tandem_close(rt);
    return 1;
  }
  printf("consumer: %s runtime, sum %lld, DC %d: ok\n", tandem_runtime_kind(rt), (long long)sum, coefs[0]);
  tandem_close(rt);
  return 0;
}
