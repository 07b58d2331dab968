// The decode graphs' static inputs and batch-size buckets (decode_graphs.h); the graphs themselves are CUDA
// code (rollout/cuda/decode_graphs.cpp).
#include "rollout/decode_graphs.h"

#include <algorithm>

#include "verl/core/error.h"

namespace verl::rollout {

DecodeInputs::DecodeInputs(int64_t max_rows, int64_t max_blocks, torch::Device device)
    : max_rows_(max_rows), max_blocks_(max_blocks) {
  VERL_CHECK(max_rows >= 1 && max_blocks >= 1, "DecodeInputs: max_rows and max_blocks must be >= 1, got ", max_rows,
             " and ", max_blocks);
  const auto longs = torch::TensorOptions().dtype(torch::kLong).device(device);
  buffer_ = torch::zeros({max_rows * (3 + max_blocks)}, longs);
  head_ = torch::zeros({max_rows}, longs);
}

void DecodeInputs::stage(const int64_t* ids, const int64_t* positions, const int64_t* slots, const int64_t* tables,
                         int64_t bs, int64_t max_blocks, int64_t rows, int64_t blocks,
                         const torch::Tensor& device_ids) {
  VERL_CHECK(bs >= 1 && bs <= rows && rows <= max_rows_ && max_blocks >= 1 && max_blocks <= blocks &&
                 blocks <= max_blocks_,
             "DecodeInputs: a batch of ", bs, " rows x ", max_blocks, " blocks does not fit a bucket of ", rows, " x ",
             blocks, " (at most ", max_rows_, " x ", max_blocks_, ")");
  // Only what the bucket reads: ids, positions and slots, then its rows x blocks tables.
  const int64_t used = 3 * max_rows_ + rows * blocks;
  // On CUDA, pinned memory from LibTorch's caching host allocator: the asynchronous copy records an event on the
  // block, which is not handed out again before the copy has read it.
  const bool cuda = buffer_.is_cuda();
  torch::Tensor host = torch::empty({used}, torch::TensorOptions().dtype(torch::kLong).pinned_memory(cuda));
  int64_t* h = host.data_ptr<int64_t>();
  std::fill(h, h + used, int64_t{0});
  if (!device_ids.defined()) std::copy(ids, ids + bs, h);
  std::copy(positions, positions + bs, h + max_rows_);
  std::copy(slots, slots + bs, h + 2 * max_rows_);
  for (int64_t i = 0; i < bs; ++i)
    std::copy(tables + i * max_blocks, tables + (i + 1) * max_blocks, h + 3 * max_rows_ + i * blocks);
  buffer_.narrow(0, 0, used).copy_(host, /*non_blocking=*/cuda);
  if (device_ids.defined()) {
    VERL_CHECK(device_ids.numel() == bs && device_ids.scalar_type() == torch::kLong &&
                   device_ids.device() == buffer_.device(),
               "DecodeInputs: device_ids must be ", bs, " int64 ids on ", buffer_.device().str(), ", got ",
               device_ids.sizes(), " ", c10::toString(device_ids.scalar_type()), " on ", device_ids.device().str());
    buffer_.narrow(0, 0, bs).copy_(device_ids.reshape({bs}), /*non_blocking=*/true);
  }
}

torch::Tensor DecodeInputs::forward(model::CausalLM& model, PagedKVCache& cache, int64_t rows, int64_t blocks) const {
  VERL_CHECK(rows >= 1 && rows <= max_rows_ && blocks >= 1 && blocks <= max_blocks_, "DecodeInputs: a bucket of ",
             rows, " rows x ", blocks, " blocks does not fit ", max_rows_, " x ", max_blocks_);
  const torch::Tensor ids = buffer_.narrow(0, 0, rows).view({rows, 1});
  const torch::Tensor positions = buffer_.narrow(0, max_rows_, rows).view({rows, 1});
  const torch::Tensor slots = buffer_.narrow(0, 2 * max_rows_, rows);
  const torch::Tensor tables = buffer_.narrow(0, 3 * max_rows_, rows * blocks).view({rows, blocks});
  cache.set_batch({slots, tables, positions});
  return model.forward_cached(ids, positions, cache, torch::Tensor(), head_.narrow(0, 0, rows));
}

DecodeGraphsFactory& cuda_decode_graphs_factory() {
  static DecodeGraphsFactory factory = nullptr;
  return factory;
}

std::vector<int64_t> decode_graph_sizes(std::vector<int64_t> sizes, int64_t max_num_seqs) {
  VERL_CHECK(max_num_seqs >= 1, "decode graphs: max_num_seqs must be >= 1, got ", max_num_seqs);
  if (sizes.empty()) {
    // Small batches one by one up to 8, then steps of 16, then max_num_seqs (the largest batch the scheduler
    // forms): padding a batch to its bucket adds at most 15 rows, which cost little next to reading the weights.
    for (int64_t s : {1, 2, 4, 8}) sizes.push_back(s);
    for (int64_t s = 16; s < max_num_seqs; s += 16) sizes.push_back(s);
    sizes.push_back(max_num_seqs);
  }
  for (int64_t s : sizes) VERL_CHECK(s >= 1, "cudagraph_capture_sizes: sizes must be >= 1, got ", s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  // As in vLLM, a batch above the largest size runs eagerly.
  while (!sizes.empty() && sizes.back() > max_num_seqs) sizes.pop_back();
  return sizes;
}

}  // namespace verl::rollout
