// Software reference of list_walk (seed 004 Table 1's pointer-chasing workload): follow a linked list
// laid out at random in memory, summing its values.
#pragma once

#include <cstdint>
#include <span>

#include "tandem/tandem_abi.h"

namespace tandem::funcs::ref {

// The sum (modulo 2^64) of the values of the first `max_nodes` nodes from `head`, in this process's
// memory; a next of 0 ends the list early.
int64_t list_walk(const tandem_list_node_t* head, uint64_t max_nodes);

// Links every node of `nodes` into one list in a random order drawn from `seed` (node i gets value
// i + 1, so a full walk sums n (n + 1) / 2); returns its head (null for no nodes).
tandem_list_node_t* link_random_list(std::span<tandem_list_node_t> nodes, uint64_t seed);

}  // namespace tandem::funcs::ref
