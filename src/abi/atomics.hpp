// Memory-ordering helpers over plain fields of the shared C structures (std::atomic_ref).
// The ordering is in the name, so each acquire/release pair can be labelled where it is used.
#pragma once

#include <atomic>
#include <cstdint>

namespace tandem::abi {

template <class T>
inline T load_acquire(const T& field) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_acquire);
}

template <class T>
inline T load_relaxed(const T& field) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_relaxed);
}

template <class T>
inline T load_seq_cst(const T& field) {
  return std::atomic_ref<T>(const_cast<T&>(field)).load(std::memory_order_seq_cst);
}

template <class T>
inline void store_release(T& field, T value) {
  std::atomic_ref<T>(field).store(value, std::memory_order_release);
}

template <class T>
inline void store_relaxed(T& field, T value) {
  std::atomic_ref<T>(field).store(value, std::memory_order_relaxed);
}

template <class T>
inline void store_seq_cst(T& field, T value) {
  std::atomic_ref<T>(field).store(value, std::memory_order_seq_cst);
}

template <class T>
inline T fetch_add_acq_rel(T& field, T delta) {
  return std::atomic_ref<T>(field).fetch_add(delta, std::memory_order_acq_rel);
}

template <class T>
inline T fetch_add_seq_cst(T& field, T delta) {
  return std::atomic_ref<T>(field).fetch_add(delta, std::memory_order_seq_cst);
}

template <class T>
inline T exchange_relaxed(T& field, T value) {
  return std::atomic_ref<T>(field).exchange(value, std::memory_order_relaxed);
}

template <class T>
inline T fetch_or_seq_cst(T& field, T bits) {
  return std::atomic_ref<T>(field).fetch_or(bits, std::memory_order_seq_cst);
}

template <class T>
inline T fetch_and_seq_cst(T& field, T bits) {
  return std::atomic_ref<T>(field).fetch_and(bits, std::memory_order_seq_cst);
}

template <class T>
inline bool compare_exchange_acq_rel(T& field, T& expected, T desired) {
  return std::atomic_ref<T>(field).compare_exchange_weak(expected, desired, std::memory_order_acq_rel,
                                                        std::memory_order_relaxed);
}

// Full fence: the store-then-load handshakes (NEED_WAKEUP vs. new packet, waiters vs. status) need it.
inline void fence_seq_cst() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// Polite spinning: tells the core we are in a spin loop (lower power, faster exit on x86).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace tandem::abi
