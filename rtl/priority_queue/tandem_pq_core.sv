// Priority queue core: the thesis's Ch3 scheduler queue (Fig 3.3). 256 priorities (255 highest),
// FIFO order within a priority, push at the tail (a thread becomes runnable) or at the head (a
// preempted thread), pop or peek at a given priority or at the highest non-empty priority, which a
// combinational priority encoder finds in the same cycle. One command per cycle.
//
// Instead of one fixed-size FIFO per priority (the scalability concern the thesis notes), the
// entries live in a shared pool of Capacity nodes: per priority a singly linked list with head and
// tail pointers, and a free list. Every command reads and writes each memory at most once, so all
// of them fit in distributed RAM with asynchronous reads.
//
// Commands arrive on the input stream, one 64-bit beat each:
//   [31:0] handle   [39:32] priority   [40] at head (push)   [41] highest (pop, peek)
//   [63:56] opcode: 1 push, 2 pop, 3 peek; other opcodes, or reserved bits [55:42] set, fail
// Every command yields one response beat:
//   [31:0] handle (popped/peeked, or the pushed one)   [39:32] priority used   [40] ok
//   [63:48] number of queued entries after the command
// A push into a full queue, or a pop/peek of an empty priority, fails (ok = 0, no change; a failed
// pop or peek returns handle 0).
//
// Arguments: arg0 = number of commands, arg1 bit 0 = empty the queue first. The queue keeps its
// contents between jobs. Return value: number of queued entries at the end.
module tandem_pq_core #(
  parameter int unsigned Capacity = 256
) (
  input  logic        clk_i,
  input  logic        rst_ni,
  input  logic        start_i,
  input  logic [31:0] commands_i,
  input  logic        clear_i,
  output logic        done_o,
  output logic [63:0] ret_o,
  input  logic        in_valid_i,
  output logic        in_ready_o,
  input  logic [63:0] in_data_i,
  output logic        out_valid_o,
  input  logic        out_ready_i,
  output logic [63:0] out_data_o
);
  localparam int unsigned PtrW   = $clog2(Capacity);
  localparam int unsigned CountW = $clog2(Capacity + 1);
  localparam logic [CountW-1:0] Full = CountW'(Capacity);

  localparam logic [7:0] OpPush = 8'd1;
  localparam logic [7:0] OpPop  = 8'd2;
  localparam logic [7:0] OpPeek = 8'd3;

  logic              busy_q;
  logic [31:0]       remaining_q;
  logic [255:0]      nonempty_q;
  logic [CountW-1:0] count_q;       // entries queued
  logic [CountW-1:0] fresh_q;       // nodes never used yet: fresh_q .. Capacity-1
  logic [CountW-1:0] free_len_q;    // nodes on the free list
  logic [PtrW-1:0]   free_head_q;
  logic              out_valid_q;
  logic [63:0]       out_data_q;

  logic [PtrW-1:0] head_mem [256];
  logic [PtrW-1:0] tail_mem [256];
  logic [PtrW-1:0] next_mem [Capacity];
  logic [31:0]     data_mem [Capacity];

  logic adv, cmd_fire;
  assign adv        = !out_valid_q || out_ready_i;
  assign in_ready_o = busy_q && remaining_q != 32'd0 && adv;
  assign cmd_fire   = in_valid_i && in_ready_o;

  assign done_o      = busy_q && remaining_q == 32'd0 && !out_valid_q;
  assign ret_o       = {{(64 - CountW){1'b0}}, count_q};
  assign out_valid_o = out_valid_q;
  assign out_data_o  = out_data_q;

  // ---- decode ----
  logic [31:0] handle;
  logic [7:0]  cmd_prio, opcode;
  logic        at_head, highest, reserved_ok;
  assign handle   = in_data_i[31:0];
  assign cmd_prio = in_data_i[39:32];
  assign at_head  = in_data_i[40];
  assign highest  = in_data_i[41];
  assign opcode   = in_data_i[63:56];
  assign reserved_ok = in_data_i[55:42] == '0;

  logic       top_any;
  logic [7:0] top_prio;
  tandem_prio_encoder u_enc (.bits_i(nonempty_q), .any_o(top_any), .index_o(top_prio));

  logic is_push, is_pop, is_peek;
  assign is_push = reserved_ok && opcode == OpPush;
  assign is_pop  = reserved_ok && opcode == OpPop;
  assign is_peek = reserved_ok && opcode == OpPeek;

  logic [7:0]      sel;
  logic            list_nonempty;
  logic [PtrW-1:0] hd, tl;
  assign sel           = (highest && !is_push) ? top_prio : cmd_prio;
  assign list_nonempty = (highest && !is_push) ? top_any : nonempty_q[sel];
  assign hd            = head_mem[sel];
  assign tl            = tail_mem[sel];

  // allocation: free list first, then never-used nodes
  logic            from_free;
  logic [PtrW-1:0] node;
  assign from_free = free_len_q != '0;
  assign node      = from_free ? free_head_q : PtrW'(fresh_q);

  logic [PtrW-1:0] next_raddr, next_rdata;
  assign next_raddr = is_push ? free_head_q : hd;
  assign next_rdata = next_mem[next_raddr];

  logic push_ok, take_ok;
  assign push_ok = is_push && count_q != Full;
  assign take_ok = (is_pop || is_peek) && list_nonempty;

  logic [CountW-1:0] count_after;
  always_comb begin
    count_after = count_q;
    if (push_ok) count_after = count_q + 1'b1;
    else if (is_pop && take_ok) count_after = count_q - 1'b1;
  end

  // ---- response ----
  logic [31:0] resp_handle;
  always_comb begin
    resp_handle = 32'd0;
    if (is_push) resp_handle = handle;
    else if (take_ok) resp_handle = data_mem[hd];
  end

  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      out_valid_q <= 1'b0;
    end else if (adv) begin
      out_valid_q <= cmd_fire;
    end
  end
  always_ff @(posedge clk_i) begin
    if (cmd_fire) begin
      out_data_q <= {16'(count_after), 7'd0, push_ok || take_ok, sel, resp_handle};
    end
  end

  // ---- queue state ----
  always_ff @(posedge clk_i or negedge rst_ni) begin
    if (!rst_ni) begin
      busy_q      <= 1'b0;
      remaining_q <= '0;
      nonempty_q  <= '0;
      count_q     <= '0;
      fresh_q     <= '0;
      free_len_q  <= '0;
      free_head_q <= '0;
    end else if (start_i) begin
      busy_q      <= 1'b1;
      remaining_q <= commands_i;
      if (clear_i) begin
        nonempty_q <= '0;
        count_q    <= '0;
        fresh_q    <= '0;
        free_len_q <= '0;
      end
    end else if (done_o) begin
      busy_q <= 1'b0;
    end else if (cmd_fire) begin
      remaining_q <= remaining_q - 32'd1;
      count_q     <= count_after;
      if (push_ok) begin
        nonempty_q[sel] <= 1'b1;
        if (from_free) begin
          free_head_q <= next_rdata;
          free_len_q  <= free_len_q - 1'b1;
        end else begin
          fresh_q <= fresh_q + 1'b1;
        end
      end else if (is_pop && take_ok) begin
        if (hd == tl) nonempty_q[sel] <= 1'b0;
        free_head_q <= hd;
        free_len_q  <= free_len_q + 1'b1;
      end
    end
  end

  // ---- list memories (one write each per command) ----
  logic pop_ok;
  assign pop_ok = cmd_fire && is_pop && take_ok;

  always_ff @(posedge clk_i) begin
    if (cmd_fire && push_ok) data_mem[node] <= handle;
  end
  always_ff @(posedge clk_i) begin
    if (cmd_fire && push_ok && (!list_nonempty || at_head)) head_mem[sel] <= node;
    else if (pop_ok && hd != tl) head_mem[sel] <= next_rdata;
  end
  always_ff @(posedge clk_i) begin
    if (cmd_fire && push_ok && (!list_nonempty || !at_head)) tail_mem[sel] <= node;
  end
  always_ff @(posedge clk_i) begin
    if (cmd_fire && push_ok && list_nonempty) begin
      if (at_head) next_mem[node] <= hd;
      else next_mem[tl] <= node;
    end else if (pop_ok) begin
      next_mem[hd] <= free_head_q;
    end
  end
endmodule
