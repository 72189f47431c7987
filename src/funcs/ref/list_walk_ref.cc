#include "funcs/ref/list_walk_ref.hpp"

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace tandem::funcs::ref {

int64_t list_walk(const tandem_list_node_t* head, uint64_t max_nodes) {
  uint64_t sum = 0;
  const tandem_list_node_t* node = head;
  for (uint64_t i = 0; i < max_nodes && node != nullptr; ++i) {
    tandem_list_node_t copy;
    std::memcpy(&copy, node, sizeof copy);  // a node may be misaligned in a caller's layout
    sum += static_cast<uint64_t>(copy.value);
    node = reinterpret_cast<const tandem_list_node_t*>(static_cast<uintptr_t>(copy.next));
  }
  return static_cast<int64_t>(sum);
}

tandem_list_node_t* link_random_list(std::span<tandem_list_node_t> nodes, uint64_t seed) {
  if (nodes.empty()) return nullptr;
  std::vector<uint32_t> order(nodes.size());
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  for (size_t i = 0; i < order.size(); ++i) {
    tandem_list_node_t& n = nodes[order[i]];
    n.value = static_cast<int64_t>(order[i]) + 1;
    n.next = i + 1 < order.size() ? reinterpret_cast<uintptr_t>(&nodes[order[i + 1]]) : 0;
  }
  return &nodes[order[0]];
}

}  // namespace tandem::funcs::ref
