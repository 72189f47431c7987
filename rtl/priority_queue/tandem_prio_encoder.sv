// Highest-set-bit encoder for 256 request bits, combinational, built in two levels of 16 (a group
// bitmap, then the bits of the winning group), like the seL4 bitmap scheduler's two CLZ steps.
module tandem_prio_encoder (
  input  logic [255:0] bits_i,
  output logic         any_o,
  output logic [7:0]   index_o
);
  function automatic logic [3:0] highest16(input logic [15:0] v);
    highest16 = 4'd0;
    for (int unsigned i = 0; i < 16; i++) begin
      if (v[i]) highest16 = 4'(i);
    end
  endfunction

  logic [15:0] group_any;
  logic [3:0]  group;
  logic [15:0] group_bits;

  always_comb begin
    for (int unsigned g = 0; g < 16; g++) group_any[g] = |bits_i[16*g +: 16];
  end
  assign group      = highest16(group_any);
  assign group_bits = bits_i[{group, 4'd0} +: 16];
  assign any_o      = |group_any;
  assign index_o    = {group, highest16(group_bits)};
endmodule
