// accumulate: the int64 sum of int32 values (funcs/catalog.cc), wrapping modulo 2^64 like the
// catalog's combine. Work-group g sums the contiguous chunk [g * chunk, (g + 1) * chunk) with its
// work-items interleaved (neighbouring items read neighbouring elements: coalesced on a GPU,
// vectorised across the group by PoCL), reduces in local memory and writes one partial; the host
// adds the partials. Built with -DTANDEM_WG=<work-group size, a power of two>.

// The sum of every work-item's `mine` over the work-group (wrapping), in local memory `sums` of
// TANDEM_WG words; valid in work-item 0. Every work-item of the group must call it.
ulong tandem_group_sum(__local ulong* sums, uint lid, ulong mine) {
  sums[lid] = mine;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint span = TANDEM_WG / 2; span > 0; span >>= 1) {
    if (lid < span) sums[lid] += sums[lid + span];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  return sums[0];
}

__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))
void tandem_accumulate(__global const int* data, ulong count, ulong chunk, __global long* partials) {
  __local ulong sums[TANDEM_WG];
  const uint lid = (uint)get_local_id(0);
  const ulong begin = (ulong)get_group_id(0) * chunk;
  const ulong end = min(count, begin + chunk);
  ulong sum = 0;
  for (ulong i = begin + lid; i < end; i += TANDEM_WG) sum += (ulong)(long)data[i];
  sum = tandem_group_sum(sums, lid, sum);
  if (lid == 0) partials[get_group_id(0)] = (long)sum;
}

// Many small accumulate jobs in one launch (the OpenCL device's batching, docs/devices.md). One buffer
// holds a table, two words per job, then the jobs' inputs: work-group g sums the `table[2g + 1]` values
// that start at int32 element `table[2g]` of the same buffer and writes job g's whole sum to sums[g].
__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))
void tandem_accumulate_batch(__global const ulong* table, __global long* sums) {
  __local ulong partial[TANDEM_WG];
  __global const int* data = (__global const int*)table;
  const uint lid = (uint)get_local_id(0);
  const uint job = (uint)get_group_id(0);
  const ulong begin = table[2 * job];
  const ulong end = begin + table[2 * job + 1];
  ulong sum = 0;
  for (ulong i = begin + lid; i < end; i += TANDEM_WG) sum += (ulong)(long)data[i];
  sum = tandem_group_sum(partial, lid, sum);
  if (lid == 0) sums[job] = (long)sum;
}
