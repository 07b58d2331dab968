// The rollout engine's CPU fast paths against ATen references on random inputs: the float32
// (AVX2) paged-attention kernel and the fused sampler for untruncated rows.
#include <catch2/catch.hpp>
#include <cmath>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/rollout/paged_attention.h"
#include "verl/rollout/sampler.h"

using namespace verl::rollout;

namespace {

// Plain softmax attention of one (row, head, token) over the row's blocks, in float64.
torch::Tensor reference_attention(const torch::Tensor& q, const torch::Tensor& kp, const torch::Tensor& vp,
                                  const torch::Tensor& tables, const torch::Tensor& pos, double scale) {
  const int64_t bs = q.size(0), heads = q.size(1), q_len = q.size(2), d = q.size(3);
  const int64_t bsz = kp.size(1), kvh = kp.size(2), group = heads / kvh, cap = tables.size(1) * bsz;
  torch::Tensor out = torch::zeros({bs, heads, q_len, d}, torch::kDouble);
  for (int64_t i = 0; i < bs; ++i)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t t = 0; t < q_len; ++t) {
        const int64_t len = std::min(pos[i][t].item<int64_t>() + 1, cap);
        std::vector<torch::Tensor> ks, vs;
        for (int64_t j = 0; j < len; ++j) {
          const int64_t b = tables[i][j / bsz].item<int64_t>();
          ks.push_back(kp[b][j % bsz][h / group].to(torch::kDouble));
          vs.push_back(vp[b][j % bsz][h / group].to(torch::kDouble));
        }
        torch::Tensor w = torch::softmax(torch::stack(ks).matmul(q[i][h][t].to(torch::kDouble)) * scale, 0);
        out[i][h][t] = w.matmul(torch::stack(vs));
      }
  return out;
}

}  // namespace

TEST_CASE("paged attention: float32 SIMD kernel equals the portable loop and a float64 softmax", "[rollout]") {
  // head_dim: below one vector, odd, one vector + tail, multiples of 8 and 16; groups 1, 2, 4;
  // block sizes 1 (every slot its own block), 4 and 16; contexts of 1 token, ragged, and past the
  // table's capacity (clamped); a peaked softmax (large scale).
  struct Case {
    int64_t d, heads, kv_heads, block_size, q_len;
    double scale;
  };
  const std::vector<Case> cases = {{3, 2, 2, 4, 1, 0.5},  {12, 4, 2, 1, 2, 0.3}, {32, 4, 2, 16, 1, 0.18},
                                   {64, 8, 2, 16, 3, 0.125}, {80, 4, 1, 4, 1, 0.11}, {16, 4, 4, 4, 2, 4.0}};
  torch::manual_seed(11);
  for (const Case& c : cases) {
    const int64_t bs = 3, max_blocks = 40 / c.block_size + 1, blocks = bs * max_blocks + 1;
    torch::Tensor kp = torch::randn({blocks, c.block_size, c.kv_heads, c.d});
    torch::Tensor vp = torch::randn_like(kp);
    // Each row's blocks are a random, disjoint selection of the pool (scattered, out of order).
    torch::Tensor tables = (torch::randperm(blocks - 1, torch::kLong) + 1).narrow(0, 0, bs * max_blocks).view({bs, max_blocks});
    torch::Tensor pos = torch::tensor(std::vector<int64_t>{0, 5, 39, 17, 1, max_blocks * c.block_size + 7}, torch::kLong)
                            .narrow(0, 0, bs * c.q_len > 6 ? 6 : bs * c.q_len);
    pos = torch::cat({pos, torch::randint(0, 40, {bs * c.q_len - pos.size(0)}, torch::kLong)}).view({bs, c.q_len});
    // q as the model hands it over: a transposed view, not contiguous.
    torch::Tensor q = torch::randn({bs, c.q_len, c.heads, c.d}).transpose(1, 2);
    torch::Tensor simd = paged_attention_cpu(q, kp, vp, tables, pos, c.scale, /*allow_simd=*/true);
    torch::Tensor loop = paged_attention_cpu(q, kp, vp, tables, pos, c.scale, /*allow_simd=*/false);
    torch::Tensor ref = reference_attention(q, kp, vp, tables, pos, c.scale);
    INFO("d=" << c.d << " heads=" << c.heads << " kv_heads=" << c.kv_heads << " block_size=" << c.block_size);
    CHECK(simd.sizes() == ref.sizes());
    CHECK((simd.to(torch::kDouble) - ref).abs().max().item<double>() < 2e-5);
    CHECK((loop.to(torch::kDouble) - ref).abs().max().item<double>() < 2e-5);
  }
}

TEST_CASE("paged attention: bad shapes raise instead of reading out of bounds", "[rollout]") {
  torch::Tensor kp = torch::randn({4, 4, 2, 8}), q = torch::randn({2, 4, 1, 8});
  torch::Tensor tables = torch::zeros({2, 1}, torch::kLong);
  CHECK_THROWS_AS(paged_attention_cpu(q, kp, kp, tables, torch::zeros({2, 2}, torch::kLong), 1.0), verl::Error);
  CHECK_THROWS_AS(paged_attention_cpu(q, kp, kp, torch::zeros({1, 1}, torch::kLong), torch::zeros({2, 1}, torch::kLong), 1.0),
                  verl::Error);
  CHECK_THROWS_AS(paged_attention_cpu(q.to(torch::kDouble), kp, kp, tables, torch::zeros({2, 1}, torch::kLong), 1.0),
                  verl::Error);
}

TEST_CASE("sampler: fused CPU rows (SIMD and portable) equal the inverse CDF of softmax(logits / T) in float64", "[rollout]") {
  torch::manual_seed(5);
  const int64_t rows = 24, vocab = 1003;  // not a multiple of 8: the vector tail too
  // Logit scales from flat to very peaked; temperatures 1 (exact pass-through), 0.7, 1.6, and greedy.
  torch::Tensor logits = torch::randn({rows, vocab}) * torch::linspace(0.5, 12.0, rows).unsqueeze(1);
  SamplerRows sr;
  std::vector<double> temps;
  for (int64_t i = 0; i < rows; ++i) {
    const double t = i % 4 == 0 ? 1.0 : i % 4 == 1 ? 0.7 : i % 4 == 2 ? 1.6 : 0.0;
    temps.push_back(t);
    sr.push(t, -1, 1.0, 0.0, stream_uniform(77, static_cast<uint64_t>(i)));
  }
  for (const bool simd : {true, false}) {
    SampleResult got = sample(logits, sr, simd);
    for (int64_t i = 0; i < rows; ++i) {
      const double t = temps[i] == 0.0 ? 1.0 : temps[i];
      torch::Tensor x = logits[i] / static_cast<float>(t);
      torch::Tensor logp = torch::log_softmax(x.to(torch::kDouble), 0);
      int64_t want;
      if (temps[i] == 0.0) {
        want = x.argmax().item<int64_t>();
      } else {
        torch::Tensor cdf = logp.exp().cumsum(0);
        const double target = sr.uniform[i] * cdf[vocab - 1].item<double>();
        want = (cdf <= target).sum().item<int64_t>();  // first index whose cumulative mass exceeds target
      }
      INFO("row " << i << " temperature " << temps[i] << " simd " << simd);
      CHECK(got.tokens[i].item<int64_t>() == want);
      CHECK(std::abs(got.logprobs[i].item<double>() - logp[want].item<double>()) < 1e-5);
    }
  }
}
