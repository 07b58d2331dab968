// verl::model::CausalLM: the Qwen2 / Qwen3 / Llama / Mistral / Phi-3 decoder in LibTorch, with HF state-dict names,
// used by training (padded / packed forward, value head) and by rollout (KV-cache decode) alike.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/linear.h"
#include "verl/model/lora.h"
#include "verl/model/model_config.h"
#include "verl/kernels/varlen_attention.h"

namespace verl::dist {
class Communicator;
}  // namespace verl::dist

namespace verl::model {

// The packed forward's layout of sequences (the kernel layer's: verl/kernels/varlen_attention.h).
using kernels::VarlenLayout;

// The head on top of the final norm: next-token logits or a per-token scalar value (critic).
enum class HeadKind {
  kLanguageModel,  // lm_head (or the tied embedding): (..., vocab) logits
  kValue,          // score = Linear(hidden, 1) as AutoModelForTokenClassification(num_labels=1): (...) values
};

// Where Attention::forward keeps and reads keys/values across calls. The model computes q/k/v
// (post-RoPE) and hands them over; the cache stores k/v its own way (contiguous slots, paged
// blocks, ...) and returns the attention output. `mask` is whatever the caller of the model
// passed for this forward (its meaning is the cache's business).
class VERL_API AttentionCache {
 public:
  virtual ~AttentionCache() = default;
  // q (bs, heads, q, head_dim); k_new / v_new (bs, kv_heads, q, head_dim) for decoder `layer`.
  // Returns the attention output (bs, heads, q, head_dim).
  // `sliding_window` > 0: the layer's queries see only the `sliding_window` latest positions (themselves included).
  virtual torch::Tensor attend(int64_t layer, const torch::Tensor& q, const torch::Tensor& k_new,
                               const torch::Tensor& v_new, const torch::Tensor& mask, int64_t sliding_window) = 0;
};

// Scaled dot-product attention as the model runs it. q (bs, heads, q, d); k/v (bs, kv_heads, k, d);
// mask (bs, 1, q, k) bool (true = attend) or undefined for plain causal attention (q == k).
VERL_API torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                         const torch::Tensor& mask);

// `mask` (as grouped_attention takes it, undefined = causal) narrowed to a sliding window of `window` keys for q == k
// rows: query i sees key j only if j > i - window (transformers' sliding_window_overlay). window 0: `mask` itself.
VERL_API torch::Tensor sliding_window_mask(const torch::Tensor& mask, int64_t length, int64_t window,
                                           torch::Device device);

class VERL_API RMSNorm : public torch::nn::Module {
 public:
  RMSNorm(int64_t dim, double eps);
  // x (..., dim) -> (..., dim), autograd-capable, any device: normalised in float32 and cast back to x's dtype
  // before the weight (dim,) multiplies it, as HF computes it (the verl::rms_norm op's composition).
  torch::Tensor forward(const torch::Tensor& x);
  // The same without autograd, through verl::rms_norm: one kernel on CUDA, whose float32 sum adds in its own
  // order (last-bit differences from forward); the op sequence on CPU. For the rollout engine's forward, which
  // promises no bitwise equality with the trainer's on CUDA (its attention kernels differ already).
  torch::Tensor forward_inference(const torch::Tensor& x);
  torch::Tensor weight;

 private:
  double eps_;
};

class VERL_API Attention : public torch::nn::Module {
 public:
  // `layer`: which decoder layer (its sliding window, ModelConfig::sliding_window).
  explicit Attention(const ModelConfig& c, int64_t layer = 0);
  // x (bs, q, hidden); cos/sin (bs, q, head_dim); mask (bs, 1, q, k) bool, true = attend, or
  // undefined for plain causal attention (q == k, no padding, no cache).
  // Without a cache k == q. With one, the new keys/values are handed to cache->attend(layer, ...),
  // which stores them and attends over the row's cached keys/values as well.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, AttentionCache* cache = nullptr, int64_t layer = 0);
  // Packed sequences: x (1, total, hidden); cos/sin (1, total, head_dim); causal within each
  // sequence of `layout` (verl/kernels/varlen_attention.h; the layer's sliding window), no mask, no cache.
  torch::Tensor forward_varlen(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                               const VarlenLayout& layout);
  // q/k/v_proj, or (ModelConfig::fused_projections, phi3) qkv_proj alone: its rows are [q; k; v].
  std::shared_ptr<Linear> q_proj, k_proj, v_proj, qkv_proj, o_proj;
  std::shared_ptr<RMSNorm> q_norm, k_norm;  // qwen3 only
  // Tensor parallelism (verl/model/tensor_parallel.h): o_proj's partial outputs are summed over this group.
  std::shared_ptr<dist::Communicator> tensor_parallel;

 private:
  // q (bs, q, heads, d), k and v (bs, q, kv_heads, d) of x (bs, q, hidden): three GEMMs, or qkv_proj's one split
  // as transformers' Phi3Attention splits it.
  std::array<torch::Tensor, 3> project(const torch::Tensor& x);
  int64_t heads_, kv_heads_, head_dim_;
  int64_t sliding_window_;  // 0: full causal attention
};

class VERL_API MLP : public torch::nn::Module {
 public:
  explicit MLP(const ModelConfig& c);
  // SwiGLU: down(silu(gate(x)) * up(x)); with gate_up_proj, gate and up are the two halves of its one output.
  torch::Tensor forward(const torch::Tensor& x);
  // gate/up_proj, or (ModelConfig::fused_projections, phi3) gate_up_proj alone: its rows are [gate; up].
  std::shared_ptr<Linear> gate_proj, up_proj, gate_up_proj, down_proj;
  // Tensor parallelism: down_proj's partial outputs are summed over this group.
  std::shared_ptr<dist::Communicator> tensor_parallel;
};

class VERL_API DecoderLayer : public torch::nn::Module {
 public:
  explicit DecoderLayer(const ModelConfig& c, int64_t layer = 0);
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                        const torch::Tensor& mask, AttentionCache* cache = nullptr, int64_t layer = 0);
  torch::Tensor forward_varlen(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                               const VarlenLayout& layout);
  std::shared_ptr<Attention> self_attn;
  std::shared_ptr<MLP> mlp;
  std::shared_ptr<RMSNorm> input_layernorm, post_attention_layernorm;
};

// The decoder body, registered as "model" so its parameters are named model.*.
class VERL_API DecoderModel : public torch::nn::Module {
 public:
  explicit DecoderModel(const ModelConfig& c);
  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  std::shared_ptr<RMSNorm> norm;
  std::vector<std::shared_ptr<DecoderLayer>> layer_ptrs;
};

// Parameters that live elsewhere between uses -- sharded over data-parallel ranks (ZeRO-3,
// verl/workers/fully_sharded.h) -- and are materialised right before the model reads them. Every rank of the group
// runs the same forwards (and backwards) in the same order: each call may be a collective.
class VERL_API ParameterGathering {
 public:
  virtual ~ParameterGathering() = default;
  // The parameters outside the decoder layers (embedding, final norm, head), before the model reads them; they stay
  // until the gathering releases them (after the backward, or when the caller's pass ends).
  virtual void gather_root() = 0;
  // Runs decoder layer `layer` on `input`: `forward` computes the layer's output from its argument once the layer's
  // parameters are in place.
  virtual torch::Tensor run_layer(int64_t layer, const torch::Tensor& input,
                                  const std::function<torch::Tensor(const torch::Tensor&)>& forward) = 0;
};

class VERL_API CausalLM : public torch::nn::Module {
 public:
  // With `tensor_parallel` (a group of t > 1 ranks, verl/model/tensor_parallel.h) this rank holds its 1/t shard of
  // the model and every forward is a collective of the group: the t ranks run it together on the same inputs and
  // all get the whole output (logits over the whole vocabulary). Such a model serves inference -- the rollout
  // engine -- and a forward with grad mode on is an error. ConfigError when t does not divide the heads or the MLP.
  explicit CausalLM(ModelConfig config, HeadKind head = HeadKind::kLanguageModel,
                    std::shared_ptr<dist::Communicator> tensor_parallel = nullptr);

  // The whole model's config, whatever this rank holds.
  const ModelConfig& config() const { return config_; }
  // The config this rank's layers are built with (heads, kv heads, MLP width divided by t): the KV cache's shape.
  const ModelConfig& shard_config() const { return shard_config_; }
  int64_t tensor_parallel_size() const;
  HeadKind head_kind() const { return head_kind_; }

  // Padded batch. input_ids (bs, seq) int64; attention_mask (bs, seq) {0,1} (undefined = all ones);
  // position_ids (bs, seq) (undefined = cumsum(mask) - 1 clamped at 0, verl's convention, so a
  // left-padded row matches its unpadded forward). Returns logits (bs, seq, vocab) for the LM head
  // or values (bs, seq) for the value head; padding positions hold don't-care (finite) values.
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                        const torch::Tensor& position_ids = {});
  // Same inputs; the final-norm hidden states (bs, seq, hidden) without the head.
  torch::Tensor hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask = {},
                              const torch::Tensor& position_ids = {});

  // Packed sequences without padding. input_ids (total,) int64; cu_seqlens (n+1,) int64 with
  // cu_seqlens[0] = 0, cu_seqlens[n] = total. Attention is causal within each sequence only and
  // positions restart at 0 per sequence; it costs O(sum len_i^2) (verl/kernels/varlen_attention.h), not
  // O(total^2). Returns (total, vocab) logits or (total,) values.
  torch::Tensor forward_packed(const torch::Tensor& input_ids, const torch::Tensor& cu_seqlens);
  torch::Tensor hidden_states_packed(const torch::Tensor& input_ids, const torch::Tensor& cu_seqlens);

  // Incremental decoding: a forward through an external cache (the rollout engine's paged KV cache,
  // verl/rollout/kv_cache.h -- the one decode path). input_ids and
  // positions (bs, q) int64; `mask` is handed to cache.attend unchanged. Only the rows' hidden
  // states at `head_index` (bs,) int64 (position within q) go through the head, so a prefill
  // chunk costs one head row: returns (bs, vocab) logits or (bs,) values. One row (bs 1) may hold several packed
  // sequences (a packed prefill, rollout::PagedBatch): head_index (n,) then gives n positions within it, and the
  // result has n rows.
  torch::Tensor forward_cached(const torch::Tensor& input_ids, const torch::Tensor& positions, AttentionCache& cache,
                               const torch::Tensor& mask, const torch::Tensor& head_index);

  // Applies the head to final hidden states (..., hidden).
  torch::Tensor apply_head(const torch::Tensor& hidden);

  // HF-named parameters (no tied duplicate: lm_head.weight is absent when embeddings are tied); a
  // tensor-parallel model's are its shards.
  std::map<std::string, torch::Tensor> named_state() const;
  // Copies tensors in by HF name (dtype converted to the parameter's). Strict: missing and
  // unexpected names are errors. Shape mismatches are always errors. Throws CheckpointError
  // listing every offending name. A tied model also accepts (and checks nothing of) lm_head.weight.
  // The tensors are the whole model's (config() shapes); a tensor-parallel model keeps its shard of each.
  void load_state_dict(const std::map<std::string, torch::Tensor>& state, bool strict = true);
  // Copies this rank's own tensors in by HF name (a tensor-parallel model's shards, as tensor_parallel_shard cuts
  // them; the whole tensors otherwise), not strict: names absent from `shards` keep their values. CheckpointError
  // naming every unknown name or shape that differs from the parameter's.
  void load_shard_state_dict(const std::map<std::string, torch::Tensor>& shards);

  // Sharded parameters (ZeRO-3): the model reads its parameters only through `gathering` (null: they are its own).
  // named_state() and load_state_dict() then throw: a sharded model's weights are gathered by the sharding.
  void set_parameter_gathering(std::shared_ptr<ParameterGathering> gathering) { gathering_ = std::move(gathering); }
  const std::shared_ptr<ParameterGathering>& parameter_gathering() const { return gathering_; }

  // LoRA (verl/model/lora.h): adapters on the decoder linears `lora` selects (lora_target_modules), A drawn from
  // `seed` as PEFT draws it and B zero, so the model computes what it computed before. Every other parameter is frozen
  // (requires_grad false) except a value head, which a critic trains in full. The adapters join named_state() (and
  // every copy of the model made from it) as <module>.lora_A.weight / .lora_B.weight. ConfigError from the selection;
  // InvalidArgument when the model has adapters already. Returns the adapted modules' names.
  std::vector<std::string> add_adapters(const LoraConfig& lora, uint64_t seed);
  // The adapters' config (null without adapters); a copy of the model adds the same before loading named_state().
  const std::optional<LoraConfig>& lora() const { return lora_; }
  // While disabled, the model computes as its base (the LoRA reference policy: verl's ref_in_actor).
  void set_adapters_enabled(bool enabled);
  bool adapters_enabled() const { return adapters_enabled_; }
  // The adapters' parameters by name (the live tensors).
  std::map<std::string, torch::Tensor> adapter_state() const;
  // named_state() with every adapter folded into its linear's weight (W + (B A) * scaling) and the adapters left out:
  // the plain model's weights (python -m verl.model_merger's output).
  std::map<std::string, torch::Tensor> merged_state() const;

  // Recompute each decoder layer in backward instead of keeping its activations.
  void set_gradient_checkpointing(bool enabled) { gradient_checkpointing_ = enabled; }
  bool gradient_checkpointing() const { return gradient_checkpointing_; }

  torch::Dtype dtype() const;
  torch::Device device() const;

  std::shared_ptr<DecoderModel> model;
  std::shared_ptr<Linear> lm_head;  // untied LM head only
  std::shared_ptr<Linear> score;    // value head only

 private:
  // cos/sin (bs, q, head_dim) in `dtype` for positions (bs, q); computed in float32 as HF does.
  std::pair<torch::Tensor, torch::Tensor> rope(const torch::Tensor& positions, torch::Dtype dtype) const;
  // The token embeddings (..., hidden); vocab-parallel under tensor parallelism.
  torch::Tensor embed(const torch::Tensor& input_ids);
  torch::Tensor run_layers(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                           const torch::Tensor& mask);
  torch::Tensor run_layers_varlen(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                                  const VarlenLayout& layout);

  ModelConfig config_;
  ModelConfig shard_config_;
  HeadKind head_kind_;
  std::shared_ptr<dist::Communicator> tensor_parallel_;
  std::shared_ptr<ParameterGathering> gathering_;
  torch::Tensor inv_freq_;  // (head_dim / 2,) float32 on the CPU: not a buffer, Module::to(dtype) would round it
  // inv_freq_ on the device the model runs on, copied once per device rather than in every forward: that copy is a
  // blocking host-to-device transfer, which a CUDA graph capture of the decode step could not contain either.
  struct DeviceCopy {
    std::mutex mutex;
    torch::Tensor tensor;
    DeviceCopy() = default;
    DeviceCopy(const DeviceCopy&) {}
    DeviceCopy& operator=(const DeviceCopy&) { return *this; }
  };
  mutable DeviceCopy inv_freq_device_;
  bool gradient_checkpointing_ = false;
  std::optional<LoraConfig> lora_;
  bool adapters_enabled_ = true;
};

// Disables a model's LoRA adapters for a scope: the passes of the LoRA reference policy, the base model.
class VERL_API AdaptersDisabled {
 public:
  explicit AdaptersDisabled(CausalLM& model) : model_(model), was_(model.adapters_enabled()) {
    model_.set_adapters_enabled(false);
  }
  ~AdaptersDisabled() { model_.set_adapters_enabled(was_); }
  AdaptersDisabled(const AdaptersDisabled&) = delete;
  AdaptersDisabled& operator=(const AdaptersDisabled&) = delete;

 private:
  CausalLM& model_;
  bool was_;
};

// CheckpointError (message starting with `who`) when `state`, by HF name, does not fit the whole model of `config` and
// `head`: names missing or unexpected (when `strict`; a tied model accepts, and ignores, lm_head.weight) and shapes
// that differ (always). CausalLM::load_state_dict's check, also applied to weights loaded into ZeRO-3 shards.
// With `lora`, the adapters' names and shapes are part of the model.
VERL_API void check_state_dict(const ModelConfig& config, HeadKind head,
                               const std::map<std::string, torch::Tensor>& state, bool strict, const std::string& who,
                               const LoraConfig* lora = nullptr);

// The llama3-scaled (or plain) RoPE inverse frequencies (head_dim / 2,) float32.
VERL_API torch::Tensor rope_inv_freq(const ModelConfig& c);

// The HF names and shapes of CausalLM(c, head).named_parameters(), in the same order, computed
// from the config alone (nothing allocated): load_pretrained compares them with a checkpoint's
// headers before building the model, so a config.json that does not fit its weights fails
// without first allocating the model it describes.
// With `lora`, the adapters follow their linear's weight (and bias), as the model registers them.
VERL_API std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_shapes(const ModelConfig& c,
                                                                                    HeadKind head,
                                                                                    const LoraConfig* lora = nullptr);

}  // namespace verl::model
