// verl::kernels varlen attention: the equal-length grouping of VarlenLayout, and packed forwards
// (values and gradients, with and without checkpointing) equal to per-sequence forwards for many
// sequences of very different lengths, repeated lengths out of order and empty sequences.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <numeric>
#include <sstream>
#include <vector>

#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/model/transformer.h"
#include "verl/kernels/varlen_attention.h"
#include "tensor_compare.h"

using namespace verl::kernels;
using namespace verl::model;

namespace {

using verl::testing::max_diff;

torch::Tensor cumulative(const std::vector<int64_t>& lens) {
  std::vector<int64_t> cu = {0};
  for (int64_t l : lens) cu.push_back(cu.back() + l);
  return torch::tensor(cu, torch::kLong);
}

// Reference: plain softmax attention of each sequence on its own (explicit causal mask, GQA by
// repeating kv heads).
torch::Tensor reference(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                        const std::vector<int64_t>& lens, double scale) {
  const int64_t rep = q.size(0) / k.size(0);
  std::vector<torch::Tensor> outs;
  int64_t off = 0;
  for (int64_t l : lens) {
    if (l == 0) continue;
    torch::Tensor qs = q.narrow(1, off, l), ks = k.narrow(1, off, l).repeat_interleave(rep, 0),
                  vs = v.narrow(1, off, l).repeat_interleave(rep, 0);
    torch::Tensor scores = torch::matmul(qs, ks.transpose(1, 2)) * scale;
    torch::Tensor causal = torch::ones({l, l}, torch::kBool).tril();
    scores = scores.masked_fill(causal.logical_not(), -std::numeric_limits<double>::infinity());
    outs.push_back(torch::matmul(scores.softmax(-1), vs));
    off += l;
  }
  return torch::cat(outs, 1);
}

}  // namespace

TEST_CASE("VarlenLayout groups equal lengths and orders rows back", "[model]") {
  // lengths 3, 2, 3, 3, 0, 1: group 3 = sequences 0, 2, 3 (not contiguous), group 2, group 1.
  VarlenLayout l = VarlenLayout::build(cumulative({3, 2, 3, 3, 0, 1}), 12, torch::kCPU);
  REQUIRE(l.groups.size() == 3);
  CHECK(l.groups[0].length == 3);
  CHECK(l.groups[0].count == 3);
  CHECK_FALSE(l.groups[0].contiguous);
  CHECK(torch::equal(l.groups[0].token_index, torch::tensor({0, 1, 2, 5, 6, 7, 8, 9, 10}, torch::kLong)));
  CHECK(l.groups[1].contiguous);
  CHECK(l.groups[1].first_start == 3);
  REQUIRE(l.inverse.defined());
  // Concatenated rows: [0,1,2,5,6,7,8,9,10 | 3,4 | 11]; token t sits at row inverse[t].
  CHECK(torch::equal(l.inverse, torch::tensor({0, 1, 2, 9, 10, 3, 4, 5, 6, 7, 8, 11}, torch::kLong)));
  // Distinct lengths in order, or equal lengths end to end: no gather and no permutation.
  CHECK_FALSE(VarlenLayout::build(cumulative({4, 1, 7}), 12, torch::kCPU).inverse.defined());
  VarlenLayout same = VarlenLayout::build(cumulative({4, 4, 4}), 12, torch::kCPU);
  CHECK(same.groups.size() == 1);
  CHECK(same.groups[0].contiguous);
  CHECK_FALSE(same.inverse.defined());
  CHECK_THROWS_AS(VarlenLayout::build(torch::tensor({0, 5, 3, 12}, torch::kLong), 12, torch::kCPU),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(VarlenLayout::build(torch::tensor({0, 5}, torch::kLong), 12, torch::kCPU), verl::InvalidArgument);
  CHECK_THROWS_AS(VarlenLayout::build(torch::tensor({1, 12}, torch::kLong), 12, torch::kCPU), verl::InvalidArgument);
}

TEST_CASE("varlen_causal_attention equals per-sequence softmax attention", "[model]") {
  torch::manual_seed(3);
  const std::vector<int64_t> lens = {1, 17, 3, 3, 0, 40, 3, 2, 17, 1, 9};
  const int64_t total = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  torch::Tensor q = torch::randn({4, total, 8}, torch::kDouble);
  torch::Tensor k = torch::randn({2, total, 8}, torch::kDouble);
  torch::Tensor v = torch::randn({2, total, 8}, torch::kDouble);
  VarlenLayout layout = VarlenLayout::build(cumulative(lens), total, torch::kCPU);
  torch::Tensor out = varlen_causal_attention(q, k, v, layout, 0.3);
  REQUIRE(out.sizes() == torch::IntArrayRef{4, total, 8});
  CHECK(max_diff(out, reference(q, k, v, lens, 0.3)) < 1e-12);
}

TEST_CASE("forward_packed equals per-sequence forwards for very different lengths, with gradients", "[model]") {
  verl::Json j = {{"model_type", "qwen3"},     {"vocab_size", 64},         {"hidden_size", 32},
                  {"intermediate_size", 48},   {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                  {"num_key_value_heads", 2},  {"head_dim", 16},           {"max_position_embeddings", 256}};
  torch::manual_seed(0);
  CausalLM m(ModelConfig::from_json(j));
  m.to(torch::kDouble);
  // 24 sequences: lengths 1..120, repeats out of order (gathered groups), an empty one.
  const std::vector<int64_t> lens = {120, 1, 7, 64, 1, 33, 7, 0, 2, 90, 5, 7, 1, 16, 33, 3,
                                     11, 2, 58, 1, 4, 120, 9, 6};
  std::vector<torch::Tensor> seqs;
  for (int64_t l : lens) seqs.push_back(torch::randint(64, {l}, torch::kLong));
  torch::Tensor ids = torch::cat(seqs), cu = cumulative(lens);

  torch::Tensor packed = m.forward_packed(ids, cu);
  REQUIRE(packed.size(0) == ids.size(0));
  // Reference gradients: each sequence alone through the padded path.
  torch::Tensor loss_ref = torch::zeros({}, torch::kDouble);
  int64_t off = 0;
  double worst = 0;
  std::ostringstream where;  // which sequence and position differ, should this ever fail again
  for (size_t i = 0; i < lens.size(); ++i) {
    if (lens[i] == 0) continue;
    torch::Tensor alone = m.forward(seqs[i].unsqueeze(0))[0];
    torch::Tensor diff = (packed.narrow(0, off, lens[i]) - alone.detach()).abs().amax(-1);
    const double d = diff.max().item<double>();
    if (d > 1e-10)
      where << "sequence " << i << " (length " << lens[i] << "): max diff " << d << " at position "
            << diff.argmax().item<int64_t>() << "; ";
    worst = std::max(worst, d);
    loss_ref = loss_ref + alone.logsumexp(-1).sum();
    off += lens[i];
  }
  if (worst >= 1e-10) {
    // Seen only under oversubscription, in the first forward_packed of a process (MKL threads): say whether a
    // second forward agrees with the first.
    torch::NoGradGuard no_grad;
    where << "a second forward_packed differs from the first by " << max_diff(m.forward_packed(ids, cu), packed.detach());
  }
  INFO(where.str());
  CHECK(worst < 1e-10);
  loss_ref.backward();
  std::map<std::string, torch::Tensor> ref_grads;
  for (auto& [name, p] : m.named_state()) {
    ref_grads[name] = p.grad().clone();
    p.mutable_grad().zero_();
  }
  for (bool checkpointing : {false, true}) {
    m.set_gradient_checkpointing(checkpointing);
    m.forward_packed(ids, cu).logsumexp(-1).sum().backward();
    for (auto& [name, p] : m.named_state()) {
      INFO(name << " checkpointing=" << checkpointing);
      CHECK(max_diff(p.grad(), ref_grads.at(name)) < 1e-9);
      p.mutable_grad().zero_();
    }
  }
  CHECK_THROWS_AS(m.forward_packed(ids, torch::tensor({0, 3}, torch::kLong)), verl::InvalidArgument);
}

TEST_CASE("varlen_causal_attention on CUDA in bf16 (flash attention varlen) equals the float64 reference, with "
          "gradients", "[model][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  torch::manual_seed(4);
  const std::vector<int64_t> lens = {1, 17, 3, 3, 0, 40, 3, 2, 17, 1, 9};
  const int64_t total = std::accumulate(lens.begin(), lens.end(), int64_t{0});
  torch::Tensor q = torch::randn({4, total, 64}, torch::kDouble);
  torch::Tensor k = torch::randn({2, total, 64}, torch::kDouble);
  torch::Tensor v = torch::randn({2, total, 64}, torch::kDouble);
  torch::Tensor w = torch::randn({4, total, 64}, torch::kDouble);
  const torch::Device cuda(torch::kCUDA);
  VarlenLayout layout = VarlenLayout::build(cumulative(lens), total, cuda);
  REQUIRE(layout.cu_seqlens_device.defined());
  CHECK(layout.max_length == 40);
  auto half = [&](const torch::Tensor& t) { return t.to(cuda, torch::kBFloat16).requires_grad_(true); };
  torch::Tensor qh = half(q), kh = half(k), vh = half(v);
  torch::Tensor out = varlen_causal_attention(qh, kh, vh, layout, 0.125);
  REQUIRE(out.sizes() == torch::IntArrayRef{4, total, 64});
  (out.to(torch::kDouble) * w.to(cuda)).sum().backward();
  // The reference sees the bf16-rounded inputs; what is left is bf16's rounding of the output (~4e-3 relative).
  auto rounded = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).to(torch::kDouble).requires_grad_(true); };
  torch::Tensor qr = rounded(q), kr = rounded(k), vr = rounded(v);
  torch::Tensor ref = reference(qr, kr, vr, lens, 0.125);
  (ref * w).sum().backward();
  CHECK(max_diff(out.detach().cpu().to(torch::kDouble), ref.detach()) < 2e-2);
  CHECK(max_diff(qh.grad().cpu().to(torch::kDouble), qr.grad()) < 5e-2);
  CHECK(max_diff(kh.grad().cpu().to(torch::kDouble), kr.grad()) < 5e-2);
  CHECK(max_diff(vh.grad().cpu().to(torch::kDouble), vr.grad()) < 5e-2);
}
