// The job tables' storage (src/base/chunked_table.hpp): memory follows the ids in use, not the capacity.
#include <gtest/gtest.h>

#include <memory>
#include <utility>

#include "base/chunked_table.hpp"

namespace tandem {
namespace {

struct Entry {
  int value = 7;  // value-initialized elements carry their default member initializers
  std::unique_ptr<int> owned;
};

TEST(ChunkedTable, ChunksAreAllocatedOnFirstUseAndNeverMove) {
  ChunkedTable<Entry, 4> table(100);  // chunks of 16: 7 of them
  EXPECT_EQ(table.capacity(), 112u);
  EXPECT_EQ(table.chunks_in_use(), 0u);
  Entry& first = table[3];
  EXPECT_EQ(first.value, 7);
  first.value = 1;
  EXPECT_EQ(table.chunks_in_use(), 1u);
  table[15].value = 2;  // the same chunk
  EXPECT_EQ(table.chunks_in_use(), 1u);
  table[99].value = 3;  // the last chunk, allocated alone
  EXPECT_EQ(table.chunks_in_use(), 2u);
  EXPECT_EQ(&table[3], &first);  // earlier elements stay where they were
  EXPECT_EQ(table[3].value, 1);
  EXPECT_EQ(table[50].value, 7);
  EXPECT_EQ(table.chunks_in_use(), 3u);
  ChunkedTable<Entry, 4> moved(std::move(table));
  EXPECT_EQ(&moved[3], &first);  // a move keeps the chunks
  EXPECT_EQ(moved[99].value, 3);
}

TEST(ChunkedTable, ACopyHoldsOnlyTheChunksInUse) {
  ChunkedTable<int, 4> table(1024);
  table[0] = 5;
  table[700] = 6;
  ChunkedTable<int, 4> copy(table);
  EXPECT_EQ(copy.chunks_in_use(), 2u);
  EXPECT_EQ(copy[0], 5);
  EXPECT_EQ(copy[700], 6);
  copy[0] = 8;  // a copy, not a view
  EXPECT_EQ(table[0], 5);
  ChunkedTable<int, 4> assigned;
  assigned = copy;
  EXPECT_EQ(assigned.capacity(), 1024u);
  EXPECT_EQ(assigned[0], 8);
  EXPECT_EQ(assigned.chunks_in_use(), 2u);
}

}  // namespace
}  // namespace tandem
