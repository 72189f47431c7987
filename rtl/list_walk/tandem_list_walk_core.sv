// list_walk core (seed 004 Table 1's pointer-chasing workload): follows a linked list of
// tandem_list_node_t {uint64 next; int64 value} in client memory, summing the values of at most
// max_nodes_i nodes from head_i (a next of 0 ends the list early). The sum wraps modulo 2^64, as
// funcs::ref::list_walk does.
//
// Addresses are client VIRTUAL addresses: every access is translated by a tandem_tlb first. A TLB
// miss goes out on the page-walk port (walk_*_o/fill_*_i) to the host, which answers with a physical
// page or a fault; the access then resumes. Reads go out on a 64-bit memory port with PHYSICAL
// addresses ({ppn, page offset}); the host answers each with one data word or an error.
//
// A node is two dependent 8-byte reads (next, then value). Both lie in the same page unless the node
// starts in the page's last 8 bytes, in which case the value word is translated on its own: the TLB
// sees one lookup per page a node touches, in order, like the emulated device's TlbPort.
//
// status_o (held from done_o until the next start): bit0 translation fault (the walk answered with
// a fault, or a read came back with an error), bit1 a node address not 8-byte aligned. Either ends the
// job at once; ret_o is then the partial sum and must be ignored.
module tandem_list_walk_core #(
  parameter int unsigned TlbEntries = 64,
  parameter int unsigned TlbWays    = 1,
  parameter int unsigned PpnW       = 32
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            start_i,
  input  logic [63:0]     head_i,
  input  logic [63:0]     max_nodes_i,
  output logic            done_o,
  output logic [63:0]     ret_o,
  output logic [1:0]      status_o,
  output logic [31:0]     nodes_o,
  // TLB control and counters
  input  logic            tlb_flush_i,
  output logic [31:0]     tlb_hits_o,
  output logic [31:0]     tlb_misses_o,
  // memory read port (physical addresses, 8-byte words)
  output logic            mem_req_valid_o,
  input  logic            mem_req_ready_i,
  output logic [63:0]     mem_req_addr_o,
  input  logic            mem_resp_valid_i,
  input  logic [63:0]     mem_resp_data_i,
  input  logic            mem_resp_err_i,
  // page walk by the host
  output logic            walk_valid_o,
  input  logic            walk_ready_i,
  output logic [51:0]     walk_vpn_o,
  output logic [63:0]     walk_vaddr_o,
  input  logic            fill_valid_i,
  input  logic [PpnW-1:0] fill_ppn_i,
  input  logic            fill_fault_i
);
  localparam int unsigned VpnW = 52;

  typedef enum logic [2:0] {Idle, Check, Lookup, LookupWait, Read, ReadWait, Finish} state_e;

  state_e          state_q, state_d;
  logic [63:0]     sum_q, ptr_q, left_q, next_q;
  logic            half_q;  // 0: reading the node's next word, 1: its value word
  logic [PpnW-1:0] ppn_q;
  logic [1:0]      status_q;
  logic [31:0]     nodes_q;

  logic [63:0]     cur_addr;
  logic            same_page;
  logic            tlb_req_valid, tlb_req_ready, tlb_resp_valid, tlb_resp_fault;
  logic [PpnW-1:0] tlb_resp_ppn;

  assign cur_addr  = half_q ? ptr_q + 64'd8 : ptr_q;
  // The value word shares the next word's page unless the node starts in the last 8 bytes of a page.
  assign same_page = half_q && ptr_q[11:3] != 9'h1ff;

  assign tlb_req_valid   = state_q == Lookup && !same_page;
  assign mem_req_valid_o = state_q == Read;
  assign mem_req_addr_o  = 64'({ppn_q, cur_addr[11:0]});
  assign walk_vaddr_o    = cur_addr;
  assign done_o          = state_q == Finish;
  assign ret_o           = sum_q;
  assign status_o        = status_q;
  assign nodes_o         = nodes_q;

  tandem_tlb #(.Entries(TlbEntries), .Ways(TlbWays), .VpnW(VpnW), .PpnW(PpnW)) u_tlb (
    .clk_i, .rst_ni,
    .flush_i      (tlb_flush_i),
    .req_valid_i  (tlb_req_valid),
    .req_ready_o  (tlb_req_ready),
    .req_vpn_i    (cur_addr[63:12]),
    .resp_valid_o (tlb_resp_valid),
    .resp_ppn_o   (tlb_resp_ppn),
    .resp_fault_o (tlb_resp_fault),
    .miss_valid_o (walk_valid_o),
    .miss_ready_i (walk_ready_i),
    .miss_vpn_o   (walk_vpn_o),
    .fill_valid_i,
    .fill_ppn_i,
    .fill_fault_i,
    .hits_o       (tlb_hits_o),
    .misses_o     (tlb_misses_o)
  );

  always_comb begin
    state_d = state_q;
    unique case (state_q)
      Idle:       if (start_i) state_d = Check;
      Check:      if (ptr_q == 64'd0 || left_q == 64'd0 || ptr_q[2:0] != 3'd0) state_d = Finish;
                  else state_d = Lookup;
      Lookup:     if (same_page) state_d = Read;
                  else if (tlb_req_ready) state_d = LookupWait;
      LookupWait: if (tlb_resp_valid) state_d = tlb_resp_fault ? Finish : Read;
      Read:       if (mem_req_ready_i) state_d = ReadWait;
      ReadWait:   if (mem_resp_valid_i) begin
                    if (mem_resp_err_i) state_d = Finish;
                    else if (!half_q) state_d = Lookup;
                    else state_d = Check;
                  end
      Finish:     state_d = Idle;
      default:    state_d = Idle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q  <= Idle;
      sum_q    <= '0;
      ptr_q    <= '0;
      left_q   <= '0;
      next_q   <= '0;
      half_q   <= 1'b0;
      ppn_q    <= '0;
      status_q <= '0;
      nodes_q  <= '0;
    end else begin
      state_q <= state_d;
      unique case (state_q)
        Idle: if (start_i) begin
          sum_q    <= '0;
          ptr_q    <= head_i;
          left_q   <= max_nodes_i;
          status_q <= '0;
          nodes_q  <= '0;
        end
        Check: begin
          half_q <= 1'b0;
          if (ptr_q != 64'd0 && left_q != 64'd0 && ptr_q[2:0] != 3'd0) status_q[1] <= 1'b1;
        end
        LookupWait: if (tlb_resp_valid) begin
          ppn_q <= tlb_resp_ppn;
          if (tlb_resp_fault) status_q[0] <= 1'b1;
        end
        ReadWait: if (mem_resp_valid_i) begin
          if (mem_resp_err_i) begin
            status_q[0] <= 1'b1;
          end else if (!half_q) begin
            next_q <= mem_resp_data_i;
            half_q <= 1'b1;
          end else begin
            sum_q   <= sum_q + mem_resp_data_i;
            ptr_q   <= next_q;
            left_q  <= left_q - 64'd1;
            nodes_q <= nodes_q + 32'd1;
          end
        end
        default: ;
      endcase
    end
  end

`ifndef SYNTHESIS
  /* verilator lint_off SYNCASYNCNET */
  // Reads go out word-aligned (node addresses are checked before their first read).
  assert property (@(posedge clk_i) disable iff (!rst_ni) mem_req_valid_o |-> mem_req_addr_o[2:0] == 3'd0);
  // The host answers a read only while one is outstanding.
  assert property (@(posedge clk_i) disable iff (!rst_ni) mem_resp_valid_i |-> state_q == ReadWait);
  // A request stays up until it is taken, with the same address.
  assert property (@(posedge clk_i) disable iff (!rst_ni)
                   mem_req_valid_o && !mem_req_ready_i |=> mem_req_valid_o && $stable(mem_req_addr_o));
  // The TLB is flushed only between jobs (its entries belong to the session of the job that filled them).
  assert property (@(posedge clk_i) disable iff (!rst_ni) tlb_flush_i |-> state_q == Idle && !start_i);
  // A job starts only when the core is idle (the CSR block holds start while one runs).
  assert property (@(posedge clk_i) disable iff (!rst_ni) start_i |-> state_q == Idle);
  /* verilator lint_on SYNCASYNCNET */
`endif
endmodule
