// What SVM staging saves a batch on this OpenCL device (docs/results/opencl.md, "Run 3"): one batch of
// 6 accumulate jobs of 1 KiB, gathered as ClAccumulateBatch does, run `iters` times, each waited for
// through an event callback (as tandemd's device does). Mode 0: the copy path (write, kernel, read);
// mode 1: fine-grain buffer SVM (the kernel only). Plain OpenCL, not tandem's code:
//   g++ -O2 batch_svm_probe.cc -o /tmp/batch_svm_probe -lOpenCL && /tmp/batch_svm_probe 0 20000
// "cpu/iter" includes the waiting thread's spin: compare wall times.
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <cstdio>
#include <cstring>
#include <vector>
#include <atomic>
#include <chrono>
#include <sys/resource.h>
#include <cstdlib>
static const char* src = R"(
__kernel void acc(__global const ulong* table, __global long* sums) {
  __global const int* data = (__global const int*)table;
  uint job = get_group_id(0); uint lid = get_local_id(0);
  if (lid) return;
  ulong b = table[2*job], e = b + table[2*job+1]; long s = 0;
  for (ulong i = b; i < e; ++i) s += data[i];
  sums[job] = s;
})";
std::atomic<int> done_flag;
void CL_CALLBACK cb(cl_event, cl_int, void*) { done_flag.store(1, std::memory_order_release); }
double cpu() { rusage r; getrusage(RUSAGE_SELF, &r); return r.ru_utime.tv_sec + r.ru_stime.tv_sec + 1e-6*(r.ru_utime.tv_usec + r.ru_stime.tv_usec); }
int main(int argc, char** argv) {
  int mode = atoi(argv[1]); int iters = atoi(argv[2]);
  cl_platform_id p; clGetPlatformIDs(1, &p, nullptr); cl_device_id d; clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, nullptr);
  cl_int err; cl_context ctx = clCreateContext(nullptr, 1, &d, nullptr, nullptr, &err);
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, d, nullptr, &err);
  cl_program prog = clCreateProgramWithSource(ctx, 1, &src, nullptr, &err);
  err = clBuildProgram(prog, 1, &d, "", nullptr, nullptr); if (err) { printf("build %d\n", err); return 1; }
  cl_kernel k = clCreateKernel(prog, "acc", &err);
  const int jobs = 6, words = 16 + jobs * 128;
  std::vector<uint64_t> host(words); std::vector<int64_t> sums(jobs);
  for (int j = 0; j < jobs; ++j) { host[2*j] = (16 + j*128)*2; host[2*j+1] = 256; }
  for (int i = 16; i < words; ++i) host[i] = 0x0000000100000001ull;
  uint64_t* svm = nullptr; int64_t* svms = nullptr; cl_mem in = nullptr, out = nullptr;
  if (mode == 1) {
    svm = (uint64_t*)clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, words*8, 0);
    svms = (int64_t*)clSVMAlloc(ctx, CL_MEM_READ_WRITE | CL_MEM_SVM_FINE_GRAIN_BUFFER, jobs*8, 0);
    if (!svm || !svms) { printf("no svm\n"); return 1; }
  } else {
    in = clCreateBuffer(ctx, CL_MEM_READ_ONLY, words*8, nullptr, &err);
    out = clCreateBuffer(ctx, CL_MEM_WRITE_ONLY, jobs*8, nullptr, &err);
    clSetKernelArg(k, 0, sizeof in, &in); clSetKernelArg(k, 1, sizeof out, &out);
  }
  double c0 = cpu(); auto t0 = std::chrono::steady_clock::now();
  long bad = 0;
  for (int it = 0; it < iters; ++it) {
    size_t g = jobs * 64, l = 64; cl_event ev;
    done_flag.store(0);
    if (mode == 1) {
      memcpy(svm, host.data(), words*8);
      clSetKernelArgSVMPointer(k, 0, svm); clSetKernelArgSVMPointer(k, 1, svms);
      clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &l, 0, nullptr, &ev);
    } else {
      clEnqueueWriteBuffer(q, in, CL_FALSE, 0, words*8, host.data(), 0, nullptr, nullptr);
      clEnqueueNDRangeKernel(q, k, 1, nullptr, &g, &l, 0, nullptr, nullptr);
      clEnqueueReadBuffer(q, out, CL_FALSE, 0, jobs*8, sums.data(), 0, nullptr, &ev);
    }
    clFlush(q);
    clSetEventCallback(ev, CL_COMPLETE, cb, nullptr);
    while (!done_flag.load(std::memory_order_acquire)) __builtin_ia32_pause();
    clReleaseEvent(ev);
    int64_t s0 = mode == 1 ? svms[0] : sums[0]; if (s0 != 256) ++bad;
  }
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("mode %d: %.2f us wall/iter, %.2f us cpu/iter, bad %ld\n", mode, dt/iters*1e6, (cpu()-c0)/iters*1e6, bad);
}
