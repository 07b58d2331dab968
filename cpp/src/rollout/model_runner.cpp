// The rollout engine's model runner (see rollout/model_runner.h).
#include "rollout/model_runner.h"

#include <algorithm>
#include <iostream>
#include <sstream>

#include "core/host_arrays.h"
#include "core/tensor_storage.h"
#include "verl/core/error.h"

namespace verl::rollout::detail {
namespace {

struct HostLongs {
  const std::vector<int64_t>& values;
  std::vector<int64_t> shape;
};

// Host int64 arrays as tensors of the given shapes on `device`, in one copy (HostArrays: on CUDA, no host
// synchronisation).
std::vector<torch::Tensor> host_to_device(const std::vector<HostLongs>& parts, const torch::Device& device) {
  verl::detail::HostArrays arrays;
  for (const HostLongs& p : parts) arrays.add(p.values);
  std::vector<torch::Tensor> out = arrays.to(device);
  for (size_t i = 0; i < parts.size(); ++i) out[i] = out[i].view(parts[i].shape);
  return out;
}

}  // namespace

ModelRunner::ModelRunner(std::shared_ptr<model::CausalLM> model, const EngineConfig& config, int64_t max_model_len)
    : model_(std::move(model)), block_size_(config.block_size) {
  // The cache holds this rank's kv heads (all of them without tensor parallelism).
  const model::ModelConfig& layers = model_->shard_config();
  const int64_t block_bytes = PagedKVCache::block_bytes(layers, block_size_, model_->dtype());
  int64_t budget = config.kv_cache_bytes;
  if (budget == 0) {
    const int64_t blocks_per_seq = (max_model_len + block_size_ - 1) / block_size_;
    budget = std::min<int64_t>((config.max_num_seqs * blocks_per_seq + 1) * block_bytes, int64_t{4} << 30);
  }
  num_blocks_ = budget / block_bytes;
  VERL_CHECK(num_blocks_ >= 2, "EngineConfig: kv_cache_bytes = ", budget, " holds ", num_blocks_, " KV blocks of ",
             block_bytes, " bytes; at least 2 are needed");
  cache_ = std::make_unique<PagedKVCache>(layers, num_blocks_, block_size_, model_->dtype(), model_->device());
  cache_->set_paged_attention_kernel(config.paged_attention_kernel);
  std::vector<int64_t> graph_sizes = decode_graph_sizes(config.cudagraph_capture_sizes, config.max_num_seqs);
  if (cuda_decode_graphs_factory() != nullptr && !config.enforce_eager && model_->device().is_cuda() &&
      cache_->uses_kernel(1) && model_->tensor_parallel_size() == 1 && !graph_sizes.empty())
    graphs_ = cuda_decode_graphs_factory()(model_, *cache_, std::move(graph_sizes),
                                           (max_model_len + block_size_ - 1) / block_size_);
}

int64_t ModelRunner::num_graph_captures() const { return graphs_ ? graphs_->num_captured() : 0; }

torch::Tensor ModelRunner::run(const std::vector<Chunk>& chunks, const torch::Tensor& ahead_ids) {
  const int64_t bs = static_cast<int64_t>(chunks.size()), B = block_size_;
  int64_t q = 0, max_blocks = 0;
  bool all_start = true;
  for (const Chunk& c : chunks) {
    q = std::max(q, c.length);
    max_blocks = std::max(max_blocks, (c.start + c.length + B - 1) / B);
    all_start = all_start && c.start == 0;
  }
  const PackedPrefill packing = cache_->packed_prefill(all_start);
  if (q > 1 && packing != PackedPrefill::kPadded) return run_packed(chunks, max_blocks, packing);
  // Padding tokens: id 0 at position 0, written to the scratch slot 0, attending to key 0 only.
  std::vector<int64_t> ids(bs * q, 0), pos(bs * q, 0), slots(bs * q, 0), tables(bs * max_blocks, 0), head(bs);
  for (int64_t i = 0; i < bs; ++i) {
    const Chunk& c = chunks[i];
    const auto& tokens = c.seq->tokens;
    for (int64_t t = 0; t < c.length; ++t) {
      ids[i * q + t] = tokens[c.start + t];
      pos[i * q + t] = c.start + t;
      slots[i * q + t] = c.slots[t];
    }
    const auto& table = c.seq->block_table;
    const int64_t nb = std::min<int64_t>(static_cast<int64_t>(table.size()), max_blocks);
    std::copy(table.begin(), table.begin() + nb, tables.begin() + i * max_blocks);
    head[i] = c.length - 1;
  }
  if (graphs_ && q == 1) {
    try {
      torch::Tensor logits =
          graphs_->run(ids.data(), pos.data(), slots.data(), tables.data(), bs, max_blocks, ahead_ids);
      if (logits.defined()) return logits;
    } catch (const std::exception& e) {
      // A graph that cannot be captured here (a kernel or a driver that refuses stream capture) costs speed, not
      // the rollout: this engine decodes eagerly from now on, and says so once.
      std::cerr << "verl: CUDA graph capture of the decode step failed; decoding eagerly from now on ("
                << e.what() << ")\n";
      graphs_.reset();
    }
  }
  const auto device = model_->device();
  const std::vector<torch::Tensor> in =
      host_to_device({{ids, {bs, q}}, {pos, {bs, q}}, {slots, {bs * q}}, {tables, {bs, max_blocks}}, {head, {bs}}}, device);
  VERL_CHECK(!ahead_ids.defined() || (q == 1 && ahead_ids.numel() == bs), "Engine: ids on the device serve one "
             "decode token per row, got ", ahead_ids.numel(), " for ", bs, " rows of ", q);
  const torch::Tensor ids_t = ahead_ids.defined() ? ahead_ids.view({bs, 1}) : in[0];
  const torch::Tensor& pos_t = in[1];
  torch::Tensor mask;
  if (cache_->needs_mask(q)) {
    torch::Tensor key_pos = torch::arange(max_blocks * B, torch::dtype(torch::kLong).device(device));
    mask = key_pos.view({1, 1, 1, -1}) <= pos_t.view({bs, 1, q, 1});
  }
  cache_->set_batch({in[2], in[3], pos_t});
  return model_->forward_cached(ids_t, pos_t, *cache_, mask, in[4]);
}

torch::Tensor ModelRunner::run_packed(const std::vector<Chunk>& chunks, int64_t max_blocks, PackedPrefill packing) {
  const bool token_rows = packing == PackedPrefill::kTokenRows;
  const int64_t n = static_cast<int64_t>(chunks.size());
  int64_t total = 0;
  for (const Chunk& c : chunks) total += c.length;
  std::vector<int64_t> ids(total), pos(total), slots(total), head(n), cu_seqlens(n + 1, 0);
  std::vector<int64_t> token_tables(token_rows ? total * max_blocks : 0, 0);  // padding entries -> scratch block 0
  int64_t at = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Chunk& c = chunks[i];
    const auto& tokens = c.seq->tokens;
    const auto& table = c.seq->block_table;
    const int64_t nb = std::min<int64_t>(static_cast<int64_t>(table.size()), max_blocks);
    for (int64_t t = 0; t < c.length; ++t, ++at) {
      ids[at] = tokens[c.start + t];
      pos[at] = c.start + t;
      slots[at] = c.slots[t];
      if (token_rows) std::copy(table.begin(), table.begin() + nb, token_tables.begin() + at * max_blocks);
    }
    cu_seqlens[i + 1] = at;
    head[i] = at - 1;
  }
  const auto device = model_->device();
  std::vector<HostLongs> parts = {{ids, {1, total}}, {pos, {1, total}}, {slots, {total}}, {head, {n}}};
  if (token_rows) parts.push_back({token_tables, {total, max_blocks}});
  const std::vector<torch::Tensor> in = host_to_device(parts, device);
  PagedBatch batch{in[2], torch::Tensor(), torch::Tensor()};
  if (token_rows) {
    batch.block_tables = in[4];
    batch.positions = in[1].view({total, 1});
    batch.token_rows = true;
  } else {
    batch.prompts = std::make_shared<const kernels::VarlenLayout>(
        kernels::VarlenLayout::build(torch::tensor(cu_seqlens, torch::kLong), total, device));
  }
  cache_->set_batch(std::move(batch));
  return model_->forward_cached(in[0], in[1], *cache_, torch::Tensor(), in[3]);
}

void ModelRunner::copy_blocks(const std::vector<std::pair<int64_t, int64_t>>& copies) { cache_->copy_blocks(copies); }

torch::Tensor ModelRunner::to_device(const std::vector<int64_t>& values) const {
  return host_to_device({{values, {static_cast<int64_t>(values.size())}}}, model_->device())[0];
}

SampledRows ModelRunner::sample(torch::Tensor logits, const std::vector<int64_t>& index, const SamplerRows& rows) {
  bool identity = static_cast<int64_t>(index.size()) == logits.size(0);
  for (size_t i = 0; identity && i < index.size(); ++i) identity = index[i] == static_cast<int64_t>(i);
  if (!identity) logits = logits.index_select(0, to_device(index));
  SampleResult sampled = rollout::sample(logits, rows);
  SampledRows out;
  // Tokens and log-probs come back in one copy, waited for in wait(): on a GPU, the step's one host
  // synchronisation. The tokens as int32 beside the float32 log-probs' bits (a vocabulary is far below 2^31).
  out.copy = kernels::copy_to_host_async(
      torch::stack({sampled.tokens.to(torch::kInt), sampled.logprobs.to(torch::kFloat).view(torch::kInt)}));
  out.tokens = sampled.tokens;
  return out;
}

void ModelRunner::check_weight_names(const std::map<std::string, torch::Tensor>& named_tensors) const {
  auto params = model_->named_parameters(true);
  std::vector<std::string> unknown;
  for (const auto& [name, t] : named_tensors)
    if (params.find(name) == nullptr && !(name == "lm_head.weight" && model_->config().tie_word_embeddings))
      unknown.push_back(name);
  if (unknown.empty()) return;
  std::ostringstream s;
  for (size_t i = 0; i < unknown.size(); ++i) s << (i ? ", " : "") << unknown[i];
  VERL_FAIL(InvalidArgument, "Engine.update_weights: unknown parameter names: [", s.str(), "]");
}

void ModelRunner::write_weights(const std::map<std::string, torch::Tensor>& named_tensors, bool shards) {
  if (!released_weights_.empty()) {
    for (auto& item : model_->named_parameters(true)) {
      if (!named_tensors.count(item.key()) || !released_weights_.erase(item.key())) continue;
      if (written_in_place_.erase(item.key())) continue;  // weight_for_update gave it its storage, already written
      verl::detail::reallocate_storage(item.value(), item.value().numel() * item.value().element_size());
    }
  }
  if (shards) {
    model_->load_shard_state_dict(named_tensors);
  } else {
    model_->load_state_dict(named_tensors, /*strict=*/false);
  }
}

torch::Tensor ModelRunner::weight_for_update(const std::string& name, c10::IntArrayRef shape, torch::Dtype dtype) {
  torch::Tensor* weight = model_->named_parameters(true).find(name);
  if (weight == nullptr || weight->sizes() != shape || weight->scalar_type() != dtype) return {};
  // Its storage back now, since it is written before update_weights (which then must not re-make it); it counts as
  // released until update_weights names it, so generation still waits for the whole model.
  if (released_weights_.count(name) && written_in_place_.insert(name).second)
    verl::detail::reallocate_storage(*weight, weight->numel() * weight->element_size());
  return *weight;
}

void ModelRunner::sleep(bool release_weights) {
  if (graphs_) graphs_->clear();  // their memory pool goes back with the KV cache; recaptured when next used
  cache_->free();
  if (!release_weights) return;
  for (const auto& item : model_->named_parameters(true)) {
    const bool newly = released_weights_.insert(item.key()).second;
    if (newly || written_in_place_.erase(item.key())) verl::detail::release_storage(item.value());
  }
}

void ModelRunner::wake_up() { cache_->allocate(); }

}  // namespace verl::rollout::detail
