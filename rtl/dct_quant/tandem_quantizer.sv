// JPEG quantizer, Lanes coefficients per beat, pipelined.
//
// For a coefficient c and quantization value q (1..32767; the divisor is d = 8q because the DCT
// output is scaled by 8), the result is, as libjpeg rounds it:
//     c >= 0:  floor((c + d/2) / d)        c < 0:  -floor((-c + d/2) / d)
// Since d = 8q, floor(x / 8q) == floor(floor(x / 8) / q): the hardware drops three bits and then
// divides by q with a restoring divider of 16 quotient bits, BitsPerStage bits per pipeline stage.
// The whole pipeline advances together (one stall signal); one beat per cycle when not stalled.
module tandem_quantizer #(
  parameter int unsigned Lanes        = 4,
  parameter int unsigned BitsPerStage = 4
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               in_valid_i,
  output logic               in_ready_o,
  input  logic [16*Lanes-1:0] in_coef_i,   // int16 coefficients
  input  logic [16*Lanes-1:0] in_qval_i,   // uint16 quantization values
  output logic               out_valid_o,
  input  logic               out_ready_i,
  output logic [16*Lanes-1:0] out_data_o   // int16 quantized coefficients
);
  localparam int unsigned Stages = 16 / BitsPerStage;
  localparam int unsigned LaneW  = 16 * Lanes;

  // Stage s registers, s = 0 (prepared operands) .. Stages (quotient complete).
  logic [Stages:0]              valid_q;
  logic [(Stages+1)*Lanes-1:0]  neg_q;
  logic [(Stages+1)*LaneW-1:0]  rem_q, dvd_q, quo_q, div_q;

  logic adv;
  assign adv         = !valid_q[Stages] || out_ready_i;
  assign in_ready_o  = adv;
  assign out_valid_o = valid_q[Stages];

  // ---- stage 0: magnitude, rounding bias, drop the divisor's factor 8 ----
  logic [Lanes-1:0] neg0;
  logic [LaneW-1:0] dvd0, div0;
  always_comb begin
    logic [15:0] c, mag;
    logic [17:0] biased;
    for (int unsigned l = 0; l < Lanes; l++) begin
      c       = in_coef_i[16*l +: 16];
      neg0[l] = c[15];
      mag     = c[15] ? 16'(-c) : c;  // -(-32768) is 32768, fine as unsigned
      biased  = {2'b00, mag} + {in_qval_i[16*l +: 16], 2'b00};
      dvd0[16*l +: 16] = 16'(biased >> 3);
      div0[16*l +: 16] = in_qval_i[16*l +: 16];
    end
  end

  // ---- division stages ----
  logic [Stages*LaneW-1:0] rem_n, dvd_n, quo_n;
  always_comb begin
    logic [15:0] rem, dvd, quo, div;
    logic [16:0] trial;
    for (int unsigned s = 0; s < Stages; s++) begin
      for (int unsigned l = 0; l < Lanes; l++) begin
        rem = rem_q[(s*Lanes+l)*16 +: 16];
        dvd = dvd_q[(s*Lanes+l)*16 +: 16];
        quo = quo_q[(s*Lanes+l)*16 +: 16];
        div = div_q[(s*Lanes+l)*16 +: 16];
        for (int unsigned b = 0; b < BitsPerStage; b++) begin
          trial = {rem, dvd[15]};
          dvd   = {dvd[14:0], 1'b0};
          if (trial >= {1'b0, div}) begin
            rem = 16'(trial - {1'b0, div});
            quo = {quo[14:0], 1'b1};
          end else begin
            rem = trial[15:0];
            quo = {quo[14:0], 1'b0};
          end
        end
        rem_n[(s*Lanes+l)*16 +: 16] = rem;
        dvd_n[(s*Lanes+l)*16 +: 16] = dvd;
        quo_n[(s*Lanes+l)*16 +: 16] = quo;
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      valid_q <= '0;
    end else if (adv) begin
      valid_q <= {valid_q[Stages-1:0], in_valid_i};
    end
  end

  always_ff @(posedge clk_i) begin
    if (adv) begin
      neg_q[0 +: Lanes] <= neg0;
      rem_q[0 +: LaneW] <= '0;
      dvd_q[0 +: LaneW] <= dvd0;
      quo_q[0 +: LaneW] <= '0;
      div_q[0 +: LaneW] <= div0;
      neg_q[Lanes +: Stages*Lanes] <= neg_q[0 +: Stages*Lanes];
      div_q[LaneW +: Stages*LaneW] <= div_q[0 +: Stages*LaneW];
      rem_q[LaneW +: Stages*LaneW] <= rem_n;
      dvd_q[LaneW +: Stages*LaneW] <= dvd_n;
      quo_q[LaneW +: Stages*LaneW] <= quo_n;
    end
  end

  // ---- sign ----
  always_comb begin
    logic [15:0] q;
    for (int unsigned l = 0; l < Lanes; l++) begin
      q = quo_q[(Stages*Lanes+l)*16 +: 16];
      out_data_o[16*l +: 16] = neg_q[Stages*Lanes+l] ? 16'(-q) : q;
    end
  end
endmodule
