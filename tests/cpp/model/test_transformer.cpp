// verl::model: config.json parsing and its errors, HF state-dict names per family, strict loading,
// and the equivalence of padded, packed and paged-KV-cache (rollout engine) forwards; gradients reach every
// parameter.
#include <catch2/catch.hpp>
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/rollout/kv_cache.h"
#include "tensor_compare.h"

using namespace verl::model;

namespace {

using verl::testing::max_diff;

verl::Json tiny_json(const std::string& type) {
  verl::Json j = {{"model_type", type},        {"vocab_size", 64},          {"hidden_size", 32},
                  {"intermediate_size", 48},   {"num_hidden_layers", 2},    {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},  {"rms_norm_eps", 1e-6},      {"rope_theta", 10000.0},
                  {"max_position_embeddings", 128}, {"tie_word_embeddings", false}};
  if (type == "qwen3") j["head_dim"] = 16;
  if (type == "llama")
    j["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                         {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}};
  return j;
}

std::shared_ptr<CausalLM> tiny_model(const std::string& type, bool tied = false) {
  verl::Json j = tiny_json(type);
  j["tie_word_embeddings"] = tied;
  torch::manual_seed(0);
  auto m = std::make_shared<CausalLM>(ModelConfig::from_json(j));
  m->to(torch::kDouble);
  return m;
}

// Incremental decoding as the rollout engine runs it (Engine::run: PagedKVCache + BlockManager +
// CausalLM::forward_cached): every row is its prompt followed by 4 decode tokens; each forward feeds a row
// the next chunk of up to 3 prompt tokens (chunked prefill, crossing block boundaries) or, once its prompt is
// in, one token; rows at different stages share the forward (padded to the longest chunk, padding written to
// the scratch slot, or packed, below) and finished rows drop out. Each row's logits at its chunk's last token equal the full
// forward of the row's tokens so far. `kernel`: verl::paged_attention reading the blocks in place (the CPU
// kernel, or CUDA's), or the gather + SDPA path under a mask. Forwards with prefill chunks run padded
// (Packing::kNone), packed as Engine::run packs them (kEngine: PagedKVCache::packed_prefill), or as the engine does
// except that chunks which all start their prompts attend within themselves (kPrompts: PagedBatch::prompts, what
// the engine does on CUDA). Runs on the model's device and dtype; `tolerance`: on each logit, against the full
// forward in that dtype.
enum class Packing { kNone, kEngine, kPrompts };
constexpr double kBf16Tolerance = 0.05;
void check_paged_decoding(CausalLM& m, const std::vector<torch::Tensor>& prompts, bool kernel, Packing packing,
                          double tolerance = 1e-10) {
  const int64_t block_size = 4, num_blocks = 16, decode_steps = 4, chunk = 3;
  verl::rollout::PagedKVCache cache(m.config(), num_blocks, block_size, m.dtype(), m.device());
  cache.set_paged_attention_kernel(kernel);
  verl::rollout::BlockManager blocks(num_blocks, block_size);
  const size_t rows = prompts.size();
  std::vector<std::vector<int64_t>> tokens(rows), tables(rows);
  std::vector<int64_t> prompt_len(rows), done(rows, 0);
  for (size_t i = 0; i < rows; ++i) {
    torch::Tensor row = torch::cat({prompts[i], torch::randint(64, {decode_steps}, torch::kLong)});
    tokens[i].assign(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
    prompt_len[i] = prompts[i].numel();
  }
  int64_t forwards = 0, packed_prompts = 0, packed_token_rows = 0;
  while (true) {
    std::vector<size_t> batch;
    std::vector<int64_t> len;
    for (size_t i = 0; i < rows; ++i) {
      const int64_t left = static_cast<int64_t>(tokens[i].size()) - done[i];
      if (left == 0) continue;
      batch.push_back(i);
      len.push_back(done[i] < prompt_len[i] ? std::min(chunk, prompt_len[i] - done[i]) : 1);
    }
    if (batch.empty()) break;
    const int64_t bs = static_cast<int64_t>(batch.size());
    const int64_t q = *std::max_element(len.begin(), len.end());
    std::vector<std::vector<int64_t>> slots(batch.size());
    std::vector<std::pair<int64_t, int64_t>> copies;
    int64_t max_blocks = 0;
    for (int64_t b = 0; b < bs; ++b) {
      const size_t i = batch[b];
      slots[b] = blocks.append_slots(tables[i], done[i], len[b], copies);
      max_blocks = std::max(max_blocks, static_cast<int64_t>(tables[i].size()));
    }
    REQUIRE(copies.empty());  // nothing is shared here
    torch::Tensor ids = torch::zeros({bs, q}, torch::kLong), pos = torch::zeros({bs, q}, torch::kLong);
    torch::Tensor slot = torch::zeros({bs * q}, torch::kLong), table = torch::zeros({bs, max_blocks}, torch::kLong);
    torch::Tensor head = torch::zeros({bs}, torch::kLong);
    for (int64_t b = 0; b < bs; ++b) {
      const size_t i = batch[b];
      for (int64_t t = 0; t < len[b]; ++t) {
        ids[b][t] = tokens[i][done[i] + t];
        pos[b][t] = done[i] + t;
        slot[b * q + t] = slots[b][t];
      }
      for (size_t k = 0; k < tables[i].size(); ++k) table[b][static_cast<int64_t>(k)] = tables[i][k];
      head[b] = len[b] - 1;
    }
    const torch::Device dev = m.device();
    bool all_start = true;
    for (size_t i : batch) all_start = all_start && done[i] == 0;
    using verl::rollout::PackedPrefill;
    PackedPrefill mode = PackedPrefill::kPadded;
    if (packing != Packing::kNone && q > 1)
      mode = packing == Packing::kPrompts && all_start ? PackedPrefill::kPrompts : cache.packed_prefill(all_start);
    torch::Tensor logits;
    if (mode != PackedPrefill::kPadded) {
      // The rows' chunks end to end: (1, total) tokens, one head token per chunk.
      std::vector<int64_t> flat_ids, flat_pos, flat_slots, flat_head, cu = {0};
      std::vector<torch::Tensor> token_tables;
      for (int64_t b = 0; b < bs; ++b) {
        for (int64_t t = 0; t < len[b]; ++t) {
          flat_ids.push_back(ids[b][t].item<int64_t>());
          flat_pos.push_back(pos[b][t].item<int64_t>());
          flat_slots.push_back(slots[b][t]);
          token_tables.push_back(table[b]);
        }
        cu.push_back(cu.back() + len[b]);
        flat_head.push_back(cu.back() - 1);
      }
      const int64_t total = cu.back();
      torch::Tensor packed_pos = torch::tensor(flat_pos).view({1, total}).to(dev);
      verl::rollout::PagedBatch pb{torch::tensor(flat_slots).to(dev), {}, {}};
      if (mode == PackedPrefill::kPrompts) {
        pb.prompts = std::make_shared<const verl::kernels::VarlenLayout>(
            verl::kernels::VarlenLayout::build(torch::tensor(cu), total, dev));
        ++packed_prompts;
      } else {
        pb.block_tables = torch::stack(token_tables).to(dev);
        pb.positions = packed_pos.view({total, 1});
        pb.token_rows = true;
        ++packed_token_rows;
      }
      cache.set_batch(pb);
      logits = m.forward_cached(torch::tensor(flat_ids).view({1, total}).to(dev), packed_pos, cache, {},
                                torch::tensor(flat_head).to(dev));
    } else {
      torch::Tensor mask;
      if (cache.needs_mask(q))
        mask = torch::arange(max_blocks * block_size, torch::kLong).view({1, 1, 1, -1}) <= pos.view({bs, 1, q, 1});
      pos = pos.to(dev);
      cache.set_batch({slot.to(dev), table.to(dev), pos});
      logits = m.forward_cached(ids.to(dev), pos, cache, mask.defined() ? mask.to(dev) : mask, head.to(dev));
    }
    REQUIRE(logits.sizes() == torch::IntArrayRef{bs, 64});
    ++forwards;
    for (int64_t b = 0; b < bs; ++b) {
      const size_t i = batch[b];
      done[i] += len[b];
      torch::Tensor prefix = torch::tensor(std::vector<int64_t>(tokens[i].begin(), tokens[i].begin() + done[i]));
      torch::Tensor full = m.forward(prefix.unsqueeze(0).to(m.device()))[0].select(0, -1);
      CHECK(max_diff(logits[b], full) < tolerance);
    }
  }
  // Prompts of 5, 9, 3 tokens: 2, 3, 1 prefill chunks, then 4 decode steps each.
  CHECK(forwards == 7);
  // The first forward starts every prompt; the next two continue some (beside other rows' decode tokens).
  const bool rows_kernel = cache.uses_kernel(2);  // CPU's; CUDA's kernel takes one query token per row
  const bool engine_prompts = cache.packed_prefill(true) == verl::rollout::PackedPrefill::kPrompts;
  const bool prompts_first = packing == Packing::kPrompts || (packing == Packing::kEngine && engine_prompts);
  CHECK(packed_prompts == (prompts_first ? 1 : 0));
  CHECK(packed_token_rows == (packing == Packing::kNone || !rows_kernel ? 0 : prompts_first ? 2 : 3));
  for (size_t i = 0; i < rows; ++i)
    CHECK(static_cast<int64_t>(tables[i].size()) == (done[i] + block_size - 1) / block_size);
  // A slot outside the pool is refused before any write.
  CHECK_THROWS_AS(cache.set_batch({torch::tensor({num_blocks * block_size}, torch::kLong),
                                   torch::zeros({1, 1}, torch::kLong), torch::zeros({1, 1}, torch::kLong)}),
                  verl::InvalidArgument);
  // So is a packed layout the cache does not run (token rows without a kernel that takes them), and both at once.
  verl::rollout::PagedBatch bad{torch::zeros({2}, torch::kLong), torch::zeros({2, 1}, torch::kLong),
                                 torch::zeros({2, 1}, torch::kLong)};
  bad.token_rows = true;
  if (!cache.uses_kernel(2)) CHECK_THROWS_AS(cache.set_batch(bad), verl::InvalidArgument);
  bad.prompts = std::make_shared<const verl::kernels::VarlenLayout>(
      verl::kernels::VarlenLayout::build(torch::tensor({0, 2}), 2, torch::kCPU));
  CHECK_THROWS_AS(cache.set_batch(bad), verl::InvalidArgument);
}

}  // namespace

TEST_CASE("ModelConfig parses the families and round-trips", "[model]") {
  ModelConfig q2 = ModelConfig::from_json(tiny_json("qwen2"));
  CHECK(q2.qkv_bias);
  CHECK_FALSE(q2.o_bias);
  CHECK(q2.head_dim == 8);
  CHECK_FALSE(q2.qk_norm);
  ModelConfig q3 = ModelConfig::from_json(tiny_json("qwen3"));
  CHECK(q3.qk_norm);
  CHECK(q3.head_dim == 16);
  CHECK_FALSE(q3.qkv_bias);
  ModelConfig ll = ModelConfig::from_json(tiny_json("llama"));
  REQUIRE(ll.rope_scaling.has_value());
  CHECK(ll.rope_scaling->original_max_position_embeddings == 16);
  ModelConfig back = ModelConfig::from_json(ll.to_json());
  CHECK(back.to_json() == ll.to_json());
  // transformers 5 spelling: rope_parameters carrying rope_theta.
  verl::Json j5 = tiny_json("qwen2");
  j5.erase("rope_theta");
  j5["rope_parameters"] = {{"rope_type", "default"}, {"rope_theta", 500.0}};
  j5["eos_token_id"] = verl::Json::array({1, 2});
  ModelConfig c5 = ModelConfig::from_json(j5);
  CHECK(c5.rope_theta == 500.0);
  CHECK(c5.eos_token_ids == std::vector<int64_t>{1, 2});
}

TEST_CASE("ModelConfig errors name the field and the file", "[model]") {
  verl::Json j = tiny_json("qwen2");
  j["model_type"] = "gpt2";
  CHECK_THROWS_AS(ModelConfig::from_json(j, "x/config.json"), verl::ConfigError);
  CHECK_THROWS_WITH(ModelConfig::from_json(j, "x/config.json"),
                    Catch::Contains("gpt2") && Catch::Contains("x/config.json"));
  j = tiny_json("llama");
  j.erase("hidden_size");
  CHECK_THROWS_WITH(ModelConfig::from_json(j, "y/config.json"),
                    Catch::Contains("hidden_size") && Catch::Contains("y/config.json"));
  j = tiny_json("llama");
  j["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 2.0}};
  CHECK_THROWS_AS(ModelConfig::from_json(j), verl::ConfigError);
  j = tiny_json("llama");
  j["rope_scaling"].erase("low_freq_factor");
  CHECK_THROWS_WITH(ModelConfig::from_json(j), Catch::Contains("low_freq_factor"));
  CHECK_THROWS_AS(ModelConfig::from_file("/nonexistent/config.json"), verl::ConfigError);
}

TEST_CASE("CausalLM parameter names are the HF state-dict names", "[model]") {
  auto names = [](const CausalLM& m) {
    std::set<std::string> out;
    for (const auto& [k, v] : m.named_state()) out.insert(k);
    return out;
  };
  std::set<std::string> layer0 = {"model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                                   "model.layers.0.self_attn.v_proj.weight", "model.layers.0.self_attn.o_proj.weight",
                                   "model.layers.0.mlp.gate_proj.weight",    "model.layers.0.mlp.up_proj.weight",
                                   "model.layers.0.mlp.down_proj.weight",    "model.layers.0.input_layernorm.weight",
                                   "model.layers.0.post_attention_layernorm.weight"};
  auto expected = [&](const std::set<std::string>& extra) {
    std::set<std::string> out = {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"};
    for (const auto& n : layer0) {
      out.insert(n);
      std::string n1 = n;
      n1.replace(n1.find(".0."), 3, ".1.");
      out.insert(n1);
    }
    for (const auto& e : extra) {
      out.insert("model.layers.0." + e);
      out.insert("model.layers.1." + e);
    }
    return out;
  };
  CHECK(names(*tiny_model("llama")) == expected({}));
  CHECK(names(*tiny_model("qwen2")) ==
        expected({"self_attn.q_proj.bias", "self_attn.k_proj.bias", "self_attn.v_proj.bias"}));
  CHECK(names(*tiny_model("qwen3")) == expected({"self_attn.q_norm.weight", "self_attn.k_norm.weight"}));
  // Phi-3: transformers' fused modules in place of q/k/v_proj and gate/up_proj.
  std::set<std::string> phi3 = expected({"self_attn.qkv_proj.weight", "mlp.gate_up_proj.weight"});
  for (const char* separate : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "mlp.gate_proj",
                               "mlp.up_proj"}) {
    for (const char* layer : {"model.layers.0.", "model.layers.1."})
      phi3.erase(std::string(layer) + separate + ".weight");
  }
  CHECK(names(*tiny_model("phi3")) == phi3);
  CHECK(tiny_model("phi3")->named_state().at("model.layers.0.self_attn.qkv_proj.weight").sizes() ==
        torch::IntArrayRef{32 + 2 * 16, 32});
  CHECK(tiny_model("phi3")->named_state().at("model.layers.0.mlp.gate_up_proj.weight").sizes() ==
        torch::IntArrayRef{2 * 48, 32});
  auto tied = names(*tiny_model("llama", true));
  CHECK(tied.count("lm_head.weight") == 0);
  CausalLM value(ModelConfig::from_json(tiny_json("qwen2")), HeadKind::kValue);
  auto vn = names(value);
  CHECK(vn.count("score.weight") == 1);
  CHECK(vn.count("lm_head.weight") == 0);
  CHECK(tiny_model("qwen3")->named_state().at("model.layers.1.self_attn.q_norm.weight").sizes() ==
        torch::IntArrayRef{16});
}

TEST_CASE("CausalLM strict load lists missing, unexpected and mismatched names", "[model]") {
  auto m = tiny_model("qwen2");
  auto state = m->named_state();
  auto other = tiny_model("qwen2");
  other->load_state_dict(state, true);  // a full state loads
  CHECK(max_diff(other->named_state().at("model.norm.weight"), state.at("model.norm.weight")) == 0.0);

  auto broken = state;
  broken.erase("model.layers.1.mlp.up_proj.weight");
  broken["model.layers.9.mlp.up_proj.weight"] = torch::zeros({48, 32});
  broken["model.norm.weight"] = torch::zeros({7});
  try {
    other->load_state_dict(broken, true);
    FAIL("expected CheckpointError");
  } catch (const verl::CheckpointError& e) {
    std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("missing: [model.layers.1.mlp.up_proj.weight]"));
    CHECK_THAT(msg, Catch::Contains("unexpected: [model.layers.9.mlp.up_proj.weight]"));
    CHECK_THAT(msg, Catch::Contains("model.norm.weight"));
  }
  broken.erase("model.norm.weight");
  CHECK_NOTHROW(other->load_state_dict(broken, false));  // non-strict skips missing/unexpected
}

TEST_CASE("CausalLM packed, left-padded and paged-KV-cache forwards agree", "[model]") {
  for (const std::string type : {"qwen2", "qwen3", "llama", "phi3"}) {
    SECTION(type) {
      auto m = tiny_model(type);
      torch::NoGradGuard ng;
      torch::manual_seed(1);
      const std::vector<int64_t> lens = {5, 9, 3};
      const int64_t seq = 9;
      std::vector<torch::Tensor> seqs;
      for (int64_t l : lens) seqs.push_back(torch::randint(64, {l}, torch::kLong));
      // Left-padded batch.
      torch::Tensor ids = torch::zeros({3, seq}, torch::kLong), mask = torch::zeros({3, seq}, torch::kLong);
      for (int i = 0; i < 3; ++i) {
        ids[i].narrow(0, seq - lens[i], lens[i]).copy_(seqs[i]);
        mask[i].narrow(0, seq - lens[i], lens[i]).fill_(1);
      }
      torch::Tensor padded = m->forward(ids, mask);
      REQUIRE(padded.sizes() == torch::IntArrayRef{3, seq, 64});
      REQUIRE(torch::isfinite(padded).all().item<bool>());
      torch::Tensor packed = m->forward_packed(torch::cat(seqs), torch::tensor({0, 5, 14, 17}, torch::kLong));
      REQUIRE(packed.sizes() == torch::IntArrayRef{17, 64});
      int64_t off = 0;
      for (int i = 0; i < 3; ++i) {
        torch::Tensor alone = m->forward(seqs[i].unsqueeze(0))[0];
        CHECK(max_diff(padded[i].narrow(0, seq - lens[i], lens[i]), alone) < 1e-10);
        CHECK(max_diff(packed.narrow(0, off, lens[i]), alone) < 1e-10);
        off += lens[i];
      }
      // Incremental decoding goes through the rollout engine's paged KV cache (the one decode path).
      for (bool kernel : {true, false})
        for (Packing packing : {Packing::kNone, Packing::kEngine, Packing::kPrompts})
          check_paged_decoding(*m, seqs, kernel, packing);
      // bf16, the rollout's usual dtype: the kernel's bf16 path. Logits of 1-2 here; bf16 paths differ by <= 0.01.
      auto half = tiny_model(type);
      half->to(torch::kBFloat16);
      for (Packing packing : {Packing::kNone, Packing::kEngine, Packing::kPrompts})
        check_paged_decoding(*half, seqs, true, packing, kBf16Tolerance);
    }
  }
}

TEST_CASE("CausalLM on CUDA: paged-KV decoding through the CUDA kernel and through gather + SDPA equals the full "
          "forward", "[model][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  for (const std::string type : {"qwen2", "qwen3", "llama"}) {
    SECTION(type) {
      auto m = tiny_model(type);
      m->to(torch::kCUDA);
      torch::NoGradGuard ng;
      torch::manual_seed(1);
      std::vector<torch::Tensor> seqs;
      for (int64_t l : {5, 9, 3}) seqs.push_back(torch::randint(64, {l}, torch::kLong));
      verl::rollout::PagedKVCache probe(m->config(), 2, 4, m->dtype(), m->device());
      probe.set_paged_attention_kernel(true);
      INFO("the CUDA paged-attention kernel is compiled in (VERL_WITH_CUDA)");
      CHECK(probe.uses_kernel(1));
      CHECK_FALSE(probe.uses_kernel(3));  // one query token per row: prefill goes packed (fresh prompts) or padded
      CHECK(probe.packed_prefill(true) == verl::rollout::PackedPrefill::kPadded);  // fp64: no flash attention
      for (bool kernel : {true, false})
        for (Packing packing : {Packing::kNone, Packing::kEngine, Packing::kPrompts})
          check_paged_decoding(*m, seqs, kernel, packing);
      // bf16: fresh prompts' prefill is one flash-attention varlen call, as the engine runs it.
      auto half = tiny_model(type);
      half->to(torch::kCUDA, torch::kBFloat16);
      verl::rollout::PagedKVCache half_probe(half->config(), 2, 4, half->dtype(), half->device());
      CHECK(half_probe.packed_prefill(true) == verl::rollout::PackedPrefill::kPrompts);
      CHECK(half_probe.packed_prefill(false) == verl::rollout::PackedPrefill::kPadded);
      for (Packing packing : {Packing::kNone, Packing::kEngine, Packing::kPrompts})
        check_paged_decoding(*half, seqs, true, packing, kBf16Tolerance);
    }
  }
}

TEST_CASE("CausalLM gradients reach every parameter, with and without checkpointing", "[model]") {
  for (const std::string type : {"qwen2", "qwen3", "llama"}) {
    auto m = tiny_model(type);
    torch::manual_seed(2);
    torch::Tensor ids = torch::randint(64, {2, 6}, torch::kLong);
    torch::Tensor mask = torch::ones({2, 6}, torch::kLong);
    mask[0][0] = 0;
    m->forward(ids, mask).log_softmax(-1).mean().backward();
    std::map<std::string, torch::Tensor> grads;
    for (const auto& [name, p] : m->named_state()) {
      INFO(type << " " << name);
      REQUIRE(p.grad().defined());
      CHECK(torch::isfinite(p.grad()).all().item<bool>());
      CHECK(p.grad().abs().sum().item<double>() > 0);
      grads[name] = p.grad().clone();
      p.mutable_grad().zero_();
    }
    m->set_gradient_checkpointing(true);
    m->forward(ids, mask).log_softmax(-1).mean().backward();
    for (const auto& [name, p] : m->named_state()) {
      INFO(type << " checkpointed " << name);
      CHECK(max_diff(p.grad(), grads.at(name)) < 1e-12);
    }
  }
  // Value head.
  torch::manual_seed(0);
  CausalLM v(ModelConfig::from_json(tiny_json("qwen3")), HeadKind::kValue);
  torch::Tensor values = v.forward(torch::randint(64, {2, 5}, torch::kLong));
  CHECK(values.sizes() == torch::IntArrayRef{2, 5});
  values.sum().backward();
  CHECK(v.score->weight.grad().defined());
}

TEST_CASE("CausalLM runs in bf16 with finite logits", "[model]") {
  auto m = tiny_model("qwen3");
  m->to(torch::kBFloat16);
  torch::NoGradGuard ng;
  torch::Tensor logits = m->forward(torch::randint(64, {2, 7}, torch::kLong));
  CHECK(logits.scalar_type() == torch::kBFloat16);
  CHECK(torch::isfinite(logits).all().item<bool>());
}
