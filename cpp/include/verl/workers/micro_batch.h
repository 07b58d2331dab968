// How the workers cut a batch: mini-batches in verl's DataLoader order, and micro-batches either of a
// fixed row count or by a token budget (verl/utils/seqlen_balancing.py: Karmarkar-Karp partitions
// balanced by attention workload, with verl's exact tie-breaking and micro-batch ordering).
// Used by the actor and critic workers; the partitions equal verl's, row for row.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::workers {

using RowGroups = std::vector<std::vector<int64_t>>;

// Row indices of every mini-batch over `epochs` epochs, exactly as verl's tu.make_iterator
// (a torch DataLoader over arange(n) with batch_size=mini_batch_size and a generator seeded with
// `seed`): without shuffle 0..n-1 each epoch; with shuffle the permutations torch's RandomSampler
// draws. DataError unless n % mini_batch_size == 0.
VERL_API RowGroups mini_batch_rows(int64_t n, int64_t mini_batch_size, int64_t epochs, int64_t seed, bool shuffle);

// Consecutive micro-batches of micro_batch_size rows (the last may be shorter).
VERL_API RowGroups fixed_micro_batches(int64_t n, int64_t micro_batch_size);

// verl's calculate_workload: 24576 * seqlen + seqlen^2.
VERL_API int64_t attention_workload(int64_t seqlen);

// verl's karmarkar_karp (largest differencing method) with Python heapq's order, so ties break as
// in verl. Returns k partitions of indices into `values` (unsorted, as verl's).
VERL_API RowGroups karmarkar_karp(const std::vector<int64_t>& values, int64_t k_partitions, bool equal_size);
// verl's get_seqlen_balanced_partitions: karmarkar_karp with each partition sorted; InvalidArgument
// when fewer values than partitions or a partition comes out empty.
VERL_API RowGroups get_seqlen_balanced_partitions(const std::vector<int64_t>& values, int64_t k_partitions,
                                                  bool equal_size);

// verl's rearrange_micro_batches for one rank: seq_lens are the valid tokens per row. At least
// ceil(sum / max_token_len) micro-batches, raised until every micro-batch holds at most
// max_token_len tokens; partitions balanced by attention workload; with `balance` ordered by
// workload and interleaved as verl does. InvalidArgument when a row is longer than max_token_len.
VERL_API RowGroups dynamic_micro_batches(const std::vector<int64_t>& seq_lens, int64_t max_token_len,
                                         bool balance = true,
                                         std::optional<int64_t> min_num_micro_batch = std::nullopt);

// Inverse of the concatenated groups: out[row] = position of `row` in the concatenation. (n,) int64.
VERL_API torch::Tensor restore_order(const RowGroups& groups, int64_t n);

}  // namespace verl::workers
