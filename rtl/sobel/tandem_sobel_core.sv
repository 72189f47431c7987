// Sobel edge detection core: 3x3 Sobel on 8-bit pixels, Lanes operators in parallel.
//
// Stream layout: one beat carries Lanes pixels (pixel i of the beat in bits [8i+7:8i]); every image
// row starts on a beat boundary, so a row takes ceil(width/Lanes) beats and the unused pixels of a
// row's last beat are don't-care on input and zero on output. The output has the same layout.
//
// Result: out(r,c) = min(255, |Gx| + |Gy|) with
//   Gx = (p(r-1,c+1) + 2p(r,c+1) + p(r+1,c+1)) - (p(r-1,c-1) + 2p(r,c-1) + p(r+1,c-1))
//   Gy = (p(r+1,c-1) + 2p(r+1,c) + p(r+1,c+1)) - (p(r-1,c-1) + 2p(r-1,c) + p(r-1,c+1))
// and out(r,c) = 0 on the border (r == 0, r == height-1, c == 0 or c == width-1).
//
// Two line buffers hold the previous two rows. Input row k is written into buffer k&1 while both
// buffers are read at the same address (read-first), so rows are renamed instead of copied (the
// "virtual row index" of seed 001). Output row k-1 leaves while input row k arrives; one extra
// step per row (the flush step) emits the row's last beat, and one virtual row at the end emits
// the last output row. Cycles ~ (height + 1) * (ceil(width/Lanes) + 1).
//
// Arguments: arg0 = width (1..MaxWidth), arg1 = height (< 2^16). Width or height 0: no data,
// return 0. Width above MaxWidth or height above 65535: no data, return 1.
module tandem_sobel_core #(
  parameter int unsigned Lanes    = 16,
  parameter int unsigned MaxWidth = 1920
) (
  input  logic               clk_i,
  input  logic               rst_ni,
  input  logic               start_i,
  input  logic [31:0]        width_i,
  input  logic [31:0]        height_i,
  output logic               done_o,
  output logic [63:0]        ret_o,
  input  logic               in_valid_i,
  output logic               in_ready_o,
  input  logic [8*Lanes-1:0] in_data_i,
  output logic               out_valid_o,
  input  logic               out_ready_i,
  output logic [8*Lanes-1:0] out_data_o
);
  localparam int unsigned BeatW    = 8 * Lanes;
  localparam int unsigned MaxBeats = (MaxWidth + Lanes - 1) / Lanes;
  localparam int unsigned AddrW    = MaxBeats > 1 ? $clog2(MaxBeats) : 1;

  // ---- job state ----
  logic        busy_q;
  logic        issue_done_q;  // every step of every row has been issued
  logic        error_q;
  logic [15:0] width_q, height_q, wlast_q;
  logic [15:0] row_q;         // input row being issued; row == height is the virtual row
  logic [15:0] col_q;         // first column of the beat being issued
  logic [AddrW-1:0] beat_q;   // beat index within the row (line buffer address)

  // ---- stage 1: line buffer read data and the registered input beat ----
  logic             s1_valid_q;
  logic             s1_flush_q;
  logic             s1_parity_q;
  logic             s1_out_en_q;
  logic             s1_border_row_q;
  logic [15:0]      s1_out_col_q;
  logic [BeatW-1:0] s1_bot_q;
  logic [BeatW-1:0] lb0_rdata_q, lb1_rdata_q;

  // ---- stage 2: window and output register ----
  logic [BeatW-1:0] win_top_q, win_mid_q, win_bot_q;  // beat j-1
  logic [7:0]       prev_top_q, prev_mid_q, prev_bot_q;  // last pixel of beat j-2
  logic             out_valid_q;
  logic [BeatW-1:0] out_data_q;

  (* ram_style = "block" *) logic [BeatW-1:0] lb0_q [MaxBeats];
  (* ram_style = "block" *) logic [BeatW-1:0] lb1_q [MaxBeats];

  logic adv, flush_step, need_input, issue;
  assign adv        = !out_valid_q || out_ready_i;
  assign flush_step = col_q >= width_q;
  assign need_input = row_q < height_q && !flush_step;
  assign issue      = busy_q && !issue_done_q && adv && (!need_input || in_valid_i);
  assign in_ready_o = busy_q && !issue_done_q && adv && need_input;

  assign done_o      = busy_q && issue_done_q && !s1_valid_q && !out_valid_q;
  assign ret_o       = {63'd0, error_q};
  assign out_valid_o = out_valid_q;
  assign out_data_o  = out_data_q;

  // ---- control ----
  logic bad_args, empty_job;
  assign bad_args  = width_i > MaxWidth || height_i > 32'hffff;
  assign empty_job = width_i == 32'd0 || height_i == 32'd0;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q       <= 1'b0;
      issue_done_q <= 1'b0;
      error_q      <= 1'b0;
      width_q      <= '0;
      height_q     <= '0;
      wlast_q      <= '0;
      row_q        <= '0;
      col_q        <= '0;
      beat_q       <= '0;
    end else if (start_i) begin
      busy_q       <= 1'b1;
      issue_done_q <= bad_args || empty_job;
      error_q      <= bad_args;
      width_q      <= width_i[15:0];
      height_q     <= height_i[15:0];
      wlast_q      <= width_i[15:0] - 16'd1;
      row_q        <= '0;
      col_q        <= '0;
      beat_q       <= '0;
    end else if (done_o) begin
      busy_q <= 1'b0;
    end else if (issue) begin
      if (flush_step) begin
        col_q  <= '0;
        beat_q <= '0;
        row_q  <= row_q + 16'd1;
        if (row_q == height_q) issue_done_q <= 1'b1;
      end else begin
        col_q  <= col_q + Lanes[15:0];
        beat_q <= beat_q + 1'b1;
      end
    end
  end

  // ---- line buffers: read-first, written with the incoming row ----
  always_ff @(posedge clk_i) begin
    if (issue) begin
      lb0_rdata_q <= lb0_q[beat_q];
      if (need_input && !row_q[0]) lb0_q[beat_q] <= in_data_i;
    end
  end
  always_ff @(posedge clk_i) begin
    if (issue) begin
      lb1_rdata_q <= lb1_q[beat_q];
      if (need_input && row_q[0]) lb1_q[beat_q] <= in_data_i;
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_valid_q <= 1'b0;
    end else if (adv) begin
      s1_valid_q <= issue;
    end
  end

  always_ff @(posedge clk_i) begin
    if (issue) begin
      s1_flush_q      <= flush_step;
      s1_parity_q     <= row_q[0];
      s1_out_en_q     <= row_q != 16'd0 && beat_q != '0;
      s1_border_row_q <= row_q == 16'd1 || row_q == height_q;
      s1_out_col_q    <= col_q - Lanes[15:0];
      s1_bot_q        <= in_data_i;
    end
  end

  // ---- stage 2: shift the window, compute one output beat ----
  logic [BeatW-1:0] new_top, new_mid;
  assign new_top = s1_parity_q ? lb1_rdata_q : lb0_rdata_q;  // row k-2 (read-first old data)
  assign new_mid = s1_parity_q ? lb0_rdata_q : lb1_rdata_q;  // row k-1

  function automatic logic [7:0] sobel_pixel(
      input logic [7:0] tl, input logic [7:0] tc, input logic [7:0] tr,
      input logic [7:0] ml, input logic [7:0] mr,
      input logic [7:0] bl, input logic [7:0] bc, input logic [7:0] br);
    logic [11:0] right, left, bottom, top;
    logic [11:0] gx, gy, ax, ay, mag;
    right  = {4'd0, tr} + {3'd0, mr, 1'b0} + {4'd0, br};
    left   = {4'd0, tl} + {3'd0, ml, 1'b0} + {4'd0, bl};
    bottom = {4'd0, bl} + {3'd0, bc, 1'b0} + {4'd0, br};
    top    = {4'd0, tl} + {3'd0, tc, 1'b0} + {4'd0, tr};
    gx  = right - left;
    gy  = bottom - top;
    ax  = gx[11] ? -gx : gx;
    ay  = gy[11] ? -gy : gy;
    mag = ax + ay;
    sobel_pixel = mag > 12'd255 ? 8'd255 : mag[7:0];
  endfunction

  logic [BeatW-1:0] result;
  always_comb begin
    logic [7:0]  tl, tc, tr, ml, mr, bl, bc, br;
    logic [15:0] col;
    result = '0;
    for (int unsigned i = 0; i < Lanes; i++) begin
      tc = win_top_q[8*i +: 8];
      bc = win_bot_q[8*i +: 8];
      if (i == 0) begin
        tl = prev_top_q;  ml = prev_mid_q;  bl = prev_bot_q;
      end else begin
        tl = win_top_q[8*(i-1) +: 8];  ml = win_mid_q[8*(i-1) +: 8];  bl = win_bot_q[8*(i-1) +: 8];
      end
      if (i == Lanes - 1) begin
        tr = new_top[7:0];  mr = new_mid[7:0];  br = s1_bot_q[7:0];
      end else begin
        tr = win_top_q[8*(i+1) +: 8];  mr = win_mid_q[8*(i+1) +: 8];  br = win_bot_q[8*(i+1) +: 8];
      end
      col = s1_out_col_q + 16'(i);
      if (!s1_border_row_q && col != 16'd0 && col < wlast_q) begin
        result[8*i +: 8] = sobel_pixel(tl, tc, tr, ml, mr, bl, bc, br);
      end
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else if (adv) begin
      out_valid_q <= s1_valid_q && s1_out_en_q;
    end
  end

  always_ff @(posedge clk_i) begin
    if (adv && s1_valid_q) begin
      if (s1_out_en_q) out_data_q <= result;
      if (!s1_flush_q) begin
        win_top_q  <= new_top;
        win_mid_q  <= new_mid;
        win_bot_q  <= s1_bot_q;
        prev_top_q <= win_top_q[BeatW-8 +: 8];
        prev_mid_q <= win_mid_q[BeatW-8 +: 8];
        prev_bot_q <= win_bot_q[BeatW-8 +: 8];
      end
    end
  end
endmodule
