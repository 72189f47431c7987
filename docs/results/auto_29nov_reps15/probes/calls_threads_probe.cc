// Small accumulate calls from T threads of one embedded runtime, sw and auto modes: median ns per call-slot.
// Build: g++ -O2 -std=c++20 -I include calls_threads_probe.cc -L build/lib -ltandem -Wl,-rpath,$PWD/build/lib -lpthread
// Run:   TANDEM_LEARNED_DIR=off ./a.out 256 20000 9 T   (ints per call, calls per thread, repetitions, threads)
#include <tandem/tandem.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <thread>
#include <atomic>
#include <algorithm>
#include <time.h>
static long long ns(){timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec*1000000000LL+t.tv_nsec;}
int main(int argc,char**argv){
  unsigned n = atoi(argv[1]); unsigned calls=atoi(argv[2]); int reps=atoi(argv[3]); unsigned T=atoi(argv[4]);
  std::vector<std::vector<int32_t>> d(T, std::vector<int32_t>(n,3));
  std::vector<double> t[2];
  for(int rep=0;rep<reps;rep++) for(int mode=0;mode<2;mode++){
    tandem_options_t o; tandem_options_init(&o); o.embedded=1; o.mode=mode==0?TANDEM_MODE_SW:TANDEM_MODE_AUTO;
    tandem_runtime_t* rt; if(tandem_open(&o,&rt)!=TANDEM_OK){puts(tandem_last_error());return 1;}
    std::atomic<bool> go{false}; std::vector<std::thread> th;
    for(unsigned k=0;k<T;k++) th.emplace_back([&,k]{ while(!go.load()) std::this_thread::yield(); int64_t s; for(unsigned c=0;c<calls;c++) tandem_accumulate(rt,d[k].data(),n,&s);});
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    long long t0=ns(); go=true; for(auto&x:th) x.join(); t[mode].push_back((ns()-t0)/double(calls));
    tandem_close(rt);
  }
  for(int m=0;m<2;m++){ auto v=t[m]; std::sort(v.begin(),v.end()); printf("T=%u %s: %.0f ns per call-slot (median)\n",T,m?"auto":"sw  ",v[v.size()/2]);}
}
