// Priority queue accelerator (thesis Ch3 scheduler queue): common shell around the queue core,
// which takes push/pop/peek commands on the input stream and answers each on the output stream
// (see tandem_pq_core.sv). Arguments: arg0 = number of commands, arg1 bit 0 = clear first.
module tandem_priority_queue #(
  parameter int unsigned Capacity = 256
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic [7:0]  csr_addr_i,
  input  logic        csr_we_i,
  input  logic [31:0] csr_wdata_i,
  input  logic        csr_re_i,
  output logic [31:0] csr_rdata_o,
  output logic        irq_o,
  input  logic        in_valid_i,
  output logic        in_ready_o,
  input  logic [63:0] in_data_i,
  output logic        out_valid_o,
  input  logic        out_ready_i,
  output logic [63:0] out_data_o
);
  localparam int unsigned NumArgs = 2;

  logic                  start;
  logic [NumArgs*32-1:0] args;
  logic                  done;
  logic [63:0]           ret;
  logic                  c_in_valid, c_in_ready, c_out_valid, c_out_ready;
  logic [63:0]           c_in_data, c_out_data;

  tandem_accel_shell #(.NumArgs(NumArgs), .InWidth(64), .OutWidth(64)) u_shell (
    .clk_i, .rst_ni,
    .csr_addr_i, .csr_we_i, .csr_wdata_i, .csr_re_i, .csr_rdata_o, .irq_o,
    .in_valid_i, .in_ready_o, .in_data_i,
    .out_valid_o, .out_ready_i, .out_data_o,
    .core_start_o     (start),
    .core_args_o      (args),
    .core_done_i      (done),
    .core_ret_i       (ret),
    .core_in_valid_o  (c_in_valid),
    .core_in_ready_i  (c_in_ready),
    .core_in_data_o   (c_in_data),
    .core_out_valid_i (c_out_valid),
    .core_out_ready_o (c_out_ready),
    .core_out_data_i  (c_out_data)
  );

  logic unused_flags;
  assign unused_flags = ^args[63:33];

  tandem_pq_core #(.Capacity(Capacity)) u_core (
    .clk_i, .rst_ni,
    .start_i     (start),
    .commands_i  (args[31:0]),
    .clear_i     (args[32]),
    .done_o      (done),
    .ret_o       (ret),
    .in_valid_i  (c_in_valid),
    .in_ready_o  (c_in_ready),
    .in_data_i   (c_in_data),
    .out_valid_o (c_out_valid),
    .out_ready_i (c_out_ready),
    .out_data_o  (c_out_data)
  );
endmodule
