// verl's _balance_batch (see trainer/balance_batch.h).
#include "trainer/balance_batch.h"

#include <algorithm>
#include <utility>

#include "verl/workers/micro_batch.h"

namespace verl::trainer::detail {

BalancedOrder balance_batch(const torch::Tensor& attention_mask, int64_t world_size) {
  const torch::Tensor seqlen_t = attention_mask.to(torch::kCPU, torch::kLong).sum(-1).contiguous();
  const std::vector<int64_t> seqlens(seqlen_t.data_ptr<int64_t>(), seqlen_t.data_ptr<int64_t>() + seqlen_t.numel());
  std::vector<int64_t> workloads;
  workloads.reserve(seqlens.size());
  for (int64_t s : seqlens) workloads.push_back(workers::attention_workload(s));
  // One partition per data-parallel rank; rank r gets partition r (the rows are split in order).
  workers::RowGroups partitions = workers::get_seqlen_balanced_partitions(workloads, world_size, /*equal_size=*/true);
  BalancedOrder out;
  for (auto& part : partitions) {
    std::sort(part.begin(), part.end(), [&](int64_t a, int64_t b) {
      return std::make_pair(workloads[static_cast<size_t>(a)], a) < std::make_pair(workloads[static_cast<size_t>(b)], b);
    });
    // Ascending rows at even places first, then the odd places descending: light at both ends, heavy in the middle.
    std::vector<int64_t> ordered;
    for (size_t i = 0; i < part.size(); i += 2) ordered.push_back(part[i]);
    std::vector<int64_t> odd;
    for (size_t i = 1; i < part.size(); i += 2) odd.push_back(part[i]);
    ordered.insert(ordered.end(), odd.rbegin(), odd.rend());
    part = ordered;
    out.order.insert(out.order.end(), part.begin(), part.end());
  }
  out.metrics = log_seqlen_unbalance(seqlens, partitions, "global_seqlen");
  return out;
}

}  // namespace verl::trainer::detail
