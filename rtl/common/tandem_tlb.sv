// A small set-associative TLB for an accelerator's memory port: virtual page -> physical page.
// One lookup at a time. A hit answers in the next cycle; a miss raises a page-walk request to the
// host (miss_valid_o/miss_ready_i with the virtual page), waits for the host's answer
// (fill_valid_i with a physical page or a fault), installs the translation (not on a fault) in the
// set's next way (round-robin replacement per set) and answers. flush_i invalidates every entry.
// hits_o/misses_o count lookups since reset.
module tandem_tlb #(
  parameter int unsigned Entries = 16,
  parameter int unsigned Ways    = 2,
  parameter int unsigned VpnW    = 52,
  parameter int unsigned PpnW    = 32
) (
  input  logic            clk_i,
  input  logic            rst_ni,
  input  logic            flush_i,
  // lookup
  input  logic            req_valid_i,
  output logic            req_ready_o,
  input  logic [VpnW-1:0] req_vpn_i,
  output logic            resp_valid_o,
  output logic [PpnW-1:0] resp_ppn_o,
  output logic            resp_fault_o,
  // page walk by the host
  output logic            miss_valid_o,
  input  logic            miss_ready_i,
  output logic [VpnW-1:0] miss_vpn_o,
  input  logic            fill_valid_i,
  input  logic [PpnW-1:0] fill_ppn_i,
  input  logic            fill_fault_i,
  // counters
  output logic [31:0]     hits_o,
  output logic [31:0]     misses_o
);
  localparam int unsigned Sets  = Entries / Ways;
  localparam int unsigned SetW  = Sets > 1 ? $clog2(Sets) : 1;
  localparam int unsigned WayW  = Ways > 1 ? $clog2(Ways) : 1;
  localparam int unsigned EntW  = Entries > 1 ? $clog2(Entries) : 1;

  typedef enum logic [1:0] {Idle, MissReq, MissWait, Respond} state_e;

  logic [Entries-1:0]   valid_q;
  logic [VpnW-1:0]      tag_q [Entries];
  logic [PpnW-1:0]      ppn_q [Entries];
  logic [WayW-1:0]      victim_q [Sets];
  state_e               state_q, state_d;
  logic [VpnW-1:0]      vpn_q;
  logic [PpnW-1:0]      out_ppn_q;
  logic                 out_fault_q;
  logic [31:0]          hits_q, misses_q;

  logic [SetW-1:0]      req_set, cur_set;
  logic [Ways-1:0]      hit_way;
  logic [PpnW-1:0]      hit_ppn;
  logic                 lookup;

  if (Sets > 1) begin : g_set
    assign req_set = req_vpn_i[SetW-1:0];
    assign cur_set = vpn_q[SetW-1:0];
  end else begin : g_noset
    assign req_set = '0;
    assign cur_set = '0;
  end

  // Entry indices: the looked-up set's first entry, and the entry a fill replaces (zero-extended by
  // hand: Yosys does not parse int'() casts).
  logic [31:0]     req_base;
  logic [EntW-1:0] fill_idx;
  assign req_base = {{(32 - SetW){1'b0}}, req_set} * Ways;
  assign fill_idx = EntW'({{(32 - SetW){1'b0}}, cur_set} * Ways + {{(32 - WayW){1'b0}}, victim_q[cur_set]});

  always_comb begin
    hit_way = '0;
    hit_ppn = '0;
    for (int unsigned w = 0; w < Ways; w++) begin
      if (valid_q[req_base + w] && tag_q[req_base + w] == req_vpn_i) begin
        hit_way[w] = 1'b1;
        hit_ppn    = ppn_q[req_base + w];
      end
    end
  end

  assign req_ready_o  = state_q == Idle && !flush_i;
  assign lookup       = req_valid_i && req_ready_o;
  assign miss_valid_o = state_q == MissReq;
  assign miss_vpn_o   = vpn_q;
  assign resp_valid_o = state_q == Respond;
  assign resp_ppn_o   = out_ppn_q;
  assign resp_fault_o = out_fault_q;
  assign hits_o       = hits_q;
  assign misses_o     = misses_q;

  always_comb begin
    state_d = state_q;
    unique case (state_q)
      Idle:     if (lookup) state_d = |hit_way ? Respond : MissReq;
      MissReq:  if (miss_ready_i) state_d = MissWait;
      MissWait: if (fill_valid_i) state_d = Respond;
      Respond:  state_d = Idle;
      default:  state_d = Idle;
    endcase
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      state_q     <= Idle;
      valid_q     <= '0;
      vpn_q       <= '0;
      out_ppn_q   <= '0;
      out_fault_q <= 1'b0;
      hits_q      <= '0;
      misses_q    <= '0;
      for (int unsigned s = 0; s < Sets; s++) victim_q[s] <= '0;
      for (int unsigned e = 0; e < Entries; e++) begin
        tag_q[e] <= '0;
        ppn_q[e] <= '0;
      end
    end else begin
      state_q <= state_d;
      if (flush_i) valid_q <= '0;
      if (lookup) begin
        vpn_q       <= req_vpn_i;
        out_ppn_q   <= hit_ppn;
        out_fault_q <= 1'b0;
        if (|hit_way) hits_q <= hits_q + 32'd1;
        else          misses_q <= misses_q + 32'd1;
      end
      if (state_q == MissWait && fill_valid_i) begin
        out_ppn_q   <= fill_ppn_i;
        out_fault_q <= fill_fault_i;
        if (!fill_fault_i && !flush_i) begin
          valid_q[fill_idx] <= 1'b1;
          tag_q[fill_idx]   <= vpn_q;
          ppn_q[fill_idx]   <= fill_ppn_i;
          victim_q[cur_set] <= victim_q[cur_set] == WayW'(Ways - 1) ? '0 : victim_q[cur_set] + 1'b1;
        end
      end
    end
  end

`ifndef SYNTHESIS
  // The checks sample rst_ni synchronously (disable iff); they are not logic, so the mixed use is fine.
  /* verilator lint_off SYNCASYNCNET */
  // At most one way of a set holds a given page.
  assert property (@(posedge clk_i) disable iff (!rst_ni) $onehot0(hit_way));
  // The host answers a walk only while one is outstanding.
  assert property (@(posedge clk_i) disable iff (!rst_ni) fill_valid_i |-> state_q == MissWait);
  // Geometry the indexing relies on.
  initial assert (Entries % Ways == 0 && (Sets & (Sets - 1)) == 0);
  /* verilator lint_on SYNCASYNCNET */
`endif
endmodule
