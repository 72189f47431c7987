// In its own translation unit so the compiler never sees malloc-backed new and free-backed delete
// inlined together (g++ would warn about a mismatch that is not one).
#include "alloc_counter.hpp"

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> g_counting{false};
std::atomic<uint64_t> g_count{0};
}  // namespace

namespace tandem::testing {

void count_allocations(bool on) {
  if (on) g_count.store(0, std::memory_order_relaxed);
  g_counting.store(on, std::memory_order_relaxed);
}

uint64_t allocations_counted() { return g_count.load(std::memory_order_relaxed); }

}  // namespace tandem::testing

void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_count.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
