// work calls of N cycles from T threads of one embedded runtime, hw and auto modes alternating: makespan
// medians and what auto's calls did (tandem_get_call_stats).
// Build: g++ -O2 -std=c++20 -I include work_threads_probe.cc -L build/lib -ltandem -Wl,-rpath,$PWD/build/lib -lpthread
// Run:   TANDEM_LEARNED_DIR=off ./a.out 60 30 T 200000   (calls per thread, repetitions, threads, cycles)
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
  unsigned calls=atoi(argv[1]); int reps=atoi(argv[2]); unsigned T=atoi(argv[3]); uint64_t units=atoll(argv[4]);
  std::vector<double> t[2]; uint64_t swu[2]={0,0}, hwu[2]={0,0}, swc[2]={0,0}, jobs[2]={0,0}, fb[2]={0,0};
  for(int rep=0;rep<reps;rep++) for(int k=0;k<2;k++){ int mode=(k+rep)%2;
    tandem_options_t o; tandem_options_init(&o); o.embedded=1; o.mode=mode==0?TANDEM_MODE_HW:TANDEM_MODE_AUTO;
    tandem_runtime_t* rt; if(tandem_open(&o,&rt)!=TANDEM_OK){puts(tandem_last_error());return 1;}
    std::atomic<bool> go{false}; std::vector<std::thread> th;
    for(unsigned k2=0;k2<T;k2++) th.emplace_back([&]{ while(!go.load()) std::this_thread::yield(); for(unsigned c=0;c<calls;c++) tandem_work(rt,units);});
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    long long t0=ns(); go=true; for(auto&x:th) x.join(); t[mode].push_back((ns()-t0)/1e3);
    tandem_call_stats_t st; tandem_get_call_stats(rt,&st,sizeof st); swu[mode]+=st.sw_units; hwu[mode]+=st.hw_units; swc[mode]+=st.sw_calls; jobs[mode]+=st.hw_jobs; fb[mode]+=st.fallbacks;
    tandem_close(rt);
  }
  for(int m=0;m<2;m++){ auto v=t[m]; std::sort(v.begin(),v.end()); printf("T=%u %s: median %.0f us p25 %.0f p75 %.0f | hw units %.4f sw calls %llu jobs/call %.2f fallbacks %llu\n",T,m?"auto":"hw  ",v[v.size()/2],v[v.size()/4],v[3*v.size()/4], hwu[m]/double(hwu[m]+swu[m]), (unsigned long long)swc[m], jobs[m]/double(reps*calls*T), (unsigned long long)fb[m]);}
}
