// CUDA graphs of the rollout engine's decode forward (issue 17 item 3): CausalLM::forward_cached over one
// token per row, captured once per bucket (batch size x block-table width) and replayed, so a decode step costs
// one graph launch instead of one launch per op (about 25 per layer), and its inputs reach the GPU in one copy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"
#include "verl/rollout/kv_cache.h"

namespace verl::rollout {

// The inputs a decode graph reads, at fixed addresses: ids, positions and KV slots (max_rows,) and block tables
// (rows, blocks) in one int64 buffer on the device, filled per step from host arrays with one copy (from pinned
// memory, asynchronous, on CUDA). A batch of bs rows x max_blocks table columns is padded to a graph's bucket of
// `rows` x `blocks` as Engine::run pads: token 0 at position 0, written to the scratch slot 0, reading block 0.
// Device-generic, so the CPU tests check what the graphs capture.
class VERL_API DecodeInputs {
 public:
  DecodeInputs(int64_t max_rows, int64_t max_blocks, torch::Device device);
  int64_t max_rows() const { return max_rows_; }
  int64_t max_blocks() const { return max_blocks_; }
  // Host arrays as Engine::run builds them: ids, positions, slots (bs,), tables (bs, max_blocks) row-major, laid
  // out for a bucket of `rows` x `blocks`: bs <= rows <= max_rows(), max_blocks <= blocks <= max_blocks().
  // `device_ids`, when defined: the bs ids as a tensor on the buffer's device (an async-scheduled step's input, the
  // previous step's tokens still in flight), copied there on the device after the host arrays; `ids` is then not
  // read.
  void stage(const int64_t* ids, const int64_t* positions, const int64_t* slots, const int64_t* tables, int64_t bs,
             int64_t max_blocks, int64_t rows, int64_t blocks, const torch::Tensor& device_ids = {});
  // CausalLM::forward_cached over the staged bucket (the last stage()'s rows x blocks): logits (rows, vocab).
  torch::Tensor forward(model::CausalLM& model, PagedKVCache& cache, int64_t rows, int64_t blocks) const;

 private:
  int64_t max_rows_, max_blocks_;
  torch::Tensor buffer_;  // ids | positions | slots (max_rows each) | tables (the staged bucket's rows x blocks)
  torch::Tensor head_;    // (max_rows,) zeros: one token per row
};

class DecodeGraphs {
 public:
  virtual ~DecodeGraphs() = default;
  // The logits (bs, vocab) at the rows' new tokens. Host arrays, as Engine::run builds them: ids, positions and
  // KV slots (bs,), block tables (bs, max_blocks) row-major. An undefined tensor when no graph serves the batch
  // (bs above the largest bucket, or more blocks per row than the graphs were captured for): run it eagerly.
  // `device_ids`: as DecodeInputs::stage.
  virtual torch::Tensor run(const int64_t* ids, const int64_t* positions, const int64_t* slots,
                            const int64_t* tables, int64_t bs, int64_t max_blocks,
                            const torch::Tensor& device_ids) = 0;
  virtual int64_t num_captured() const = 0;
  // Drops every graph and its memory pool (Engine::sleep: the memory goes back to the caching allocator); they are
  // captured again when next used.
  virtual void clear() = 0;
};

// Batch-size buckets: `sizes` (vLLM's cudagraph_capture_sizes) sorted, without repeats and without those above
// max_num_seqs; when empty, 1, 2, 4, 8, every multiple of 16 below max_num_seqs, and max_num_seqs. A batch pads up
// to the next bucket; one above the largest runs eagerly. A size below 1 is an InvalidArgument.
VERL_API std::vector<int64_t> decode_graph_sizes(std::vector<int64_t> sizes, int64_t max_num_seqs);

// Makes graphs over `model` decoding through `cache` (which must decode with the paged-attention kernel) for rows
// of up to max_blocks KV blocks. A graph serves a bucket of rows (`sizes`) x table columns (powers of two from 4,
// capped at max_blocks: the kernel's scratch follows the context, not max_model_len). Graphs are captured lazily,
// the first time a bucket is used, from the batch at hand; they are dropped and captured again when the model's
// parameters or the KV pools have moved (update_weights with new tensors, sleep / wake_up), which the graphs would
// otherwise read stale.
using DecodeGraphsFactory = std::unique_ptr<DecodeGraphs> (*)(std::shared_ptr<model::CausalLM> model,
                                                              PagedKVCache& cache, std::vector<int64_t> sizes,
                                                              int64_t max_blocks);
// The CUDA implementation (rollout/cuda/decode_graphs.cpp) sets it when libverl loads; null in builds without
// VERL_WITH_CUDA, whose engines decode eagerly. (A registration rather than a macro: the engine compiles the same
// in both builds.)
DecodeGraphsFactory& cuda_decode_graphs_factory();

}  // namespace verl::rollout
