// The decoder of transformers' modeling_qwen2 / modeling_qwen3 / modeling_llama / modeling_mistral / modeling_phi3,
// re-expressed in LibTorch with the same parameter names and the same numerics (float32 RMSNorm and RoPE tables).
#include "verl/model/transformer.h"

#include <cmath>
#include <set>
#include <sstream>

#include <ATen/CPUGeneratorImpl.h>

#include "core/host_arrays.h"
#include "core/untrusted.h"
#include "kernels/aten/compositions.h"
#include "kernels/ops.h"
#include "verl/core/error.h"
#include "verl/dist/communicator.h"
#include "verl/model/rope.h"
#include "verl/model/tensor_parallel.h"

namespace verl::model {
namespace F = torch::nn::functional;
using torch::indexing::Slice;

torch::Tensor grouped_attention(const torch::Tensor& q, const torch::Tensor& k_in, const torch::Tensor& v_in,
                                const torch::Tensor& mask) {
  const int64_t heads = q.size(1), kv_heads = k_in.size(1);
  torch::Tensor k = k_in, v = v_in;
  // Grouped-query attention: each kv head serves heads / kv_heads consecutive query heads. As
  // transformers does: without a mask the kernel broadcasts kv heads itself (enable_gqa, keeps the
  // fused kernels); with a mask kv heads are repeated first (HF repeat_kv), since masked GQA
  // would fall back to the math kernel. Following HF here makes bf16 results agree bit for bit.
  const bool causal_only = !mask.defined();
  if (kv_heads != heads && !causal_only) {
    k = k.repeat_interleave(heads / kv_heads, 1);
    v = v.repeat_interleave(heads / kv_heads, 1);
  }
  return at::scaled_dot_product_attention(q, k, v, causal_only ? std::optional<torch::Tensor>() : mask, 0.0,
                                          causal_only, 1.0 / std::sqrt(static_cast<double>(q.size(-1))),
                                          /*enable_gqa=*/causal_only && kv_heads != heads);
}

torch::Tensor sliding_window_mask(const torch::Tensor& mask, int64_t length, int64_t window, torch::Device device) {
  if (window <= 0) return mask;
  torch::Tensor idx = torch::arange(length, torch::dtype(torch::kLong).device(device));
  torch::Tensor distance = idx.unsqueeze(1) - idx.unsqueeze(0);  // (q, k): i - j
  torch::Tensor band = (distance >= 0).logical_and(distance < window).view({1, 1, length, length});
  if (!mask.defined()) return band;
  // Padding queries keep seeing themselves (the diagonal is in every band), as the causal mask lets them.
  return mask.logical_and(band);
}

// ---- RoPE ------------------------------------------------------------------------------------

torch::Tensor rope_inv_freq(const ModelConfig& c) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat);
  // Same expression as HF: int64 arange cast to float, then base ** (i / dim).
  torch::Tensor inv_freq =
      1.0 / torch::pow(c.rope_theta, torch::arange(0, c.head_dim, 2, torch::kLong).to(torch::kFloat) / c.head_dim);
  if (!c.rope_scaling) return inv_freq;
  const RopeScaling& s = *c.rope_scaling;
  const double old_len = static_cast<double>(s.original_max_position_embeddings);
  const double low_freq_wavelen = old_len / s.low_freq_factor;
  const double high_freq_wavelen = old_len / s.high_freq_factor;
  torch::Tensor wavelen = 2 * M_PI / inv_freq;
  // Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated.
  torch::Tensor scaled = torch::where(wavelen > low_freq_wavelen, inv_freq / s.factor, inv_freq);
  torch::Tensor smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
  torch::Tensor smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled;
  torch::Tensor medium = (wavelen >= high_freq_wavelen).logical_and(wavelen <= low_freq_wavelen);
  return torch::where(medium, smoothed, scaled).to(f32.dtype());
}

namespace {

std::shared_ptr<Linear> linear(int64_t in, int64_t out, bool bias) { return std::make_shared<Linear>(in, out, bias); }

// Recomputes a decoder layer in backward (torch.utils.checkpoint's reentrant variant): forward
// keeps only the layer input; backward reruns the layer with grad enabled and backpropagates
// through it, accumulating parameter gradients into .grad. Like the reentrant checkpoint it
// serves loss.backward(), not torch::autograd::grad(..., params).
struct LayerCheckpoint : public torch::autograd::Function<LayerCheckpoint> {
  // `mask` may be undefined (plain causal); autograd inputs must be defined, so an empty tensor
  // stands in for it and `has_mask` says which.
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor h, int64_t layer_address,
                               torch::Tensor cos, torch::Tensor sin, torch::Tensor mask, bool has_mask) {
    ctx->saved_data["layer"] = layer_address;
    ctx->saved_data["has_mask"] = has_mask;
    ctx->save_for_backward({h, cos, sin, mask});
    auto* layer = reinterpret_cast<DecoderLayer*>(layer_address);
    return layer->forward(h, cos, sin, has_mask ? mask : torch::Tensor());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<DecoderLayer*>(ctx->saved_data["layer"].toInt());
    torch::Tensor h = saved[0].detach().requires_grad_(saved[0].requires_grad());
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      out = layer->forward(h, saved[1], saved[2], ctx->saved_data["has_mask"].toBool() ? saved[3] : torch::Tensor());
    }
    torch::autograd::backward({out}, {grad_out[0]});
    return {h.requires_grad() ? h.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor(), torch::Tensor()};
  }
};

// The packed forward's layout, shared by its checkpointed layers' autograd nodes until their backward. Built once per
// forward and never rebuilt per layer: on a GPU each build copies its index tensors to the device, a host sync.
struct SharedVarlenLayout : torch::CustomClassHolder {
  explicit SharedVarlenLayout(VarlenLayout l) : layout(std::move(l)) {}
  VarlenLayout layout;
};

// LayerCheckpoint for the packed path. `shared_layout_address` is a live SharedVarlenLayout (run_layers_varlen's),
// of which the node keeps a reference for its backward.
struct VarlenLayerCheckpoint : public torch::autograd::Function<VarlenLayerCheckpoint> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, torch::Tensor h, int64_t layer_address,
                               torch::Tensor cos, torch::Tensor sin, int64_t shared_layout_address) {
    auto shared = c10::intrusive_ptr<SharedVarlenLayout>::reclaim_copy(
        reinterpret_cast<SharedVarlenLayout*>(shared_layout_address));
    ctx->saved_data["layer"] = layer_address;
    ctx->saved_data["layout"] = c10::IValue::make_capsule(shared);
    ctx->save_for_backward({h, cos, sin});
    auto* layer = reinterpret_cast<DecoderLayer*>(layer_address);
    return layer->forward_varlen(h, cos, sin, shared->layout);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_out) {
    auto saved = ctx->get_saved_variables();
    auto* layer = reinterpret_cast<DecoderLayer*>(ctx->saved_data["layer"].toInt());
    const auto shared = c10::static_intrusive_pointer_cast<SharedVarlenLayout>(ctx->saved_data["layout"].toCapsule());
    torch::Tensor h = saved[0].detach().requires_grad_(saved[0].requires_grad());
    torch::Tensor out;
    {
      torch::AutoGradMode enable(true);
      out = layer->forward_varlen(h, saved[1], saved[2], shared->layout);
    }
    torch::autograd::backward({out}, {grad_out[0]});
    return {h.requires_grad() ? h.grad() : torch::Tensor(), torch::Tensor(), torch::Tensor(), torch::Tensor(),
            torch::Tensor()};
  }
};

// A recomputed layer's output needs a gradient only when its input has one (autograd::Function's rule), so with a frozen
// embedding -- LoRA -- the checkpointed layers would hide their adapters from backward. transformers'
// enable_input_require_grads() (which verl calls for LoRA) makes the embedding output require one; so does this.
torch::Tensor input_requiring_grad(const torch::Tensor& h) {
  return h.requires_grad() ? h : h.detach().requires_grad_(true);
}

// Names (already escaped) for an error message; past the first 20, counted rather than listed (a
// config for 4096 layers against a 2-layer checkpoint misses tens of thousands).
std::string join(const std::vector<std::string>& names) {
  constexpr size_t kShown = 20;
  std::ostringstream out;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) out << (i ? ", " : "") << names[i];
  if (names.size() > kShown) out << ", ... (" << names.size() - kShown << " more)";
  return out.str();
}

}  // namespace

// ---- layers ----------------------------------------------------------------------------------

RMSNorm::RMSNorm(int64_t dim, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNorm::forward(const torch::Tensor& x) { return kernels::aten::rms_norm(x, weight, eps_); }

torch::Tensor RMSNorm::forward_inference(const torch::Tensor& x) {
  VERL_CHECK(!torch::GradMode::is_enabled() || !(x.requires_grad() || weight.requires_grad()),
             "RMSNorm.forward_inference: has no gradient; call forward where one is needed");
  return kernels::rms_norm(x, weight, eps_);
}

namespace {

// A layer's norm: with a KV cache the layer runs in the rollout engine's forward (RMSNorm::forward_inference).
torch::Tensor norm_for(RMSNorm& norm, const torch::Tensor& x, const AttentionCache* cache) {
  return cache != nullptr ? norm.forward_inference(x) : norm.forward(x);
}

}  // namespace

Attention::Attention(const ModelConfig& c, int64_t layer)
    : heads_(c.num_attention_heads),
      kv_heads_(c.num_key_value_heads),
      head_dim_(c.head_dim),
      sliding_window_(c.sliding_window(layer)) {
  if (c.fused_projections) {
    // Phi3Attention's order (o_proj first): state dicts, checkpoint shards and PEFT's module lists follow it.
    o_proj = register_module("o_proj", linear(c.q_size(), c.hidden_size, c.o_bias));
    qkv_proj = register_module("qkv_proj", linear(c.hidden_size, c.q_size() + 2 * c.kv_size(), c.qkv_bias));
  } else {
    q_proj = register_module("q_proj", linear(c.hidden_size, c.q_size(), c.qkv_bias));
    k_proj = register_module("k_proj", linear(c.hidden_size, c.kv_size(), c.qkv_bias));
    v_proj = register_module("v_proj", linear(c.hidden_size, c.kv_size(), c.qkv_bias));
    o_proj = register_module("o_proj", linear(c.q_size(), c.hidden_size, c.o_bias));
  }
  if (c.qk_norm) {
    q_norm = register_module("q_norm", std::make_shared<RMSNorm>(c.head_dim, c.rms_norm_eps));
    k_norm = register_module("k_norm", std::make_shared<RMSNorm>(c.head_dim, c.rms_norm_eps));
  }
}

std::array<torch::Tensor, 3> Attention::project(const torch::Tensor& x) {
  const int64_t bs = x.size(0), q_len = x.size(1);
  // (bs, q, heads * d) -> (bs, q, heads, d)
  if (qkv_proj) {
    // Views of the one output's column ranges, as Phi3Attention slices qkv[..., :query_pos] and views it.
    const torch::Tensor qkv = qkv_proj->forward(x);
    const int64_t q_size = heads_ * head_dim_, kv_size = kv_heads_ * head_dim_;
    return {qkv.narrow(-1, 0, q_size).view({bs, q_len, heads_, head_dim_}),
            qkv.narrow(-1, q_size, kv_size).view({bs, q_len, kv_heads_, head_dim_}),
            qkv.narrow(-1, q_size + kv_size, kv_size).view({bs, q_len, kv_heads_, head_dim_})};
  }
  return {q_proj->forward(x).view({bs, q_len, heads_, head_dim_}),
          k_proj->forward(x).view({bs, q_len, kv_heads_, head_dim_}),
          v_proj->forward(x).view({bs, q_len, kv_heads_, head_dim_})};
}

torch::Tensor Attention::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                 const torch::Tensor& mask, AttentionCache* cache, int64_t layer) {
  const int64_t bs = x.size(0), q_len = x.size(1);
  // q/k norm act per head before the transpose, as HF.
  auto [q, k, v] = project(x);
  v = v.transpose(1, 2);
  if (q_norm) {
    q = norm_for(*q_norm, q, cache);
    k = norm_for(*k_norm, k, cache);
  }
  q = apply_rotary(q.transpose(1, 2), cos, sin);
  k = apply_rotary(k.transpose(1, 2), cos, sin);
  torch::Tensor out = cache != nullptr
                          ? cache->attend(layer, q, k, v, mask, sliding_window_)
                          : grouped_attention(q, k, v, sliding_window_mask(mask, q_len, sliding_window_, x.device()));
  out = o_proj->forward(out.transpose(1, 2).reshape({bs, q_len, heads_ * head_dim_}));
  if (tensor_parallel) tensor_parallel->all_reduce_sum_(out);
  return out;
}

torch::Tensor Attention::forward_varlen(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                        const VarlenLayout& layout) {
  const int64_t total = x.size(1);
  auto [q, k, v] = project(x);
  v = v.transpose(1, 2);
  if (q_norm) {
    q = q_norm->forward(q);
    k = k_norm->forward(k);
  }
  q = apply_rotary(q.transpose(1, 2), cos, sin);  // (1, heads, total, d)
  k = apply_rotary(k.transpose(1, 2), cos, sin);
  torch::Tensor out = kernels::varlen_causal_attention(q.squeeze(0), k.squeeze(0), v.squeeze(0), layout,
                                                       1.0 / std::sqrt(static_cast<double>(head_dim_)),
                                                       sliding_window_);
  out = o_proj->forward(out.transpose(0, 1).reshape({1, total, heads_ * head_dim_}));
  if (tensor_parallel) tensor_parallel->all_reduce_sum_(out);
  return out;
}

MLP::MLP(const ModelConfig& c) {
  if (c.fused_projections) {
    gate_up_proj = register_module("gate_up_proj", linear(c.hidden_size, 2 * c.intermediate_size, c.mlp_bias));
  } else {
    gate_proj = register_module("gate_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
    up_proj = register_module("up_proj", linear(c.hidden_size, c.intermediate_size, c.mlp_bias));
  }
  down_proj = register_module("down_proj", linear(c.intermediate_size, c.hidden_size, c.mlp_bias));
}

torch::Tensor MLP::forward(const torch::Tensor& x) {
  torch::Tensor hidden;
  if (gate_up_proj) {
    // Phi3MLP: gate, up = gate_up_proj(x).chunk(2); up * silu(gate) (the product is the same either way round).
    const std::vector<torch::Tensor> gate_up = gate_up_proj->forward(x).chunk(2, -1);
    hidden = gate_up[1] * F::silu(gate_up[0]);
  } else {
    hidden = F::silu(gate_proj->forward(x)) * up_proj->forward(x);
  }
  torch::Tensor out = down_proj->forward(hidden);
  if (tensor_parallel) tensor_parallel->all_reduce_sum_(out);
  return out;
}

DecoderLayer::DecoderLayer(const ModelConfig& c, int64_t layer) {
  self_attn = register_module("self_attn", std::make_shared<Attention>(c, layer));
  mlp = register_module("mlp", std::make_shared<MLP>(c));
  input_layernorm = register_module("input_layernorm", std::make_shared<RMSNorm>(c.hidden_size, c.rms_norm_eps));
  post_attention_layernorm =
      register_module("post_attention_layernorm", std::make_shared<RMSNorm>(c.hidden_size, c.rms_norm_eps));
}

torch::Tensor DecoderLayer::forward(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                    const torch::Tensor& mask, AttentionCache* cache, int64_t layer) {
  torch::Tensor h = x + self_attn->forward(norm_for(*input_layernorm, x, cache), cos, sin, mask, cache, layer);
  return h + mlp->forward(norm_for(*post_attention_layernorm, h, cache));
}

torch::Tensor DecoderLayer::forward_varlen(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin,
                                           const VarlenLayout& layout) {
  torch::Tensor h = x + self_attn->forward_varlen(input_layernorm->forward(x), cos, sin, layout);
  return h + mlp->forward(post_attention_layernorm->forward(h));
}

DecoderModel::DecoderModel(const ModelConfig& c) {
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(c.vocab_size, c.hidden_size));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    layer_ptrs.push_back(std::make_shared<DecoderLayer>(c, i));
    layers->push_back(layer_ptrs.back());
  }
  norm = register_module("norm", std::make_shared<RMSNorm>(c.hidden_size, c.rms_norm_eps));
}

// ---- parameter shapes --------------------------------------------------------------------------

// Mirrors the constructors above, registration order included (a test compares the two).
std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_shapes(const ModelConfig& c, HeadKind head,
                                                                           const LoraConfig* lora) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> out;
  std::set<std::string> adapted;
  if (lora != nullptr) {
    for (std::string& name : lora_target_modules(c, *lora)) adapted.insert(std::move(name));
  }
  auto linear_shapes = [&](const std::string& name, int64_t in, int64_t features, bool bias) {
    out.push_back({name + ".weight", {features, in}});
    if (bias) out.push_back({name + ".bias", {features}});
    if (adapted.count(name)) {
      out.push_back({name + ".lora_A.weight", {lora->rank, in}});
      out.push_back({name + ".lora_B.weight", {features, lora->rank}});
    }
  };
  out.push_back({"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    if (c.fused_projections) {  // o_proj first, as Phi3Attention registers it
      linear_shapes(layer + "self_attn.o_proj", c.q_size(), c.hidden_size, c.o_bias);
      linear_shapes(layer + "self_attn.qkv_proj", c.hidden_size, c.q_size() + 2 * c.kv_size(), c.qkv_bias);
    } else {
      linear_shapes(layer + "self_attn.q_proj", c.hidden_size, c.q_size(), c.qkv_bias);
      linear_shapes(layer + "self_attn.k_proj", c.hidden_size, c.kv_size(), c.qkv_bias);
      linear_shapes(layer + "self_attn.v_proj", c.hidden_size, c.kv_size(), c.qkv_bias);
      linear_shapes(layer + "self_attn.o_proj", c.q_size(), c.hidden_size, c.o_bias);
    }
    if (c.qk_norm) {
      out.push_back({layer + "self_attn.q_norm.weight", {c.head_dim}});
      out.push_back({layer + "self_attn.k_norm.weight", {c.head_dim}});
    }
    if (c.fused_projections) {
      linear_shapes(layer + "mlp.gate_up_proj", c.hidden_size, 2 * c.intermediate_size, c.mlp_bias);
    } else {
      linear_shapes(layer + "mlp.gate_proj", c.hidden_size, c.intermediate_size, c.mlp_bias);
      linear_shapes(layer + "mlp.up_proj", c.hidden_size, c.intermediate_size, c.mlp_bias);
    }
    linear_shapes(layer + "mlp.down_proj", c.intermediate_size, c.hidden_size, c.mlp_bias);
    out.push_back({layer + "input_layernorm.weight", {c.hidden_size}});
    out.push_back({layer + "post_attention_layernorm.weight", {c.hidden_size}});
  }
  out.push_back({"model.norm.weight", {c.hidden_size}});
  if (head == HeadKind::kValue)
    linear_shapes("score", c.hidden_size, 1, c.score_bias);
  else if (!c.tie_word_embeddings)
    linear_shapes("lm_head", c.hidden_size, c.vocab_size, false);
  return out;
}

// ---- CausalLM --------------------------------------------------------------------------------

CausalLM::CausalLM(ModelConfig config, HeadKind head, std::shared_ptr<dist::Communicator> tensor_parallel)
    : config_(std::move(config)), head_kind_(head) {
  if (tensor_parallel != nullptr && tensor_parallel->world_size() > 1) {
    VERL_CHECK_AS(ConfigError, head_kind_ == HeadKind::kLanguageModel,
                  "CausalLM: tensor parallelism serves the rollout engine, a model with the LM head");
    tensor_parallel_ = std::move(tensor_parallel);
  }
  shard_config_ = tensor_parallel_shard_config(config_, tensor_parallel_size());
  model = register_module("model", std::make_shared<DecoderModel>(shard_config_));
  for (auto& layer : model->layer_ptrs) {
    layer->self_attn->tensor_parallel = tensor_parallel_;
    layer->mlp->tensor_parallel = tensor_parallel_;
  }
  if (head_kind_ == HeadKind::kValue) {
    score = register_module("score", linear(config_.hidden_size, 1, config_.score_bias));
  } else if (!config_.tie_word_embeddings) {
    lm_head = register_module("lm_head", linear(shard_config_.hidden_size, shard_config_.vocab_size, false));
  }
  // Not a registered buffer: Module::to(dtype) would round it; it stays float32 like HF's.
  inv_freq_ = rope_inv_freq(config_);
}

int64_t CausalLM::tensor_parallel_size() const { return tensor_parallel_ ? tensor_parallel_->world_size() : 1; }

torch::Tensor CausalLM::embed(const torch::Tensor& input_ids) {
  if (gathering_) gathering_->gather_root();
  if (!tensor_parallel_) return model->embed_tokens->forward(input_ids);
  VERL_CHECK(!torch::GradMode::is_enabled(), "CausalLM: a tensor-parallel model runs inference only (no grad mode)");
  // This rank's rows of the vocabulary; the other ranks' ids read zeros, and the sum over the ranks is exact.
  const int64_t rows = shard_config_.vocab_size;
  torch::Tensor local = input_ids - tensor_parallel_->rank() * rows;
  torch::Tensor mine = (local >= 0).logical_and(local < rows);
  torch::Tensor h = model->embed_tokens->forward(local.clamp(0, rows - 1));
  h.masked_fill_(mine.logical_not().unsqueeze(-1), 0.0);
  tensor_parallel_->all_reduce_sum_(h);
  return h;
}

torch::Dtype CausalLM::dtype() const { return model->embed_tokens->weight.scalar_type(); }
torch::Device CausalLM::device() const { return model->embed_tokens->weight.device(); }

std::pair<torch::Tensor, torch::Tensor> CausalLM::rope(const torch::Tensor& positions, torch::Dtype dtype) const {
  torch::Tensor inv_freq = inv_freq_;
  if (positions.device() != inv_freq_.device()) {
    std::lock_guard<std::mutex> lock(inv_freq_device_.mutex);
    if (!inv_freq_device_.tensor.defined() || inv_freq_device_.tensor.device() != positions.device())
      inv_freq_device_.tensor = inv_freq_.to(positions.device());
    inv_freq = inv_freq_device_.tensor;
  }
  torch::Tensor freqs = positions.to(torch::kFloat).unsqueeze(-1) * inv_freq;  // (bs, q, d/2)
  torch::Tensor emb = torch::cat({freqs, freqs}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

torch::Tensor CausalLM::run_layers(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                                   const torch::Tensor& mask) {
  const bool checkpoint = gradient_checkpointing_ && torch::GradMode::is_enabled();
  if (checkpoint) h = input_requiring_grad(h);
  for (size_t i = 0; i < model->layer_ptrs.size(); ++i) {
    DecoderLayer* layer = model->layer_ptrs[i].get();
    auto forward = [&](const torch::Tensor& x) {
      if (checkpoint)
        return LayerCheckpoint::apply(x, reinterpret_cast<int64_t>(layer), cos, sin,
                                      mask.defined() ? mask : torch::empty({0}, cos.options()), mask.defined());
      return layer->forward(x, cos, sin, mask);
    };
    h = gathering_ ? gathering_->run_layer(static_cast<int64_t>(i), h, forward) : forward(h);
  }
  return model->norm->forward(h);
}

torch::Tensor CausalLM::apply_head(const torch::Tensor& hidden) {
  if (gathering_) gathering_->gather_root();
  if (head_kind_ == HeadKind::kValue) return score->forward(hidden).squeeze(-1);
  torch::Tensor logits = lm_head ? lm_head->forward(hidden) : F::linear(hidden, model->embed_tokens->weight);
  if (!tensor_parallel_) return logits;
  // Every rank's vocabulary rows, gathered in rank order: (t, ..., rows) -> (..., t * rows), padding dropped.
  const int64_t t = tensor_parallel_size(), rows = shard_config_.vocab_size;
  std::vector<int64_t> shape(logits.sizes().begin(), logits.sizes().end());
  const torch::Tensor gathered = tensor_parallel_->all_gather_flat(logits.contiguous().view(-1)).view({t, -1, rows});
  shape.back() = config_.vocab_size;
  return gathered.permute({1, 0, 2}).reshape({gathered.size(1), t * rows}).narrow(1, 0, config_.vocab_size).reshape(shape);
}

torch::Tensor CausalLM::hidden_states(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                      const torch::Tensor& position_ids) {
  VERL_CHECK(input_ids.dim() == 2, "CausalLM.forward: input_ids must be (bs, seq), got ", input_ids.sizes());
  const int64_t bs = input_ids.size(0), seq = input_ids.size(1);
  const auto device = input_ids.device();
  torch::Tensor valid = attention_mask.defined() ? attention_mask.to(device).to(torch::kBool)
                                                 : torch::ones({bs, seq}, torch::dtype(torch::kBool).device(device));
  VERL_CHECK(valid.sizes() == input_ids.sizes(), "CausalLM.forward: attention_mask ", valid.sizes(),
             " does not match input_ids ", input_ids.sizes());
  torch::Tensor positions;
  if (position_ids.defined()) {
    VERL_CHECK(position_ids.sizes() == input_ids.sizes(), "CausalLM.forward: position_ids ", position_ids.sizes(),
               " does not match input_ids ", input_ids.sizes());
    positions = position_ids.to(device);
  } else {
    positions = (valid.to(torch::kLong).cumsum(1) - 1).clamp_min(0);
  }
  torch::Tensor mask;  // undefined without padding: plain causal attention
  if (attention_mask.defined()) {
    torch::Tensor idx = torch::arange(seq, torch::dtype(torch::kLong).device(device));
    torch::Tensor causal = idx.unsqueeze(1) >= idx.unsqueeze(0);  // (q, k)
    // A padding query would see no key at all (softmax over nothing = NaN, which then leaks into
    // later layers through 0 * NaN); letting every query see itself keeps padding rows finite.
    torch::Tensor self = torch::eye(seq, torch::dtype(torch::kBool).device(device));
    mask = ((causal.unsqueeze(0) & valid.unsqueeze(1)) | self.unsqueeze(0)).unsqueeze(1);  // (bs, 1, q, k)
  }
  torch::Tensor h = embed(input_ids);
  auto [cos, sin] = rope(positions, h.scalar_type());
  return run_layers(h, cos, sin, mask);
}

torch::Tensor CausalLM::forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                const torch::Tensor& position_ids) {
  return apply_head(hidden_states(input_ids, attention_mask, position_ids));
}

torch::Tensor CausalLM::run_layers_varlen(torch::Tensor h, const torch::Tensor& cos, const torch::Tensor& sin,
                                          const VarlenLayout& layout) {
  const bool checkpoint = gradient_checkpointing_ && torch::GradMode::is_enabled();
  c10::intrusive_ptr<SharedVarlenLayout> shared;
  if (checkpoint) {
    shared = c10::make_intrusive<SharedVarlenLayout>(layout);
    h = input_requiring_grad(h);
  }
  for (size_t i = 0; i < model->layer_ptrs.size(); ++i) {
    DecoderLayer* layer = model->layer_ptrs[i].get();
    auto forward = [&](const torch::Tensor& x) {
      if (checkpoint) {
        return VarlenLayerCheckpoint::apply(x, reinterpret_cast<int64_t>(layer), cos, sin,
                                            reinterpret_cast<int64_t>(shared.get()));
      }
      return layer->forward_varlen(x, cos, sin, layout);
    };
    h = gathering_ ? gathering_->run_layer(static_cast<int64_t>(i), h, forward) : forward(h);
  }
  return model->norm->forward(h);
}

torch::Tensor CausalLM::hidden_states_packed(const torch::Tensor& input_ids, const torch::Tensor& cu_seqlens) {
  VERL_CHECK(input_ids.dim() == 1, "CausalLM.forward_packed: input_ids must be (total,), got ", input_ids.sizes());
  const auto device = input_ids.device();
  const int64_t total = input_ids.size(0);
  VarlenLayout layout;
  try {
    layout = VarlenLayout::build(cu_seqlens, total, device);
  } catch (const InvalidArgument& e) {
    VERL_FAIL(InvalidArgument, "CausalLM.forward_packed: ", e.what());
  }
  // Each token's position within its sequence, made on the host (where cu_seqlens is) and sent in one copy.
  const int64_t* cu = layout.cu_seqlens.const_data_ptr<int64_t>();
  std::vector<int64_t> position(total);
  for (int64_t s = 0; s + 1 < layout.cu_seqlens.size(0); ++s)
    for (int64_t t = cu[s]; t < cu[s + 1]; ++t) position[t] = t - cu[s];
  detail::HostArrays arrays;
  arrays.add(position);
  const torch::Tensor positions = arrays.to(device)[0];
  torch::Tensor h = embed(input_ids.unsqueeze(0));
  auto [cos, sin] = rope(positions.unsqueeze(0), h.scalar_type());
  return run_layers_varlen(h, cos, sin, layout).squeeze(0);
}

torch::Tensor CausalLM::forward_packed(const torch::Tensor& input_ids, const torch::Tensor& cu_seqlens) {
  return apply_head(hidden_states_packed(input_ids, cu_seqlens));
}

torch::Tensor CausalLM::forward_cached(const torch::Tensor& input_ids, const torch::Tensor& positions,
                                      AttentionCache& cache, const torch::Tensor& mask,
                                      const torch::Tensor& head_index) {
  VERL_CHECK(input_ids.dim() == 2 && positions.sizes() == input_ids.sizes(),
             "CausalLM.forward_cached: input_ids and positions must both be (bs, q), got ", input_ids.sizes(), " and ",
             positions.sizes());
  VERL_CHECK(head_index.dim() == 1 &&
                 (head_index.size(0) == input_ids.size(0) || (input_ids.size(0) == 1 && input_ids.size(1) > 1)),
             "CausalLM.forward_cached: head_index must be (bs,), or (n,) for one packed row, got ", head_index.sizes(),
             " for input_ids ", input_ids.sizes());
  // Rows finish at different steps on different ranks, so the ranks' gathers would not pair up.
  VERL_CHECK(!gathering_, "CausalLM.forward_cached: the parameters are sharded over data-parallel ranks (ZeRO-3); "
             "the rollout engine decodes from a copy of its own");
  torch::Tensor h = embed(input_ids);
  auto [cos, sin] = rope(positions, h.scalar_type());
  // The final norm is per token, so picking rows before it is exact and saves work.
  for (size_t i = 0; i < model->layer_ptrs.size(); ++i)
    h = model->layer_ptrs[i]->forward(h, cos, sin, mask, &cache, static_cast<int64_t>(i));
  if (h.size(1) == 1) {
    h = h.squeeze(1);
  } else if (h.size(0) == 1) {  // one (packed) row: any number of head tokens
    h = h[0].index_select(0, head_index.to(h.device()));
  } else {
    torch::Tensor index = head_index.to(h.device()).view({-1, 1, 1}).expand({h.size(0), 1, h.size(2)});
    h = h.gather(1, index).squeeze(1);
  }
  return apply_head(model->norm->forward_inference(h));
}

std::map<std::string, torch::Tensor> CausalLM::named_state() const {
  VERL_CHECK(!gathering_, "CausalLM.named_state: the parameters are sharded over data-parallel ranks (ZeRO-3); "
             "gather them with PPOTrainer::model_for_checkpoint (Python: verl.PPOTrainer.model_state_dict())");
  std::map<std::string, torch::Tensor> out;
  for (const auto& item : named_parameters(true)) out.emplace(item.key(), item.value());
  return out;
}

void CausalLM::load_shard_state_dict(const std::map<std::string, torch::Tensor>& shards) {
  VERL_CHECK(!gathering_, "CausalLM.load_shard_state_dict: the parameters are sharded over data-parallel ranks "
             "(ZeRO-3)");
  auto params = named_parameters(true);
  std::vector<std::string> bad;
  for (const auto& [name, tensor] : shards) {
    const torch::Tensor* p = params.find(name);
    if (p == nullptr || p->sizes() != tensor.sizes()) {
      std::ostringstream s;
      s << untrusted::escape(name) << " (given " << tensor.sizes();
      if (p != nullptr) s << ", this rank's " << p->sizes();
      s << ")";
      bad.push_back(s.str());
    }
  }
  if (!bad.empty()) VERL_FAIL(CheckpointError, "CausalLM.load_shard_state_dict: unknown or misshapen: [", join(bad), "]");
  torch::NoGradGuard no_grad;
  for (auto& item : params) {
    auto it = shards.find(item.key());
    if (it != shards.end()) item.value().copy_(it->second);
  }
}

void check_state_dict(const ModelConfig& config, HeadKind head, const std::map<std::string, torch::Tensor>& state,
                      bool strict, const std::string& who, const LoraConfig* lora) {
  // The whole model's names and shapes (a tensor-parallel rank's own are its shards' shapes).
  std::map<std::string, std::vector<int64_t>> whole_shapes;
  for (auto& [name, shape] : parameter_shapes(config, head, lora)) whole_shapes.emplace(name, std::move(shape));
  std::vector<std::string> missing, unexpected, mismatched;
  for (const auto& [name, shape] : whole_shapes)
    if (state.find(name) == state.end()) missing.push_back(name);
  for (const auto& [name, tensor] : state) {
    auto expected = whole_shapes.find(name);
    if (expected == whole_shapes.end()) {
      // HF state dicts of tied models carry lm_head.weight as an alias of the embedding.
      if (!(name == "lm_head.weight" && config.tie_word_embeddings && head == HeadKind::kLanguageModel))
        unexpected.push_back(untrusted::escape(name));  // a checkpoint's name: any bytes
    } else if (expected->second != tensor.sizes()) {
      std::ostringstream s;
      s << untrusted::escape(name) << " (checkpoint " << tensor.sizes() << ", model "
        << torch::IntArrayRef(expected->second) << ")";
      mismatched.push_back(s.str());
    }
  }
  std::ostringstream err;
  if (strict && !missing.empty()) err << " missing: [" << join(missing) << "];";
  if (strict && !unexpected.empty()) err << " unexpected: [" << join(unexpected) << "];";
  if (!mismatched.empty()) err << " shape mismatch: [" << join(mismatched) << "];";
  if (!err.str().empty()) VERL_FAIL(CheckpointError, who, ":", err.str());
}

void CausalLM::load_state_dict(const std::map<std::string, torch::Tensor>& state, bool strict) {
  VERL_CHECK(!gathering_, "CausalLM.load_state_dict: the parameters are sharded over data-parallel ranks (ZeRO-3); "
             "load them with PPOTrainer::load_model_state (Python: verl.PPOTrainer.load_checkpoint())");
  check_state_dict(config_, head_kind_, state, strict, "CausalLM.load_state_dict", lora_ ? &*lora_ : nullptr);
  auto params = named_parameters(true);
  torch::NoGradGuard no_grad;
  const int64_t t = tensor_parallel_size(), rank = tensor_parallel_ ? tensor_parallel_->rank() : 0;
  for (auto& item : params) {
    auto it = state.find(item.key());
    if (it == state.end()) continue;
    item.value().copy_(t == 1 ? it->second : tensor_parallel_shard(config_, item.key(), it->second, rank, t));
  }
}

// ---- LoRA ------------------------------------------------------------------------------------

namespace {

// The decoder linears by HF name, in the model's order (this rank's shards under tensor parallelism).
std::vector<std::pair<std::string, Linear*>> decoder_linears(const DecoderModel& body) {
  std::vector<std::pair<std::string, Linear*>> out;
  for (size_t i = 0; i < body.layer_ptrs.size(); ++i) {
    const std::string layer = "model.layers." + std::to_string(i) + ".";
    const DecoderLayer& l = *body.layer_ptrs[i];
    // A family has either the separate or the fused projections (phi3: o_proj, then qkv_proj, as Phi3Attention
    // registers them); the absent ones are null.
    for (const auto& [name, linear] : {std::pair<const char*, Linear*>{"self_attn.q_proj", l.self_attn->q_proj.get()},
                                       {"self_attn.k_proj", l.self_attn->k_proj.get()},
                                       {"self_attn.v_proj", l.self_attn->v_proj.get()},
                                       {"self_attn.o_proj", l.self_attn->o_proj.get()},
                                       {"self_attn.qkv_proj", l.self_attn->qkv_proj.get()},
                                       {"mlp.gate_proj", l.mlp->gate_proj.get()},
                                       {"mlp.up_proj", l.mlp->up_proj.get()},
                                       {"mlp.gate_up_proj", l.mlp->gate_up_proj.get()},
                                       {"mlp.down_proj", l.mlp->down_proj.get()}}) {
      if (linear != nullptr) out.emplace_back(layer + name, linear);
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> CausalLM::add_adapters(const LoraConfig& lora, uint64_t seed) {
  VERL_CHECK(!lora_, "CausalLM.add_adapters: the model has LoRA adapters already");
  VERL_CHECK(!gathering_, "CausalLM.add_adapters: add adapters before the parameters are sharded (ZeRO-3)");
  VERL_CHECK_AS(ConfigError, lora.dropout == 0, lora.key, ": lora_dropout = ", lora.dropout,
                " is not implemented (verl's adapters have no dropout); use 0");
  const std::vector<std::string> targets = lora_target_modules(config_, lora);  // the whole model's, on every rank
  const std::set<std::string> selected(targets.begin(), targets.end());
  const double scaling = lora.scaling();
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const int64_t t = tensor_parallel_size(), rank = tensor_parallel_ ? tensor_parallel_->rank() : 0;
  for (const auto& [name, linear] : decoder_linears(*model)) {
    if (!selected.count(name)) continue;
    // kaiming_uniform_(a=sqrt(5)) on A (rank, in): bound = gain * sqrt(3 / fan_in) = 1 / sqrt(in), drawn in float32
    // on the host for the whole model, so every device and every tensor-parallel layout starts from the same A.
    const bool row_parallel = shard_dim(name + ".weight") == ShardDim::kRow;  // its input features are split
    const int64_t in = row_parallel ? linear->weight.size(1) * t : linear->weight.size(1);
    const double bound = 1.0 / std::sqrt(static_cast<double>(in));
    torch::Tensor a = at::empty({lora.rank, in}, torch::kFloat32).uniform_(-bound, bound, gen);
    if (t > 1) a = tensor_parallel_shard(config_, name + ".lora_A.weight", a, rank, t);
    linear->add_adapter(lora.rank, scaling, a);
  }
  for (auto& item : named_parameters(true)) {
    const std::string& name = item.key();
    const bool trained = name.find(".lora_A.") != std::string::npos || name.find(".lora_B.") != std::string::npos ||
                         (head_kind_ == HeadKind::kValue && name.starts_with("score."));
    item.value().set_requires_grad(trained);
  }
  lora_ = lora;
  adapters_enabled_ = true;
  return targets;
}

void CausalLM::set_adapters_enabled(bool enabled) {
  for (const auto& [name, linear] : decoder_linears(*model)) linear->set_adapter_enabled(enabled);
  adapters_enabled_ = enabled;
}

std::map<std::string, torch::Tensor> CausalLM::adapter_state() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, linear] : decoder_linears(*model)) {
    if (!linear->has_adapter()) continue;
    out.emplace(name + ".lora_A.weight", linear->lora_A->weight);
    out.emplace(name + ".lora_B.weight", linear->lora_B->weight);
  }
  return out;
}

std::map<std::string, torch::Tensor> CausalLM::merged_state() const {
  std::map<std::string, torch::Tensor> out = named_state();
  torch::NoGradGuard no_grad;
  for (const auto& [name, linear] : decoder_linears(*model)) {
    if (!linear->has_adapter()) continue;
    out.erase(name + ".lora_A.weight");
    out.erase(name + ".lora_B.weight");
    out[name + ".weight"] = linear->merged_weight();
  }
  return out;
}

}  // namespace verl::model
