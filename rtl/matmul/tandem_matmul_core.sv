// Integer matrix multiplication core: C (MxN) = A (MxK) * B (KxN), every dimension up to MaxDim.
//
// Numbers: A and B hold int16; C holds int32, computed modulo 2^32 (two's-complement wrap-around,
// like uint32_t arithmetic in C). Products are exact (int16 x int16 fits in int32).
//
// Stream layout (64-bit beats, little-endian elements, every matrix row padded to whole beats):
//   input:  B row-major, ceil(N/4) beats per row (4 int16 per beat), then
//           A row-major, ceil(K/4) beats per row
//   output: C row-major, ceil(N/2) beats per row (2 int32 per beat)
// B is kept on chip (one word = 4 adjacent elements of a row of B). For each row of A the core
// computes C's row four columns at a time with four multiply-accumulate lanes, one k per cycle:
// cycles ~ K*ceil(N/4) + M*(ceil(K/4) + 1 + ceil(N/4)*max(K,1)).
//
// Arguments: arg0 = M, arg1 = K, arg2 = N. M or N zero: no data in or out. K zero: C is all zero
// (no input). A dimension above MaxDim: no data, return 1. Otherwise return 0.
module tandem_matmul_core #(
  parameter int unsigned MaxDim = 100
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic [31:0] m_i,
  input  logic [31:0] k_i,
  input  logic [31:0] n_i,
  output logic        done_o,
  output logic [63:0] ret_o,
  input  logic        in_valid_i,
  output logic        in_ready_o,
  input  logic [63:0] in_data_i,
  output logic        out_valid_o,
  input  logic        out_ready_i,
  output logic [63:0] out_data_o
);
  localparam int unsigned MaxWords = (MaxDim + 3) / 4;         // beats per row of A or B
  localparam int unsigned DimW     = $clog2(MaxDim + 1);
  localparam int unsigned WordW    = $clog2(MaxWords + 1);
  localparam int unsigned BDepth   = MaxDim * MaxWords;
  localparam int unsigned BAddrW   = $clog2(BDepth + 1);

  typedef enum logic [2:0] {Idle, LoadB, LoadA, Compute, Drain} phase_e;

  phase_e            phase_q;
  logic              error_q;
  logic [DimW-1:0]   m_q, k_q, n_q;
  logic [WordW-1:0]  nb_q, ka_q;        // beats per row of B, of A
  logic [BAddrW-1:0] b_total_q;         // beats of B
  logic [BAddrW-1:0] b_count_q;
  logic [WordW-1:0]  a_count_q;
  logic [DimW-1:0]   row_q;             // row of A / C
  logic [WordW-1:0]  jb_q;              // block of 4 columns of C
  logic [DimW-1:0]   kk_q;              // k within the block
  logic [BAddrW-1:0] b_addr_q;          // kk*nb + jb
  logic [DimW-1:0]   cols_left_q;       // N - 4*jb

  logic [63:0] b_mem_q [BDepth];
  logic [63:0] a_mem_q [MaxWords];
  logic [63:0] b_rdata_q, a_rdata_q;

  // stage 1: operands read for one k, consumed by the multiply-accumulate
  logic       s1_valid_q, s1_mac_q, s1_last_q;
  logic [1:0] s1_lane_q;
  logic [2:0] s1_cnt_q;                 // valid columns in this block (1..4)

  logic [127:0] acc_q;                  // 4 x int32
  logic         hold_valid_q;
  logic [127:0] hold_q;
  logic         hold_two_q;             // block needs two output beats
  logic         emit_second_q;

  // ---- argument checks ----
  logic bad_args, empty_job;
  assign bad_args  = m_i > MaxDim || k_i > MaxDim || n_i > MaxDim;
  assign empty_job = m_i == 32'd0 || n_i == 32'd0;

  // ---- output side ----
  logic out_fire, hold_frees;
  assign out_valid_o = hold_valid_q;
  assign out_data_o  = emit_second_q ? hold_q[127:64] : hold_q[63:0];
  assign out_fire    = hold_valid_q && out_ready_i;
  assign hold_frees  = !hold_valid_q || (out_fire && (emit_second_q || !hold_two_q));

  // ---- pipeline control ----
  logic stall, consume, issue, last_k, last_block;
  assign stall      = s1_valid_q && s1_last_q && !hold_frees;
  assign consume    = s1_valid_q && !stall;
  assign issue      = phase_q == Compute && !stall;
  assign last_k     = k_q == '0 || kk_q == k_q - 1'b1;
  assign last_block = jb_q == nb_q - 1'b1;

  assign in_ready_o = (phase_q == LoadB && b_count_q != b_total_q) ||
                      (phase_q == LoadA && a_count_q != ka_q);

  assign done_o = phase_q == Drain && !s1_valid_q && !hold_valid_q;
  assign ret_o  = {63'd0, error_q};

  logic [DimW-1:0]  kdim, ndim;
  logic [WordW-1:0] nb_new, ka_new;
  assign kdim   = k_i[DimW-1:0];
  assign ndim   = n_i[DimW-1:0];
  assign nb_new = WordW'((ndim + DimW'(3)) >> 2);
  assign ka_new = WordW'((kdim + DimW'(3)) >> 2);

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      phase_q     <= Idle;
      error_q     <= 1'b0;
      m_q         <= '0;
      k_q         <= '0;
      n_q         <= '0;
      nb_q        <= '0;
      ka_q        <= '0;
      b_total_q   <= '0;
      b_count_q   <= '0;
      a_count_q   <= '0;
      row_q       <= '0;
      jb_q        <= '0;
      kk_q        <= '0;
      b_addr_q    <= '0;
      cols_left_q <= '0;
    end else begin
      case (phase_q)
        Idle: begin
          if (start_i) begin
            error_q   <= bad_args;
            phase_q   <= (bad_args || empty_job) ? Drain : LoadB;
            m_q       <= m_i[DimW-1:0];
            k_q       <= kdim;
            n_q       <= ndim;
            nb_q      <= nb_new;
            ka_q      <= ka_new;
            b_total_q <= BAddrW'(kdim) * BAddrW'(nb_new);
            b_count_q <= '0;
          end
        end
        LoadB: begin
          if (b_count_q == b_total_q) begin
            phase_q   <= LoadA;
            a_count_q <= '0;
            row_q     <= '0;
          end else if (in_valid_i) begin
            b_count_q <= b_count_q + 1'b1;
          end
        end
        LoadA: begin
          if (a_count_q == ka_q) begin
            phase_q     <= Compute;
            jb_q        <= '0;
            kk_q        <= '0;
            b_addr_q    <= '0;
            cols_left_q <= n_q;
          end else if (in_valid_i) begin
            a_count_q <= a_count_q + 1'b1;
          end
        end
        Compute: begin
          if (issue) begin
            if (last_k) begin
              kk_q        <= '0;
              jb_q        <= jb_q + 1'b1;
              b_addr_q    <= BAddrW'(jb_q) + 1'b1;
              cols_left_q <= cols_left_q - DimW'(4);
              if (last_block) begin
                if (row_q == m_q - 1'b1) begin
                  phase_q <= Drain;
                end else begin
                  phase_q   <= LoadA;
                  a_count_q <= '0;
                  row_q     <= row_q + 1'b1;
                end
              end
            end else begin
              kk_q     <= kk_q + 1'b1;
              b_addr_q <= b_addr_q + BAddrW'(nb_q);
            end
          end
        end
        Drain: begin
          if (done_o) phase_q <= Idle;
        end
        default: phase_q <= Idle;
      endcase
    end
  end

  // ---- on-chip matrices ----
  always_ff @(posedge clk_i) begin
    if (phase_q == LoadB && in_ready_o && in_valid_i) b_mem_q[b_count_q[BAddrW-1:0]] <= in_data_i;
    if (issue) b_rdata_q <= b_mem_q[b_addr_q];
  end
  always_ff @(posedge clk_i) begin
    if (phase_q == LoadA && in_ready_o && in_valid_i) a_mem_q[a_count_q] <= in_data_i;
    if (issue) a_rdata_q <= a_mem_q[WordW'(kk_q >> 2)];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      s1_valid_q <= 1'b0;
    end else if (!stall) begin
      s1_valid_q <= issue;
    end
  end
  always_ff @(posedge clk_i) begin
    if (issue) begin
      s1_mac_q  <= k_q != '0;
      s1_last_q <= last_k;
      s1_lane_q <= kk_q[1:0];
      s1_cnt_q  <= cols_left_q >= 4 ? 3'd4 : cols_left_q[2:0];
    end
  end

  // ---- multiply-accumulate: four lanes, int16 x int16 into int32 (wrapping) ----
  logic [15:0]  a_elem;
  logic [127:0] acc_next, hold_next;
  assign a_elem = a_rdata_q[16*s1_lane_q +: 16];
  always_comb begin
    logic [31:0] prod;
    acc_next  = acc_q;
    hold_next = '0;
    for (int unsigned l = 0; l < 4; l++) begin
      prod = $signed(a_elem) * $signed(b_rdata_q[16*l +: 16]);
      if (s1_mac_q) acc_next[32*l +: 32] = acc_q[32*l +: 32] + prod;
      if (l < 32'(s1_cnt_q)) hold_next[32*l +: 32] = acc_next[32*l +: 32];
    end
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      acc_q         <= '0;
      hold_valid_q  <= 1'b0;
      hold_q        <= '0;
      hold_two_q    <= 1'b0;
      emit_second_q <= 1'b0;
    end else begin
      if (out_fire) begin
        if (emit_second_q || !hold_two_q) begin
          hold_valid_q  <= 1'b0;
          emit_second_q <= 1'b0;
        end else begin
          emit_second_q <= 1'b1;
        end
      end
      if (consume) begin
        if (s1_last_q) begin
          acc_q        <= '0;
          hold_q       <= hold_next;
          hold_valid_q <= 1'b1;
          hold_two_q   <= s1_cnt_q > 3'd2;
        end else begin
          acc_q <= acc_next;
        end
      end
    end
  end
endmodule
