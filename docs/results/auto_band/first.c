// One thread, CALLS tandem_accumulate of N int32 on the embedded default in MODE (sw, hw, auto): the time
// to open, the whole run, the first 12 calls (us) and the mean call per block of 100 (us). The probe of
// docs/results/auto.md, 28 Nov 2026 14:05 UTC. Build and run from the repository root:
//   gcc -O2 docs/results/auto_band/first.c -Iinclude -Lbuild/lib -ltandem -Wl,-rpath,$PWD/build/lib -o /tmp/first
//   for i in 1 2 3 4; do for m in sw auto; do TANDEM_LEARNED_DIR=off /tmp/first $m 4096 1000; done; done
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tandem/tandem.h"
static long long ns(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(int argc,char**argv){
  const char*m=argv[1]; int N=atoi(argv[2]); int C=atoi(argv[3]);
  tandem_options_t o; tandem_options_init(&o); o.embedded=1;
  o.mode=!strcmp(m,"sw")?TANDEM_MODE_SW:!strcmp(m,"hw")?TANDEM_MODE_HW:TANDEM_MODE_AUTO;
  tandem_runtime_t*rt; long long t0=ns(); if(tandem_open(&o,&rt)){puts("open");return 1;} long long t1=ns();
  int32_t*b=malloc(N*4); for(int i=0;i<N;i++)b[i]=i;
  long long d[100000]; long long s0=ns(), prev=s0;
  for(int c=0;c<C;c++){int64_t s; tandem_accumulate(rt,b,N,&s); long long t=ns(); d[c]=t-prev; prev=t;}
  printf("%-4s open %.2f ms total %.3f ms first:", m,(t1-t0)/1e6,(prev-s0)/1e6);
  for(int c=0;c<12;c++)printf(" %lld",d[c]/1000); 
  printf("\n blocks:"); for(int k=0;k+100<=C;k+=100){long long q=0; for(int c=k;c<k+100;c++)q+=d[c]; printf(" %.1f", q/1e3/100);} printf("\n");
  tandem_close(rt);}
