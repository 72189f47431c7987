// A table indexed by small integers (job ids) whose storage comes in chunks, allocated when an index
// of the chunk is first used. Ids that are never used cost no memory and no start-up time: the engine
// and the dispatcher size their job tables for 65,536 jobs, which, allocated and constructed whole,
// made every runtime's start 45 MB of page faults for the few dozen jobs a short program has in flight.
// An element's address never changes (chunks are never moved), so references stay valid as the table
// fills. Header-only, in the base layer.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace tandem {

template <class T, unsigned ChunkBits = 10>
class ChunkedTable {
 public:
  static constexpr size_t kChunk = size_t{1} << ChunkBits;

  explicit ChunkedTable(size_t capacity = 0) : chunks_((capacity + kChunk - 1) / kChunk) {}
  ChunkedTable(ChunkedTable&&) noexcept = default;
  ChunkedTable& operator=(ChunkedTable&&) noexcept = default;
  // A copy holds copies of the chunks in use only (the packet fuzzer copies an engine per input).
  ChunkedTable(const ChunkedTable& other) : chunks_(other.chunks_.size()) {
    for (size_t c = 0; c < chunks_.size(); ++c) {
      if (!other.chunks_[c]) continue;
      chunks_[c] = std::make_unique<T[]>(kChunk);
      for (size_t i = 0; i < kChunk; ++i) chunks_[c][i] = other.chunks_[c][i];
    }
  }
  ChunkedTable& operator=(const ChunkedTable& other) {
    if (this != &other) *this = ChunkedTable(other);
    return *this;
  }

  // Every index below capacity() is valid; an index's chunk is allocated (its elements value-
  // initialized) on the first access to any of them.
  size_t capacity() const { return chunks_.size() * kChunk; }
  T& operator[](size_t i) {
    std::unique_ptr<T[]>& chunk = chunks_[i >> ChunkBits];
    if (!chunk) [[unlikely]] chunk = std::make_unique<T[]>(kChunk);
    return chunk[i & (kChunk - 1)];
  }
  const T& operator[](size_t i) const { return const_cast<ChunkedTable&>(*this)[i]; }
  // Chunks allocated so far (tests: memory grows with the ids in use, not with the capacity).
  size_t chunks_in_use() const {
    size_t n = 0;
    for (const auto& c : chunks_) n += c ? 1 : 0;
    return n;
  }

 private:
  std::vector<std::unique_ptr<T[]>> chunks_;
};

}  // namespace tandem
