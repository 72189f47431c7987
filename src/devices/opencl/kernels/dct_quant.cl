// dct_quant: JPEG's 8x8 forward DCT as libjpeg computes it for `-dct int` (islow) and its quantizer,
// bit-exact with funcs/ref/dct_quant_ref (which documents the arithmetic): 64-bit intermediates like
// the reference, rows first with outputs scaled by 2^PASS1_BITS, then columns, rounding by "add
// half, shift right" (an arithmetic shift, as every OpenCL compiler implements >> on signed values),
// coefficients cut to int16 before quantization, quantization rounding half away from zero.
// Modes (TANDEM_DCT_MODE_*): 1 samples -> coefficients, 2 coefficients -> quantized, 3 both. The host
// checks the table (every entry in 1..32767) before it launches. One work-item per block; the
// NDRange is rounded up to whole work-groups of TANDEM_WG.
#define CONST_BITS 13
#define PASS1_BITS 2

#define FIX_0_298631336 2446L
#define FIX_0_390180644 3196L
#define FIX_0_541196100 4433L
#define FIX_0_765366865 6270L
#define FIX_0_899976223 7373L
#define FIX_1_175875602 9633L
#define FIX_1_501321110 12299L
#define FIX_1_847759065 15137L
#define FIX_1_961570560 16069L
#define FIX_2_053119869 16819L
#define FIX_2_562915447 20995L
#define FIX_3_072711026 25172L

inline long descale(long v, int n) { return (v + (1L << (n - 1))) >> n; }

// One 1-D pass over x[0], x[stride], ..., x[7 * stride], written back in place (element k of the
// result is frequency k).
inline void islow_pass(long* x, int stride, int row_pass) {
  const int odd_shift = row_pass ? CONST_BITS - PASS1_BITS : CONST_BITS + PASS1_BITS;
  const long x0 = x[0], x1 = x[stride], x2 = x[2 * stride], x3 = x[3 * stride];
  const long x4 = x[4 * stride], x5 = x[5 * stride], x6 = x[6 * stride], x7 = x[7 * stride];

  const long s07 = x0 + x7, d07 = x0 - x7;
  const long s16 = x1 + x6, d16 = x1 - x6;
  const long s25 = x2 + x5, d25 = x2 - x5;
  const long s34 = x3 + x4, d34 = x3 - x4;

  const long e0 = s07 + s34, e3 = s07 - s34;
  const long e1 = s16 + s25, e2 = s16 - s25;
  if (row_pass) {
    x[0] = (e0 + e1) * (1L << PASS1_BITS);
    x[4 * stride] = (e0 - e1) * (1L << PASS1_BITS);
  } else {
    x[0] = descale(e0 + e1, PASS1_BITS);
    x[4 * stride] = descale(e0 - e1, PASS1_BITS);
  }
  const long rot = (e2 + e3) * FIX_0_541196100;
  x[2 * stride] = descale(rot + e3 * FIX_0_765366865, odd_shift);
  x[6 * stride] = descale(rot - e2 * FIX_1_847759065, odd_shift);

  const long p1 = d34 + d07, p2 = d25 + d16, p3 = d34 + d16, p4 = d25 + d07;
  const long common = (p3 + p4) * FIX_1_175875602;
  const long t4 = d34 * FIX_0_298631336;
  const long t5 = d25 * FIX_2_053119869;
  const long t6 = d16 * FIX_3_072711026;
  const long t7 = d07 * FIX_1_501321110;
  const long q1 = -p1 * FIX_0_899976223;
  const long q2 = -p2 * FIX_2_562915447;
  const long q3 = -p3 * FIX_1_961570560 + common;
  const long q4 = -p4 * FIX_0_390180644 + common;
  x[7 * stride] = descale(t4 + q1 + q3, odd_shift);
  x[5 * stride] = descale(t5 + q2 + q4, odd_shift);
  x[3 * stride] = descale(t6 + q2 + q3, odd_shift);
  x[stride] = descale(t7 + q1 + q4, odd_shift);
}

__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))
void tandem_dct_quant(__global const uchar* in, __global short* out, __global const ushort* table,
                      uint blocks, uint mode) {
  const size_t b = get_global_id(0);
  if (b >= blocks) return;
  long coef[64];
  if (mode == 2) {
    __global const short* coefs_in = (__global const short*)in + b * 64;
    for (int i = 0; i < 64; ++i) coef[i] = coefs_in[i];
  } else {
    __global const uchar* samples = in + b * 64;
    for (int i = 0; i < 64; ++i) coef[i] = (long)samples[i] - 128;
    for (int r = 0; r < 8; ++r) islow_pass(coef + r * 8, 1, 1);
    for (int c = 0; c < 8; ++c) islow_pass(coef + c, 8, 0);
    for (int i = 0; i < 64; ++i) coef[i] = (short)coef[i];
  }
  __global short* dst = out + b * 64;
  if (mode == 1) {
    for (int i = 0; i < 64; ++i) dst[i] = (short)coef[i];
    return;
  }
  for (int i = 0; i < 64; ++i) {
    const int divisor = (int)table[i] * 8;
    const int c = (int)coef[i];
    const int magnitude = ((c < 0 ? -c : c) + divisor / 2) / divisor;
    dst[i] = (short)(c < 0 ? -magnitude : magnitude);
  }
}
