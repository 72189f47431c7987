// JPEG forward DCT and quantizer, chainable (seed 002): the DCT's output can stream straight into
// the quantizer, or either unit can be used alone.
//
// Arguments: arg0 = mode (1: DCT only, 2: quantizer only, 3: DCT then quantizer), arg1 = number of
// 8x8 blocks. Return value 0, or 1 (and no data) for an invalid mode.
//
// Stream layout (64-bit beats, little-endian):
//   quantization table (modes 2, 3; first): 16 beats, 4 uint16 quantval each, natural order
//   DCT input (modes 1, 3): 8 beats per block, beat r = row r, 8 unsigned 8-bit samples
//   quantizer input (mode 2): 16 beats per block, 4 int16 coefficients each, natural order
//   output (all modes): 16 beats per block, 4 int16 each, natural (row-major) order
//
// The DCT is libjpeg's accurate integer DCT ("islow", tandem_islow_1d): samples are centred
// (minus 128), rows are transformed one per cycle into a transpose buffer, then columns one per
// cycle into one of two output buffers, which are read out row-major while the next block is
// transformed. Quantization rounds as libjpeg does (tandem_quantizer). One block per 16 cycles in
// steady state, bounded by the output port.
module tandem_dct_quant_core (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic [31:0] mode_i,
  input  logic [31:0] blocks_i,
  output logic        done_o,
  output logic [63:0] ret_o,
  input  logic        in_valid_i,
  output logic        in_ready_o,
  input  logic [63:0] in_data_i,
  output logic        out_valid_o,
  input  logic        out_ready_i,
  output logic [63:0] out_data_o
);
  typedef enum logic [1:0] {Idle, Table, Data, Finish} phase_e;

  phase_e      phase_q;
  logic        error_q;
  logic        dct_en_q, q_en_q;
  logic [31:0] blocks_q;
  logic [31:0] in_blocks_q, out_blocks_q;
  logic [3:0]  in_beat_q, out_beat_q;
  logic [4:0]  tab_count_q;
  logic [3:0]  q_pos_q;

  logic [63:0] qtab_q [16];

  // transpose buffer (pass-1 rows) and double-buffered output (pass-2 columns), int16 each
  logic [1023:0] t_q;
  logic [3:0]    t_rows_q;    // rows written; 8 = full
  logic [2:0]    p2_col_q;
  logic [2047:0] o_q;
  logic [1:0]    o_full_q;
  logic          o_wsel_q, o_rsel_q;
  logic [3:0]    o_beat_q;

  // ---- handshakes ----
  logic in_need, in_fire, out_fire;
  logic dct_in_ready, p2_active;
  logic dct_out_valid, dct_out_ready, dct_out_fire;
  logic [63:0] dct_out_data;
  logic q_in_valid, q_in_ready, q_in_fire;
  logic [63:0] q_in_data;
  logic q_out_valid;
  logic [63:0] q_out_data;

  assign in_need      = phase_q == Data && in_blocks_q != blocks_q;
  assign dct_in_ready = t_rows_q != 4'd8;
  assign p2_active    = t_rows_q == 4'd8 && !o_full_q[o_wsel_q];

  always_comb begin
    in_ready_o = 1'b0;
    if (phase_q == Table) begin
      in_ready_o = tab_count_q != 5'd16;
    end else if (in_need) begin
      in_ready_o = dct_en_q ? dct_in_ready : q_in_ready;
    end
  end
  assign in_fire = in_valid_i && in_ready_o;

  assign dct_out_valid = o_full_q[o_rsel_q];
  // Constant-index muxes (not a variable part-select) keep synthesis small.
  always_comb begin
    dct_out_data = '0;
    for (int unsigned b = 0; b < 32; b++) begin
      if ({o_rsel_q, o_beat_q} == 5'(b)) dct_out_data = o_q[64*b +: 64];
    end
  end
  assign dct_out_ready = q_en_q ? q_in_ready : out_ready_i;
  assign dct_out_fire  = dct_out_valid && dct_out_ready;

  assign q_in_valid = q_en_q && (dct_en_q ? dct_out_valid : (in_need && in_valid_i));
  assign q_in_data  = dct_en_q ? dct_out_data : in_data_i;
  assign q_in_fire  = q_in_valid && q_in_ready;

  assign out_valid_o = q_en_q ? q_out_valid : dct_out_valid;
  assign out_data_o  = q_en_q ? q_out_data : dct_out_data;
  assign out_fire    = out_valid_o && out_ready_i;

  assign done_o = phase_q == Finish || (phase_q == Data && out_blocks_q == blocks_q);
  assign ret_o  = {63'd0, error_q};

  // ---- job control and counters ----
  logic bad_mode;
  assign bad_mode = mode_i == 32'd0 || mode_i > 32'd3;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      phase_q      <= Idle;
      error_q      <= 1'b0;
      dct_en_q     <= 1'b0;
      q_en_q       <= 1'b0;
      blocks_q     <= '0;
      in_blocks_q  <= '0;
      out_blocks_q <= '0;
      in_beat_q    <= '0;
      out_beat_q   <= '0;
      tab_count_q  <= '0;
      q_pos_q      <= '0;
    end else if (start_i) begin
      error_q      <= bad_mode;
      dct_en_q     <= mode_i[0];
      q_en_q       <= mode_i[1];
      blocks_q     <= blocks_i;
      in_blocks_q  <= '0;
      out_blocks_q <= '0;
      in_beat_q    <= '0;
      out_beat_q   <= '0;
      tab_count_q  <= '0;
      q_pos_q      <= '0;
      phase_q      <= bad_mode ? Finish : (mode_i[1] ? Table : Data);
    end else if (done_o) begin
      phase_q <= Idle;
    end else begin
      if (phase_q == Table) begin
        if (tab_count_q == 5'd16) phase_q <= Data;
        else if (in_fire) tab_count_q <= tab_count_q + 5'd1;
      end
      if (phase_q == Data && in_fire) begin
        in_beat_q <= in_beat_q + 4'd1;
        if (in_beat_q == (dct_en_q ? 4'd7 : 4'd15)) begin
          in_beat_q   <= '0;
          in_blocks_q <= in_blocks_q + 32'd1;
        end
      end
      if (out_fire) begin
        out_beat_q <= out_beat_q + 4'd1;
        if (out_beat_q == 4'd15) out_blocks_q <= out_blocks_q + 32'd1;
      end
      if (q_in_fire) q_pos_q <= q_pos_q + 4'd1;
    end
  end

  always_ff @(posedge clk_i) begin
    if (phase_q == Table && in_fire) qtab_q[tab_count_q[3:0]] <= in_data_i;
  end

  // ---- pass 1: one row per cycle into the transpose buffer ----
  logic [127:0] p1_in, p1_out;
  always_comb begin
    for (int unsigned i = 0; i < 8; i++) begin
      p1_in[16*i +: 16] = {8'd0, in_data_i[8*i +: 8]} - 16'd128;
    end
  end
  tandem_islow_1d #(.Pass(1)) u_pass1 (.x_i(p1_in), .y_o(p1_out));

  // ---- pass 2: one column per cycle into the output buffer being written ----
  logic [127:0] p2_in, p2_out;
  always_comb begin
    p2_in = '0;
    for (int unsigned c = 0; c < 8; c++) begin
      if (p2_col_q == 3'(c)) begin
        for (int unsigned r = 0; r < 8; r++) p2_in[16*r +: 16] = t_q[16*(8*r+c) +: 16];
      end
    end
  end
  tandem_islow_1d #(.Pass(2)) u_pass2 (.x_i(p2_in), .y_o(p2_out));

  logic dct_in_fire;
  assign dct_in_fire = phase_q == Data && dct_en_q && in_fire;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      t_rows_q <= '0;
      p2_col_q <= '0;
      o_full_q <= '0;
      o_wsel_q <= 1'b0;
      o_rsel_q <= 1'b0;
      o_beat_q <= '0;
    end else if (start_i) begin
      t_rows_q <= '0;
      p2_col_q <= '0;
      o_full_q <= '0;
      o_wsel_q <= 1'b0;
      o_rsel_q <= 1'b0;
      o_beat_q <= '0;
    end else begin
      if (dct_in_fire) t_rows_q <= t_rows_q + 4'd1;
      if (p2_active) begin
        p2_col_q <= p2_col_q + 3'd1;
        if (p2_col_q == 3'd7) begin
          t_rows_q           <= '0;
          o_full_q[o_wsel_q] <= 1'b1;
          o_wsel_q           <= !o_wsel_q;
        end
      end
      if (dct_out_fire) begin
        o_beat_q <= o_beat_q + 4'd1;
        if (o_beat_q == 4'd15) begin
          o_full_q[o_rsel_q] <= 1'b0;
          o_rsel_q           <= !o_rsel_q;
        end
      end
    end
  end

  always_ff @(posedge clk_i) begin
    for (int unsigned r = 0; r < 8; r++) begin
      if (dct_in_fire && t_rows_q[2:0] == 3'(r)) t_q[128*r +: 128] <= p1_out;
    end
    for (int unsigned b = 0; b < 2; b++) begin
      for (int unsigned c = 0; c < 8; c++) begin
        if (p2_active && o_wsel_q == 1'(b) && p2_col_q == 3'(c)) begin
          for (int unsigned v = 0; v < 8; v++) o_q[16*(64*b+8*v+c) +: 16] <= p2_out[16*v +: 16];
        end
      end
    end
  end

  // ---- quantizer ----
  tandem_quantizer #(.Lanes(4), .BitsPerStage(4)) u_quant (
    .clk_i, .rst_ni,
    .in_valid_i  (q_in_valid),
    .in_ready_o  (q_in_ready),
    .in_coef_i   (q_in_data),
    .in_qval_i   (qtab_q[q_pos_q]),
    .out_valid_o (q_out_valid),
    .out_ready_i (q_en_q && out_ready_i),
    .out_data_o  (q_out_data)
  );
endmodule
