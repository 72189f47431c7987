// list_walk accelerator: the common CSR block (thesis Table 5.2) around the pointer-chasing core,
// with a memory read port and a page-walk port instead of data streams (its data is found only by
// following pointers). See tandem_list_walk_core.sv for the walk, the translation and the ports.
//
// Arguments: arg0/arg1 = head virtual address (low/high word), arg2/arg3 = max nodes (low/high).
// RET = the sum of the visited nodes' values modulo 2^64. Registers beyond Table 5.2 (read-only):
//   0x40 STATUS      bit0 translation fault, bit1 misaligned node address (0: the walk completed)
//   0x44 TLB_HITS    lookups that hit since reset
//   0x48 TLB_MISSES  lookups that missed (each one a page walk) since reset
//   0x4C NODES       nodes visited by the last job
// tlb_flush_i (between jobs only) empties the TLB: the host flushes it when the next job belongs to
// another address space or memory was unmapped.
module tandem_list_walk #(
  parameter int unsigned TlbEntries = 64,  // seed 004's HA-TLB: 64 entries, direct mapped
  parameter int unsigned TlbWays    = 1,
  parameter int unsigned PpnW       = 32
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic [7:0]      csr_addr_i,
  input  logic            csr_we_i,
  input  logic [31:0]     csr_wdata_i,
  input  logic            csr_re_i,
  output logic [31:0]     csr_rdata_o,
  output logic            irq_o,
  input  logic            tlb_flush_i,
  output logic            mem_req_valid_o,
  input  logic            mem_req_ready_i,
  output logic [63:0]     mem_req_addr_o,
  input  logic            mem_resp_valid_i,
  input  logic [63:0]     mem_resp_data_i,
  input  logic            mem_resp_err_i,
  output logic            walk_valid_o,
  input  logic            walk_ready_i,
  output logic [51:0]     walk_vpn_o,
  output logic [63:0]     walk_vaddr_o,
  input  logic            fill_valid_i,
  input  logic [PpnW-1:0] fill_ppn_i,
  input  logic            fill_fault_i
);
  localparam int unsigned NumArgs = 4;

  logic                  start;
  logic [NumArgs*32-1:0] args;
  logic                  done;
  logic [63:0]           ret;
  logic [1:0]            status;
  logic [31:0]           nodes, tlb_hits, tlb_misses;
  logic [31:0]           shell_rdata;
  logic                  ext_sel_q;
  logic [31:0]           ext_rdata_q;

  tandem_csr #(.NumArgs(NumArgs)) u_csr (
    .clk_i, .rst_ni,
    .csr_addr_i, .csr_we_i, .csr_wdata_i, .csr_re_i,
    .csr_rdata_o (shell_rdata),
    .irq_o,
    .start_o     (start),
    .args_o      (args),
    .done_i      (done),
    .ret_i       (ret)
  );

  // The registers beyond Table 5.2 read like the CSR block's: registered, one cycle later.
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      ext_sel_q   <= 1'b0;
      ext_rdata_q <= '0;
    end else if (csr_re_i) begin
      ext_sel_q <= csr_addr_i[7:4] == 4'h4 && csr_addr_i[1:0] == 2'b00;
      unique case (csr_addr_i[3:2])
        2'd0: ext_rdata_q <= {30'd0, status};
        2'd1: ext_rdata_q <= tlb_hits;
        2'd2: ext_rdata_q <= tlb_misses;
        2'd3: ext_rdata_q <= nodes;
        default: ext_rdata_q <= '0;
      endcase
    end
  end
  assign csr_rdata_o = ext_sel_q ? ext_rdata_q : shell_rdata;

  tandem_list_walk_core #(.TlbEntries(TlbEntries), .TlbWays(TlbWays), .PpnW(PpnW)) u_core (
    .clk_i, .rst_ni,
    .start_i      (start),
    .head_i       (args[63:0]),
    .max_nodes_i  (args[127:64]),
    .done_o       (done),
    .ret_o        (ret),
    .status_o     (status),
    .nodes_o      (nodes),
    .tlb_flush_i,
    .tlb_hits_o   (tlb_hits),
    .tlb_misses_o (tlb_misses),
    .mem_req_valid_o, .mem_req_ready_i, .mem_req_addr_o,
    .mem_resp_valid_i, .mem_resp_data_i, .mem_resp_err_i,
    .walk_valid_o, .walk_ready_i, .walk_vpn_o, .walk_vaddr_o,
    .fill_valid_i, .fill_ppn_i, .fill_fault_i
  );
endmodule
