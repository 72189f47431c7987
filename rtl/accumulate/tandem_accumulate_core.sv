// Accumulator core (thesis Ch4): sums a stream of int32 values into an int64, two values per
// cycle on a 64-bit datapath. Value 2i sits in bits [31:0] of beat i, value 2i+1 in [63:32]; for
// an odd count the upper half of the last beat is ignored.
//
// Arguments: arg0 = number of int32 values. Return value: the int64 sum (it cannot overflow for
// fewer than 2^32 values).
module tandem_accumulate_core (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic [31:0] count_i,
  output logic        done_o,
  output logic [63:0] ret_o,
  input  logic        in_valid_i,
  output logic        in_ready_o,
  input  logic [63:0] in_data_i
);
  logic        busy_q;
  logic [31:0] remaining_q;
  logic [63:0] sum_q;

  logic        take;
  logic        both;
  logic [63:0] lo_ext, hi_ext;

  assign in_ready_o = busy_q && remaining_q != 32'd0;
  assign take       = in_valid_i && in_ready_o;
  assign both       = remaining_q >= 32'd2;
  assign lo_ext     = {{32{in_data_i[31]}}, in_data_i[31:0]};
  assign hi_ext     = both ? {{32{in_data_i[63]}}, in_data_i[63:32]} : 64'd0;

  assign done_o = busy_q && remaining_q == 32'd0;
  assign ret_o  = sum_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q      <= 1'b0;
      remaining_q <= '0;
      sum_q       <= '0;
    end else if (start_i) begin
      busy_q      <= 1'b1;
      remaining_q <= count_i;
      sum_q       <= '0;
    end else if (done_o) begin
      busy_q <= 1'b0;
    end else if (take) begin
      sum_q       <= sum_q + lo_ext + hi_ext;
      remaining_q <= remaining_q - (both ? 32'd2 : 32'd1);
    end
  end
endmodule
