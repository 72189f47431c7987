// work: the thesis's synthetic function (5.5.2) on a real device. One work unit is one step of a
// dependent 64-bit linear congruential chain (a multiply and an add that the compiler cannot fold);
// the units are spread evenly over the work-items, each running its own chain. A work-group writes
// two words: the steps its items ran (the call's value is their total: the units processed, counted
// on the device) and the xor of their final states (kept so that the chains cannot be elided).
// The device's rate of units per second is what calibration measures (X_a).
__kernel __attribute__((reqd_work_group_size(TANDEM_WG, 1, 1)))
void tandem_work(ulong units, __global ulong* partials) {
  __local ulong steps_done[TANDEM_WG];
  __local ulong states[TANDEM_WG];
  const uint lid = (uint)get_local_id(0);
  const ulong items = get_global_size(0), gid = get_global_id(0);
  const ulong steps = units / items + (gid < units % items ? 1 : 0);
  ulong x = gid + 1;
  for (ulong i = 0; i < steps; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  steps_done[lid] = steps;
  states[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint span = TANDEM_WG / 2; span > 0; span >>= 1) {
    if (lid < span) {
      steps_done[lid] += steps_done[lid + span];
      states[lid] ^= states[lid + span];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    partials[2 * get_group_id(0)] = steps_done[0];
    partials[2 * get_group_id(0) + 1] = states[0];
  }
}
