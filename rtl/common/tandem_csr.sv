// Accelerator control/status registers in the layout of the thesis's Table 5.2 (an AXI-lite
// peripheral as Vivado HLS generates it), on a simple register bus.
//
//   0x00 CTRL  bit0 start (write 1 to start; reads 1 while the job runs)
//              bit1 done  (set when the job finishes; cleared when CTRL is read)
//              bit2 idle  (no job running)
//   0x04 GIE   bit0 global interrupt enable
//   0x08 IER   bit0 interrupt enable for job completion
//   0x0C ISR   bit0 job completed (set if IER[0]; write 1 to clear)
//   0x10 RET   return value, low word;  0x14 high word
//   0x18 + 4N  argument N (N < NumArgs); writes are ignored while a job runs
//
// Bus: one access per cycle; csr_rdata_o holds the word read in the previous cycle.
// Unaligned or unmapped addresses read as zero and ignore writes.
module tandem_csr #(
  parameter int unsigned NumArgs = 4
) (
  input  logic                  clk_i,
  input  logic                  rst_ni,
  input  logic [7:0]            csr_addr_i,
  input  logic                  csr_we_i,
  input  logic [31:0]           csr_wdata_i,
  input  logic                  csr_re_i,
  output logic [31:0]           csr_rdata_o,
  output logic                  irq_o,
  // core side
  output logic                  start_o,  // one-cycle pulse
  output logic [NumArgs*32-1:0] args_o,
  input  logic                  done_i,   // one-cycle pulse, ret_i valid with it
  input  logic [63:0]           ret_i
);
  localparam int unsigned WordIdxW = 6;

  logic [WordIdxW-1:0] word_idx;
  logic                aligned;
  assign word_idx = csr_addr_i[7:2];
  assign aligned  = csr_addr_i[1:0] == 2'b00;

  logic                  running_q;
  logic                  done_q;
  logic                  gie_q;
  logic                  ier_q;
  logic                  isr_q;
  logic [63:0]           ret_q;
  logic [NumArgs*32-1:0] args_q;
  logic [31:0]           rdata_q;

  logic wr_ctrl, wr_gie, wr_ier, wr_isr, rd_ctrl;
  assign wr_ctrl = csr_we_i && aligned && word_idx == 6'd0;
  assign wr_gie  = csr_we_i && aligned && word_idx == 6'd1;
  assign wr_ier  = csr_we_i && aligned && word_idx == 6'd2;
  assign wr_isr  = csr_we_i && aligned && word_idx == 6'd3;
  assign rd_ctrl = csr_re_i && aligned && word_idx == 6'd0;

  assign start_o     = wr_ctrl && csr_wdata_i[0] && !running_q;
  assign args_o      = args_q;
  assign csr_rdata_o = rdata_q;
  assign irq_o       = gie_q && ier_q && isr_q;

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      running_q <= 1'b0;
      done_q    <= 1'b0;
      gie_q     <= 1'b0;
      ier_q     <= 1'b0;
      isr_q     <= 1'b0;
      ret_q     <= '0;
      args_q    <= '0;
    end else begin
      if (start_o) begin
        running_q <= 1'b1;
        done_q    <= 1'b0;
      end else if (done_i) begin
        running_q <= 1'b0;
        done_q    <= 1'b1;
        ret_q     <= ret_i;
      end else if (rd_ctrl) begin
        done_q <= 1'b0;  // clear-on-read, as HLS's ap_done
      end
      if (wr_gie) gie_q <= csr_wdata_i[0];
      if (wr_ier) ier_q <= csr_wdata_i[0];
      if (done_i && ier_q) begin
        isr_q <= 1'b1;
      end else if (wr_isr && csr_wdata_i[0]) begin
        isr_q <= 1'b0;
      end
      for (int unsigned n = 0; n < NumArgs; n++) begin
        if (csr_we_i && aligned && !running_q && {26'd0, word_idx} == 32'd6 + n) begin
          args_q[n*32 +: 32] <= csr_wdata_i;
        end
      end
    end
  end

  // Registered read port.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      rdata_q <= '0;
    end else if (csr_re_i) begin
      rdata_q <= '0;
      if (aligned) begin
        case (word_idx)
          6'd0: rdata_q <= {29'd0, !running_q, done_q, running_q};
          6'd1: rdata_q <= {31'd0, gie_q};
          6'd2: rdata_q <= {31'd0, ier_q};
          6'd3: rdata_q <= {31'd0, isr_q};
          6'd4: rdata_q <= ret_q[31:0];
          6'd5: rdata_q <= ret_q[63:32];
          default: begin
            for (int unsigned n = 0; n < NumArgs; n++) begin
              if ({26'd0, word_idx} == 32'd6 + n) rdata_q <= args_q[n*32 +: 32];
            end
          end
        endcase
      end
    end
  end
endmodule
