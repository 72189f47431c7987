// matmul: C (m x n) = A (m x k) * B (k x n), int16 inputs, int32 results modulo 2^32, bit-exact with
// funcs/ref/matmul_ref (the sum is taken in uint: wrap-around is defined, and modular addition
// makes the order of the terms irrelevant). Tiled through local memory, TANDEM_TILE x TANDEM_TILE
// work-items per group, each computing one element of C; the NDRange is rounded up to whole tiles.
// k = 0 writes zeros (a and b are not read and may be null).
__kernel __attribute__((reqd_work_group_size(TANDEM_TILE, TANDEM_TILE, 1)))
void tandem_matmul(__global const short* a, __global const short* b, __global int* c, uint m, uint k,
                   uint n) {
  __local int tile_a[TANDEM_TILE][TANDEM_TILE];
  __local int tile_b[TANDEM_TILE][TANDEM_TILE];
  const uint col = (uint)get_global_id(0), row = (uint)get_global_id(1);
  const uint lc = (uint)get_local_id(0), lr = (uint)get_local_id(1);
  uint acc = 0;
  for (uint t = 0; t < k; t += TANDEM_TILE) {
    tile_a[lr][lc] = (row < m && t + lc < k) ? a[(size_t)row * k + t + lc] : 0;
    tile_b[lr][lc] = (col < n && t + lr < k) ? b[(size_t)(t + lr) * n + col] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint x = 0; x < TANDEM_TILE; ++x) acc += (uint)(tile_a[lr][x] * tile_b[x][lc]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (row < m && col < n) c[(size_t)row * n + col] = (int)acc;
}
