// One 1-D pass of JPEG's accurate integer forward DCT ("islow": the Loeffler-Ligtenberg-Moschytz
// factorisation with 12 multiplications, constants scaled by 2^ConstBits, ConstBits = 13,
// Pass1Bits = 2), combinational.
//
// Pass 1 (rows) scales its outputs up by 2^Pass1Bits; pass 2 (columns) removes that scale again
// together with the constants' scale, so the 2-D result is the DCT scaled by 8 overall, exactly as
// libjpeg's jpeg_fdct_islow computes it. Inputs and outputs are int16. Intermediates use IntW bits:
// pass 1 sees |x| <= 128, so every intermediate stays below 2^26; pass 2 sees |x| < 2^13 (pass 1
// outputs), so they stay below 2^32 (bounded term by term), and nothing wraps.
module tandem_islow_1d #(
  parameter int unsigned Pass = 1
) (
  input  logic [127:0] x_i,  // x[i] in bits [16i+15:16i], signed
  output logic [127:0] y_o   // y[k] in bits [16k+15:16k], signed; y[k] is frequency k
);
  localparam int unsigned ConstBits = 13;
  localparam int unsigned Pass1Bits = 2;
  localparam int unsigned OddShift  = Pass == 1 ? ConstBits - Pass1Bits : ConstBits + Pass1Bits;
  localparam int unsigned DcShift   = Pass == 1 ? 0 : Pass1Bits;
  localparam int unsigned IntW      = Pass == 1 ? 28 : 34;

  // round(c * 2^13) of the factorisation's constants (c_k = cos(k*pi/16)):
  localparam logic signed [IntW-1:0] Fix0298631336 = IntW'(2446);   // sqrt2*(-c1+c3+c5-c7)
  localparam logic signed [IntW-1:0] Fix0390180644 = IntW'(3196);   // sqrt2*( c3-c5)
  localparam logic signed [IntW-1:0] Fix0541196100 = IntW'(4433);   // sqrt2*c6
  localparam logic signed [IntW-1:0] Fix0765366865 = IntW'(6270);   // sqrt2*(c2-c6)
  localparam logic signed [IntW-1:0] Fix0899976223 = IntW'(7373);   // sqrt2*( c3-c7)
  localparam logic signed [IntW-1:0] Fix1175875602 = IntW'(9633);   // sqrt2*c3
  localparam logic signed [IntW-1:0] Fix1501321110 = IntW'(12299);  // sqrt2*( c1+c3-c5-c7)
  localparam logic signed [IntW-1:0] Fix1847759065 = IntW'(15137);  // sqrt2*(c2+c6)
  localparam logic signed [IntW-1:0] Fix1961570560 = IntW'(16069);  // sqrt2*( c3+c5)
  localparam logic signed [IntW-1:0] Fix2053119869 = IntW'(16819);  // sqrt2*( c1+c3-c5+c7)
  localparam logic signed [IntW-1:0] Fix2562915447 = IntW'(20995);  // sqrt2*( c1+c3)
  localparam logic signed [IntW-1:0] Fix3072711026 = IntW'(25172);  // sqrt2*( c1+c3+c5-c7)

  function automatic logic signed [IntW-1:0] in_at(input logic [127:0] v, input int unsigned i);
    in_at = IntW'($signed(v[16*i +: 16]));
  endfunction

  // Round to nearest (ties up) and shift right arithmetically by n.
  function automatic logic [15:0] descale(input logic signed [IntW-1:0] v, input int unsigned n);
    if (n == 0) descale = v[15:0];
    else descale = 16'((v + IntW'(1 <<< (n - 1))) >>> n);
  endfunction

  always_comb begin
    logic signed [IntW-1:0] tmp0, tmp1, tmp2, tmp3, tmp4, tmp5, tmp6, tmp7;
    logic signed [IntW-1:0] tmp10, tmp11, tmp12, tmp13;
    logic signed [IntW-1:0] z1, z2, z3, z4, z5;
    logic signed [IntW-1:0] dc_sum, dc_diff;

    // Even/odd butterflies.
    tmp0 = in_at(x_i, 0) + in_at(x_i, 7);
    tmp7 = in_at(x_i, 0) - in_at(x_i, 7);
    tmp1 = in_at(x_i, 1) + in_at(x_i, 6);
    tmp6 = in_at(x_i, 1) - in_at(x_i, 6);
    tmp2 = in_at(x_i, 2) + in_at(x_i, 5);
    tmp5 = in_at(x_i, 2) - in_at(x_i, 5);
    tmp3 = in_at(x_i, 3) + in_at(x_i, 4);
    tmp4 = in_at(x_i, 3) - in_at(x_i, 4);

    // Even part.
    tmp10 = tmp0 + tmp3;
    tmp13 = tmp0 - tmp3;
    tmp11 = tmp1 + tmp2;
    tmp12 = tmp1 - tmp2;

    dc_sum  = tmp10 + tmp11;
    dc_diff = tmp10 - tmp11;
    if (Pass == 1) begin
      y_o[16*0 +: 16] = 16'(dc_sum <<< Pass1Bits);
      y_o[16*4 +: 16] = 16'(dc_diff <<< Pass1Bits);
    end else begin
      y_o[16*0 +: 16] = descale(dc_sum, DcShift);
      y_o[16*4 +: 16] = descale(dc_diff, DcShift);
    end

    z1 = (tmp12 + tmp13) * Fix0541196100;
    y_o[16*2 +: 16] = descale(z1 + tmp13 * Fix0765366865, OddShift);
    y_o[16*6 +: 16] = descale(z1 - tmp12 * Fix1847759065, OddShift);

    // Odd part.
    z1 = tmp4 + tmp7;
    z2 = tmp5 + tmp6;
    z3 = tmp4 + tmp6;
    z4 = tmp5 + tmp7;
    z5 = (z3 + z4) * Fix1175875602;

    tmp4 = tmp4 * Fix0298631336;
    tmp5 = tmp5 * Fix2053119869;
    tmp6 = tmp6 * Fix3072711026;
    tmp7 = tmp7 * Fix1501321110;
    z1 = -(z1 * Fix0899976223);
    z2 = -(z2 * Fix2562915447);
    z3 = -(z3 * Fix1961570560) + z5;
    z4 = -(z4 * Fix0390180644) + z5;

    y_o[16*7 +: 16] = descale(tmp4 + z1 + z3, OddShift);
    y_o[16*5 +: 16] = descale(tmp5 + z2 + z4, OddShift);
    y_o[16*3 +: 16] = descale(tmp6 + z2 + z3, OddShift);
    y_o[16*1 +: 16] = descale(tmp7 + z1 + z4, OddShift);
  end
endmodule
