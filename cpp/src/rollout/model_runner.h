// The rollout engine's model runner, vLLM's seam between the engine core and the model (docs/architecture.md,
// section 2): the model and its paged KV cache, the forward over a step's chunks (padded or packed, the CUDA decode
// graphs), the sampling of a step's rows with its asynchronous read-back (the device side of a step in flight), the
// weight writes and sleep / wake. The engine core (verl/rollout/engine.h) keeps the requests, the scheduler, the step
// loop and abort, and calls the runner between steps only. Private to libverl.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "kernels/host_copy.h"
#include "rollout/decode_graphs.h"
#include "verl/model/transformer.h"
#include "verl/rollout/engine.h"
#include "verl/rollout/kv_cache.h"
#include "verl/rollout/sampler.h"
#include "verl/rollout/scheduler.h"

namespace verl::rollout::detail {

// A step's sampled rows, launched on the device and copied back to the host asynchronously: read after wait().
struct SampledRows {
  torch::Tensor tokens;  // (rows,) int64 on the model's device: the next step's ids when launched ahead
  // (2, rows) int32 on its way to the host: the tokens, then the float32 log-probs' bits
  kernels::HostCopy copy;

  void wait() const { copy.wait(); }
  // A step launched on another thread's stream reads `tokens`: it waits for this step's point on the device.
  void order_next_step() const { copy.order_stream(tokens.device()); }
  const int32_t* token_ids() const { return copy.host[0].const_data_ptr<int32_t>(); }
  const float* logprobs() const { return copy.host[1].view(torch::kFloat).const_data_ptr<float>(); }
};

class ModelRunner {
 public:
  // Sizes the KV cache from `config` (kv_cache_bytes, or enough for max_num_seqs sequences of max_model_len tokens)
  // and captures CUDA decode graphs where they apply. InvalidArgument for a cache of fewer than 2 blocks.
  ModelRunner(std::shared_ptr<model::CausalLM> model, const EngineConfig& config, int64_t max_model_len);

  const std::shared_ptr<model::CausalLM>& model() const { return model_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t num_graph_captures() const;

  // The logits of each chunk's last token (one row per chunk), its keys and values written into the cache first.
  // `ahead_ids` (one decode token per chunk): the ids on the device, sampled by the step launched before.
  torch::Tensor run(const std::vector<Chunk>& chunks, const torch::Tensor& ahead_ids = {});
  void copy_blocks(const std::vector<std::pair<int64_t, int64_t>>& copies);
  // Samples rows `index` of `logits` (all of them, in order, when index is the identity) with `rows`' settings and
  // starts their copy to the host.
  SampledRows sample(torch::Tensor logits, const std::vector<int64_t>& index, const SamplerRows& rows);
  // Host int64 values as a (n,) tensor on the model's device.
  torch::Tensor to_device(const std::vector<int64_t>& values) const;

  // Weight writes (between steps, nothing in flight on the runner's side). check_weight_names: InvalidArgument
  // naming every unknown name, before anything changes.
  void check_weight_names(const std::map<std::string, torch::Tensor>& named_tensors) const;
  void write_weights(const std::map<std::string, torch::Tensor>& named_tensors, bool shards);
  torch::Tensor weight_for_update(const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype);
  bool weights_released() const { return !released_weights_.empty(); }
  const std::set<std::string>& released_weights() const { return released_weights_; }

  // Sleep frees the KV cache and the decode graphs' memory (and with release_weights every weight's storage, given
  // back by the next write); wake_up re-allocates the cache.
  void sleep(bool release_weights);
  void wake_up();
  bool sleeping() const { return !cache_->allocated(); }

 private:
  torch::Tensor run_packed(const std::vector<Chunk>& chunks, int64_t max_blocks, PackedPrefill packing);

  std::shared_ptr<model::CausalLM> model_;
  int64_t block_size_ = 16;
  int64_t num_blocks_ = 0;
  std::unique_ptr<PagedKVCache> cache_;
  std::unique_ptr<DecodeGraphs> graphs_;    // CUDA decode graphs; null where decode runs eagerly
  std::set<std::string> released_weights_;  // names released by sleep(true), not yet written by update_weights
  std::set<std::string> written_in_place_;  // of those, the ones weight_for_update gave their storage back
};

}  // namespace verl::rollout::detail
