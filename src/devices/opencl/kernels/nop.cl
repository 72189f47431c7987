// nop: the null accelerator of the dispatch benchmarks. One work-item that does nothing: its round
// trip is the device's job start + completion cost.
__kernel void tandem_nop(void) {}
