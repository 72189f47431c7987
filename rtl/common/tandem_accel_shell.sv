// The part every accelerator shares: the CSR block and a skid buffer on each stream port.
//
// The core sees a start pulse with its arguments, a registered input stream and an output stream
// into a skid buffer. When the core reports done, the shell holds the completion back until the
// output skid buffer has drained, so that CTRL.done (and the interrupt) mean "all results have
// left the accelerator".
module tandem_accel_shell #(
  parameter int unsigned NumArgs  = 4,
  parameter int unsigned InWidth  = 64,
  parameter int unsigned OutWidth = 64
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  // register bus
  input  logic [7:0]            csr_addr_i,
  input  logic                  csr_we_i,
  input  logic [31:0]           csr_wdata_i,
  input  logic                  csr_re_i,
  output logic [31:0]           csr_rdata_o,
  output logic                  irq_o,
  // external streams
  input  logic                  in_valid_i,
  output logic                  in_ready_o,
  input  logic [InWidth-1:0]    in_data_i,
  output logic                  out_valid_o,
  input  logic                  out_ready_i,
  output logic [OutWidth-1:0]   out_data_o,
  // core side
  output logic                  core_start_o,
  output logic [NumArgs*32-1:0] core_args_o,
  input  logic                  core_done_i,
  input  logic [63:0]           core_ret_i,
  output logic                  core_in_valid_o,
  input  logic                  core_in_ready_i,
  output logic [InWidth-1:0]    core_in_data_o,
  input  logic                  core_out_valid_i,
  output logic                  core_out_ready_o,
  input  logic [OutWidth-1:0]   core_out_data_i
);
  logic        done_pending_q;
  logic [63:0] ret_pending_q;
  logic        out_empty;
  logic        csr_done;
  logic        in_empty_unused;

  assign csr_done = done_pending_q && out_empty;

  tandem_csr #(.NumArgs(NumArgs)) u_csr (
    .clk_i, .rst_ni,
    .csr_addr_i, .csr_we_i, .csr_wdata_i, .csr_re_i, .csr_rdata_o, .irq_o,
    .start_o (core_start_o),
    .args_o  (core_args_o),
    .done_i  (csr_done),
    .ret_i   (ret_pending_q)
  );

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      done_pending_q <= 1'b0;
      ret_pending_q  <= '0;
    end else if (core_done_i) begin
      done_pending_q <= 1'b1;
      ret_pending_q  <= core_ret_i;
    end else if (csr_done) begin
      done_pending_q <= 1'b0;
    end
  end

  tandem_skid_buffer #(.Width(InWidth)) u_in_skid (
    .clk_i, .rst_ni,
    .clear_i     (core_start_o),
    .in_valid_i  (in_valid_i),
    .in_ready_o  (in_ready_o),
    .in_data_i   (in_data_i),
    .out_valid_o (core_in_valid_o),
    .out_ready_i (core_in_ready_i),
    .out_data_o  (core_in_data_o),
    .empty_o     (in_empty_unused)
  );

  tandem_skid_buffer #(.Width(OutWidth)) u_out_skid (
    .clk_i, .rst_ni,
    .clear_i     (1'b0),
    .in_valid_i  (core_out_valid_i),
    .in_ready_o  (core_out_ready_o),
    .in_data_i   (core_out_data_i),
    .out_valid_o (out_valid_o),
    .out_ready_i (out_ready_i),
    .out_data_o  (out_data_o),
    .empty_o     (out_empty)
  );
endmodule
