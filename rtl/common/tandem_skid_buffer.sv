// Two-entry skid buffer for a valid/ready stream.
//
// Both directions leave the block from registers: out_valid_o/out_data_o come from the output
// register and in_ready_o from the (empty) state of the skid register, so chaining blocks never
// builds a combinational path from one end of a pipeline to the other. Full throughput: one beat
// per cycle when the consumer is ready. clear_i drops whatever is buffered (used at job start).
module tandem_skid_buffer #(
  parameter int unsigned Width = 64
) (
  input  logic             clk_i,
  input  logic             rst_ni,
  input  logic             clear_i,
  input  logic             in_valid_i,
  output logic             in_ready_o,
  input  logic [Width-1:0] in_data_i,
  output logic             out_valid_o,
  input  logic             out_ready_i,
  output logic [Width-1:0] out_data_o,
  output logic             empty_o
);
  logic             out_valid_q;
  logic [Width-1:0] out_data_q;
  logic             skid_valid_q;
  logic [Width-1:0] skid_data_q;

  // The output register may load when it is empty or is being drained in this cycle.
  logic out_load;
  assign out_load = !out_valid_q || out_ready_i;

  assign in_ready_o  = !skid_valid_q;
  assign out_valid_o = out_valid_q;
  assign out_data_o  = out_data_q;
  assign empty_o     = !out_valid_q && !skid_valid_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q  <= 1'b0;
      skid_valid_q <= 1'b0;
    end else if (clear_i) begin
      out_valid_q  <= 1'b0;
      skid_valid_q <= 1'b0;
    end else if (out_load) begin
      // A parked beat goes first; otherwise the incoming beat (if any) goes straight through.
      out_valid_q  <= skid_valid_q || in_valid_i;
      skid_valid_q <= 1'b0;
    end else if (in_valid_i && !skid_valid_q) begin
      skid_valid_q <= 1'b1;  // output stalled: park the beat
    end
  end

  // Data registers need no reset: their valid bits qualify them.
  always_ff @(posedge clk_i) begin
    if (out_load) begin
      out_data_q <= skid_valid_q ? skid_data_q : in_data_i;
    end
    if (!out_load && !skid_valid_q) begin
      skid_data_q <= in_data_i;
    end
  end
endmodule
