// verl's _balance_batch (RayPPOTrainer, trainer.balance_batch): the batch's rows reordered so that each data-parallel
// rank's share carries about the same attention workload.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/trainer/metrics.h"

namespace verl::trainer::detail {

struct BalancedOrder {
  std::vector<int64_t> order;  // row indices: rank r's partition is the r-th world_size-th of them
  Metrics metrics;             // verl's global_seqlen/{min,max,minmax_diff,balanced_min,balanced_max,mean}
};

// One partition of equal size per rank (Karmarkar-Karp over the rows' attention workloads, verl's
// get_seqlen_balanced_partitions), each ordered with its lighter rows at both ends (the order its mini-batches see).
// `attention_mask`: (rows, seq) on any device.
VERL_API BalancedOrder balance_batch(const torch::Tensor& attention_mask, int64_t world_size);

}  // namespace verl::trainer::detail
