// The catalog's kernels for CUDA, bit-exact with the software references (src/funcs/ref), written
// once as block bodies over virtual blocks (launch.hpp). The arithmetic mirrors the OpenCL C kernels
// (src/devices/opencl/kernels/*.cl, where each rule is explained): uint sums for matmul's modular
// int32, 64-bit wrapping sums for accumulate, 64-bit intermediates and arithmetic shifts for the
// libjpeg islow DCT, int16 coefficients before quantization.
#include <cstdint>

#include "devices/cuda/launch.hpp"

namespace tandem::devices::cuda {

namespace {

// ---- reductions (accumulate, work): block-wide tree over shared memory ----
__device__ void block_reduce_store(uint64_t value, uint64_t other, bool with_other, int64_t* out_value,
                                   int64_t* out_other) {
  __shared__ uint64_t values[kCudaBlock];
  __shared__ uint64_t others[kCudaBlock];
  const uint32_t t = threadIdx.x;
  values[t] = value;
  others[t] = other;
  __syncthreads();
  for (uint32_t span = kCudaBlock / 2; span > 0; span >>= 1) {
    if (t < span) {
      values[t] += values[t + span];
      others[t] ^= others[t + span];
    }
    __syncthreads();
  }
  if (t == 0) {
    *out_value = static_cast<int64_t>(values[0]);
    if (with_other) *out_other = static_cast<int64_t>(others[0]);
  }
  __syncthreads();  // the shared arrays are reused by the next virtual block
}

__device__ void body_accumulate(const CudaJobParams& p, uint64_t v) {
  const auto* data = static_cast<const int32_t*>(p.in0);
  const uint64_t begin = v * p.chunk;
  const uint64_t end = begin + p.chunk < p.count ? begin + p.chunk : p.count;
  uint64_t sum = 0;
  for (uint64_t i = begin + threadIdx.x; i < end; i += kCudaBlock) sum += static_cast<uint64_t>(static_cast<int64_t>(data[i]));
  block_reduce_store(sum, 0, false, &p.partials[v], nullptr);
}

__device__ void body_work(const CudaJobParams& p, uint64_t v) {
  const uint64_t items = uint64_t{p.groups} * kCudaBlock, gid = v * kCudaBlock + threadIdx.x;
  const uint64_t steps = p.count / items + (gid < p.count % items ? 1 : 0);
  uint64_t x = gid + 1;
  for (uint64_t i = 0; i < steps; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  block_reduce_store(steps, x, true, &p.partials[2 * v], &p.partials[2 * v + 1]);
}

__device__ void body_sobel(const CudaJobParams& p, uint64_t v) {
  const uint64_t blocks_per_row = (p.width + kCudaBlock - 1) / kCudaBlock;
  const uint32_t r = static_cast<uint32_t>(v / blocks_per_row);
  const uint32_t c = static_cast<uint32_t>((v % blocks_per_row) * kCudaBlock + threadIdx.x);
  if (c >= p.width || r >= p.rows) return;
  const auto* in = static_cast<const uint8_t*>(p.in0);
  const uint32_t in_rows = p.rows + p.above + p.below, ir = r + p.above;
  uint8_t value = 0;
  if (c > 0 && c + 1 < p.width && ir > 0 && ir + 1 < in_rows) {
    const uint8_t* up = in + static_cast<size_t>(ir - 1) * p.width + c;
    const uint8_t* mid = up + p.width;
    const uint8_t* down = mid + p.width;
    const int gx = (up[1] + 2 * mid[1] + down[1]) - (up[-1] + 2 * mid[-1] + down[-1]);
    const int gy = (down[-1] + 2 * down[0] + down[1]) - (up[-1] + 2 * up[0] + up[1]);
    const int magnitude = abs(gx) + abs(gy);
    value = static_cast<uint8_t>(magnitude < 255 ? magnitude : 255);
  }
  static_cast<uint8_t*>(p.out)[static_cast<size_t>(r) * p.width + c] = value;
}

__device__ void body_matmul(const CudaJobParams& p, uint64_t v) {
  __shared__ int32_t tile_a[kCudaTile][kCudaTile];
  __shared__ int32_t tile_b[kCudaTile][kCudaTile];
  const uint64_t tiles_per_row = (p.n + kCudaTile - 1) / kCudaTile;
  const uint32_t lr = threadIdx.x / kCudaTile, lc = threadIdx.x % kCudaTile;
  const uint32_t row = static_cast<uint32_t>(v / tiles_per_row) * kCudaTile + lr;
  const uint32_t col = static_cast<uint32_t>(v % tiles_per_row) * kCudaTile + lc;
  const auto* a = static_cast<const int16_t*>(p.in0);
  const auto* b = static_cast<const int16_t*>(p.in1);
  uint32_t acc = 0;
  for (uint32_t t = 0; t < p.k; t += kCudaTile) {
    tile_a[lr][lc] = (row < p.m && t + lc < p.k) ? a[static_cast<size_t>(row) * p.k + t + lc] : 0;
    tile_b[lr][lc] = (col < p.n && t + lr < p.k) ? b[static_cast<size_t>(t + lr) * p.n + col] : 0;
    __syncthreads();
    for (uint32_t x = 0; x < kCudaTile; ++x) acc += static_cast<uint32_t>(tile_a[lr][x] * tile_b[x][lc]);
    __syncthreads();
  }
  if (row < p.m && col < p.n) static_cast<int32_t*>(p.out)[static_cast<size_t>(row) * p.n + col] = static_cast<int32_t>(acc);
}

// ---- dct_quant (libjpeg islow) ----
constexpr int kConstBits = 13;
constexpr int kPass1Bits = 2;

__device__ int64_t descale(int64_t v, int n) { return (v + (int64_t{1} << (n - 1))) >> n; }

__device__ void islow_pass(int64_t* x, int stride, bool row_pass) {
  const int odd_shift = row_pass ? kConstBits - kPass1Bits : kConstBits + kPass1Bits;
  const int64_t x0 = x[0], x1 = x[stride], x2 = x[2 * stride], x3 = x[3 * stride];
  const int64_t x4 = x[4 * stride], x5 = x[5 * stride], x6 = x[6 * stride], x7 = x[7 * stride];
  const int64_t s07 = x0 + x7, d07 = x0 - x7, s16 = x1 + x6, d16 = x1 - x6;
  const int64_t s25 = x2 + x5, d25 = x2 - x5, s34 = x3 + x4, d34 = x3 - x4;
  const int64_t e0 = s07 + s34, e3 = s07 - s34, e1 = s16 + s25, e2 = s16 - s25;
  if (row_pass) {
    x[0] = (e0 + e1) * (int64_t{1} << kPass1Bits);
    x[4 * stride] = (e0 - e1) * (int64_t{1} << kPass1Bits);
  } else {
    x[0] = descale(e0 + e1, kPass1Bits);
    x[4 * stride] = descale(e0 - e1, kPass1Bits);
  }
  const int64_t rot = (e2 + e3) * 4433;
  x[2 * stride] = descale(rot + e3 * 6270, odd_shift);
  x[6 * stride] = descale(rot - e2 * 15137, odd_shift);
  const int64_t p1 = d34 + d07, p2 = d25 + d16, p3 = d34 + d16, p4 = d25 + d07;
  const int64_t common = (p3 + p4) * 9633;
  const int64_t t4 = d34 * 2446, t5 = d25 * 16819, t6 = d16 * 25172, t7 = d07 * 12299;
  const int64_t q1 = -p1 * 7373, q2 = -p2 * 20995;
  const int64_t q3 = -p3 * 16069 + common, q4 = -p4 * 3196 + common;
  x[7 * stride] = descale(t4 + q1 + q3, odd_shift);
  x[5 * stride] = descale(t5 + q2 + q4, odd_shift);
  x[3 * stride] = descale(t6 + q2 + q3, odd_shift);
  x[stride] = descale(t7 + q1 + q4, odd_shift);
}

__device__ void body_dct_quant(const CudaJobParams& p, uint64_t v) {
  const uint64_t b = v * kCudaBlock + threadIdx.x;
  if (b >= p.count) return;
  int64_t coef[64];
  if (p.mode == 2) {
    const int16_t* in = static_cast<const int16_t*>(p.in0) + b * 64;
    for (int i = 0; i < 64; ++i) coef[i] = in[i];
  } else {
    const uint8_t* in = static_cast<const uint8_t*>(p.in0) + b * 64;
    for (int i = 0; i < 64; ++i) coef[i] = int64_t{in[i]} - 128;
    for (int r = 0; r < 8; ++r) islow_pass(coef + r * 8, 1, true);
    for (int c = 0; c < 8; ++c) islow_pass(coef + c, 8, false);
    for (int i = 0; i < 64; ++i) coef[i] = static_cast<int16_t>(coef[i]);
  }
  int16_t* out = static_cast<int16_t*>(p.out) + b * 64;
  if (p.mode == 1) {
    for (int i = 0; i < 64; ++i) out[i] = static_cast<int16_t>(coef[i]);
    return;
  }
  const auto* table = static_cast<const uint16_t*>(p.in1);
  for (int i = 0; i < 64; ++i) {
    const int32_t divisor = int32_t{table[i]} * 8;
    const int32_t c = static_cast<int32_t>(coef[i]);
    const int32_t magnitude = ((c < 0 ? -c : c) + divisor / 2) / divisor;
    out[i] = static_cast<int16_t>(c < 0 ? -magnitude : magnitude);
  }
}

__device__ void run_virtual_block(const CudaJobParams& p, uint64_t v) {
  switch (static_cast<KernelId>(p.kernel)) {
    case KernelId::nop: break;
    case KernelId::accumulate: body_accumulate(p, v); break;
    case KernelId::work: body_work(p, v); break;
    case KernelId::sobel: body_sobel(p, v); break;
    case KernelId::matmul: body_matmul(p, v); break;
    case KernelId::dct_quant: body_dct_quant(p, v); break;
  }
}

// Launch-per-job: one kernel per body, so each gets its own register allocation.
template <void (*Body)(const CudaJobParams&, uint64_t)>
__global__ void __launch_bounds__(kCudaBlock) job_kernel(CudaJobParams p) {
  for (uint64_t v = blockIdx.x; v < p.virtual_blocks; v += gridDim.x) Body(p, v);
}

__global__ void empty_kernel() {}

// Fault injection (tests): a kernel that stops the device with an error, which loses the context.
__global__ void trap_kernel() { __trap(); }

__global__ void __launch_bounds__(kCudaBlock) persistent_kernel(CudaRing* ring) {
  // The entry is copied in 8-byte words, one per thread: a single round trip across the bus rather
  // than one per field.
  constexpr uint32_t kEntryWords = sizeof(CudaJobParams) / sizeof(uint64_t);
  static_assert(sizeof(CudaJobParams) % sizeof(uint64_t) == 0 && alignof(CudaJobParams) >= alignof(uint64_t) &&
                kEntryWords <= kCudaBlock);
  __shared__ uint64_t entry[kEntryWords];
  __shared__ int stop;
  volatile CudaRing* r = ring;
  if (threadIdx.x == 0) r->running = 1;
  for (uint64_t seq = r->done;; ++seq) {
    if (threadIdx.x == 0) {
      // Poll the head; back off up to ~1 us between reads (each one crosses the bus). Bounded by stop.
      uint32_t backoff = 32;
      stop = 0;
      while (r->head <= seq) {
        if (r->stop != 0) {
          stop = 1;
          break;
        }
        __nanosleep(backoff);
        if (backoff < 1024) backoff *= 2;
      }
      // Acquire: the head that published the entry before the entry, for the whole block (the
      // barrier below carries the order to the threads that copy it).
      if (stop == 0) __threadfence_system();
    }
    __syncthreads();
    if (stop != 0) return;
    if (threadIdx.x < kEntryWords) {
      entry[threadIdx.x] = reinterpret_cast<const volatile uint64_t*>(&r->entries[seq % kRingDepth])[threadIdx.x];
    }
    __syncthreads();
    CudaJobParams p;
    memcpy(&p, entry, sizeof p);
    for (uint64_t v = 0; v < p.virtual_blocks; ++v) {
      run_virtual_block(p, v);
      __syncthreads();
    }
    __threadfence_system();  // release: this thread's results before the completion
    __syncthreads();
    if (threadIdx.x == 0) r->done = seq + 1;
  }
}

uint32_t grid_for(uint64_t virtual_blocks) {
  constexpr uint64_t kMaxGrid = 1u << 20;  // blocks take further virtual blocks grid-stride
  return static_cast<uint32_t>(virtual_blocks < kMaxGrid ? virtual_blocks : kMaxGrid);
}

}  // namespace

void shape_job(const KernelJob& job, uint32_t reduction_groups, CudaJobParams& p) {
  p.kernel = static_cast<uint32_t>(job.kernel);
  p.count = job.count;
  p.width = job.width;
  p.rows = job.rows;
  p.above = job.above;
  p.below = job.below;
  p.m = job.m;
  p.k = job.k;
  p.n = job.n;
  p.mode = job.mode;
  p.groups = 0;
  p.chunk = 0;
  switch (job.kernel) {
    case KernelId::nop: p.virtual_blocks = 0; break;
    case KernelId::accumulate:
    case KernelId::work: {
      const uint64_t blocks = (job.count + kCudaBlock - 1) / kCudaBlock;
      p.groups = static_cast<uint32_t>(blocks < 1 ? 1 : (blocks > reduction_groups ? reduction_groups : blocks));
      p.chunk = (job.count + p.groups - 1) / p.groups;
      p.virtual_blocks = p.groups;
      break;
    }
    case KernelId::sobel: p.virtual_blocks = uint64_t{job.rows} * ((job.width + kCudaBlock - 1) / kCudaBlock); break;
    case KernelId::matmul:
      p.virtual_blocks = uint64_t{(job.m + kCudaTile - 1) / kCudaTile} * ((job.n + kCudaTile - 1) / kCudaTile);
      break;
    case KernelId::dct_quant: p.virtual_blocks = (job.count + kCudaBlock - 1) / kCudaBlock; break;
  }
}

cudaError_t launch_job(const CudaJobParams& p, cudaStream_t stream) {
  const uint32_t grid = grid_for(p.virtual_blocks);
  switch (static_cast<KernelId>(p.kernel)) {
    case KernelId::nop: empty_kernel<<<1, 1, 0, stream>>>(); break;
    case KernelId::accumulate: job_kernel<body_accumulate><<<grid, kCudaBlock, 0, stream>>>(p); break;
    case KernelId::work: job_kernel<body_work><<<grid, kCudaBlock, 0, stream>>>(p); break;
    case KernelId::sobel: job_kernel<body_sobel><<<grid, kCudaBlock, 0, stream>>>(p); break;
    case KernelId::matmul: job_kernel<body_matmul><<<grid, kCudaBlock, 0, stream>>>(p); break;
    case KernelId::dct_quant: job_kernel<body_dct_quant><<<grid, kCudaBlock, 0, stream>>>(p); break;
  }
  return cudaGetLastError();
}

cudaError_t launch_empty(cudaStream_t stream) {
  empty_kernel<<<1, 1, 0, stream>>>();
  return cudaGetLastError();
}

cudaError_t launch_fault(CudaFault fault, cudaStream_t stream) {
  if (fault == CudaFault::trap) {
    trap_kernel<<<1, 1, 0, stream>>>();
  } else {
    empty_kernel<<<1, 4 * kCudaBlock * kCudaBlock, 0, stream>>>();  // more threads than a block may have
  }
  return cudaGetLastError();
}

cudaError_t launch_persistent(CudaRing* ring, cudaStream_t stream) {
  persistent_kernel<<<1, kCudaBlock, 0, stream>>>(ring);
  return cudaGetLastError();
}

}  // namespace tandem::devices::cuda
