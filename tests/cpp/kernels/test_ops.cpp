// Every verl op (kernels/ops.h) against its portable reference on every device this machine has:
// on CPU, the CPU kernel against the op's ATen composition (kernels/aten/compositions.h) run on the
// same CPU tensors; on CUDA, the op (its CUDA kernel, or the composition where it has none) against
// the CPU kernel on the same inputs -- bit for bit where the kernels promise the same roundings.
// CUDA cases skip, with a message, where torch sees no GPU.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <limits>
#include <string>
#include <vector>

#include "kernels/aten/compositions.h"
#include "kernels/ops.h"
#include "verl/core/error.h"
#include "verl/model/rope.h"
#include "verl/model/transformer.h"

namespace ops = verl::kernels;
namespace aten_ops = verl::kernels::aten;

namespace {

// True where the CUDA case can run; otherwise says why it is skipped.
bool cuda_or_skip(const char* what) {
  if (torch::cuda::is_available()) return true;
  WARN(std::string("skipped on CUDA: torch sees no GPU on this machine (") + what + ")");
  return false;
}

double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.cpu().to(torch::kDouble) - b.cpu().to(torch::kDouble)).abs().max().item<double>();
}

const std::vector<std::string> kOps = {"paged_attention", "kv_cache_write", "sample",   "gae_scan",
                                       "gae_advantage_return", "rotary",   "group_mean_std", "row_sums",
                                       "scale_rows_by_mask"};
const std::vector<std::string> kCudaKernels = {"kv_cache_write", "gae_scan",  "rotary",           "sample",
                                                "paged_attention", "rms_norm", "softmax_row_stats"};

struct PagedInputs {
  torch::Tensor q, k_pool, v_pool, tables, positions;
};

// Rows of ragged contexts in scattered blocks; q a transposed view, as the model hands it over.
PagedInputs paged_inputs(torch::Dtype dtype, int64_t heads, int64_t kv_heads, int64_t d, int64_t block_size,
                         int64_t q_len, int64_t context = 24) {
  const int64_t bs = 3, max_blocks = context / block_size + 1, blocks = bs * max_blocks + 1;
  PagedInputs in;
  in.k_pool = torch::randn({blocks, block_size, kv_heads, d}).to(dtype);
  in.v_pool = torch::randn({blocks, block_size, kv_heads, d}).to(dtype);
  in.tables = (torch::randperm(blocks - 1, torch::kLong) + 1).narrow(0, 0, bs * max_blocks).view({bs, max_blocks});
  in.positions = torch::randint(0, max_blocks * block_size, {bs, q_len}, torch::kLong);
  in.positions[0][0] = 0;  // a context of one token
  in.q = torch::randn({bs, q_len, heads, d}).to(dtype).transpose(1, 2);
  return in;
}

}  // namespace

TEST_CASE("kernels: every op has a CPU kernel and an ATen composition; CUDA kernels all or none", "[kernels]") {
  for (const std::string& op : kOps) {
    INFO("verl::" << op);
    CHECK(ops::has_kernel(op.c_str(), c10::DispatchKey::CPU));
    CHECK(ops::has_kernel(op.c_str(), c10::DispatchKey::CompositeExplicitAutograd));
  }
  // Built with VERL_WITH_CUDA: each .cu kernel registered for the CUDA key; without: none is.
  const bool with_cuda = ops::has_kernel("kv_cache_write", c10::DispatchKey::CUDA);
  for (const std::string& op : kCudaKernels) CHECK(ops::has_kernel(op.c_str(), c10::DispatchKey::CUDA) == with_cuda);
  for (const char* op : {"gae_advantage_return", "row_sums", "group_mean_std"}) CHECK_FALSE(ops::has_kernel(op, c10::DispatchKey::CUDA));
  // rms_norm: CPU runs RMSNorm's op sequence itself (the composition), so the CPU engine's norms stay the trainer's.
  // softmax_row_stats likewise: the CPU's log-prob and entropy arithmetic is the composition's.
  for (const char* op : {"rms_norm", "softmax_row_stats"}) {
    CHECK_FALSE(ops::has_kernel(op, c10::DispatchKey::CPU));
    CHECK(ops::has_kernel(op, c10::DispatchKey::CompositeExplicitAutograd));
  }
  // The fused vanilla loss exists on CPU only; elsewhere policy_loss.cpp runs verl's formula.
  CHECK(ops::has_kernel_for("vanilla_token_losses", torch::zeros({1})));
  CHECK_FALSE(ops::has_kernel_for("vanilla_token_losses", torch::empty({1}, torch::kMeta)));
  CHECK(ops::has_kernel_for("sample", torch::empty({1}, torch::kMeta)));  // the composition runs anywhere
  CHECK_THROWS_AS(ops::has_kernel("no_such_op", c10::DispatchKey::CPU), c10::Error);
}

TEST_CASE("kernels: paged_attention with a sliding window", "[kernels]") {
  // Each query sees its last `window` positions: the CPU kernel (its portable loop, from the window's first key) and,
  // on CUDA, the composition it falls back to, against the gather + SDPA composition under the band mask; a window
  // no shorter than the context is no window at all.
  torch::manual_seed(22);
  const PagedInputs in = paged_inputs(torch::kFloat, 4, 2, 16, 4, 3, 40);
  const double scale = 0.25;
  const torch::Tensor full = ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, false);
  for (int64_t window : {1, 3, 7, 16}) {
    INFO("window " << window);
    const torch::Tensor want =
        aten_ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, true, window);
    for (bool simd : {true, false}) {
      const torch::Tensor got =
          ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, simd, window);
      CHECK(max_abs_diff(got, want) <= 2e-6);
    }
    CHECK(max_abs_diff(want, full) > 1e-3);  // the window changes the result
    if (window == 1) {  // one key, the query's own: the output is the value stored at its position
      const int64_t block_size = in.k_pool.size(1), group = in.q.size(1) / in.k_pool.size(2);
      for (int64_t i = 0; i < in.q.size(0); ++i)
        for (int64_t t = 0; t < in.q.size(2); ++t)
          for (int64_t h = 0; h < in.q.size(1); ++h) {
            const int64_t pos = in.positions[i][t].item<int64_t>();
            const int64_t block = in.tables[i][pos / block_size].item<int64_t>();
            const torch::Tensor value = in.v_pool[block][pos % block_size][h / group];
            CHECK(max_abs_diff(want[i][h][t], value) <= 1e-6);
          }
    }
    if (cuda_or_skip("paged_attention")) {
      const torch::Tensor gpu = ops::paged_attention(in.q.cuda(), in.k_pool.cuda(), in.v_pool.cuda(), in.tables.cuda(),
                                                     in.positions.cuda(), scale, true, window);
      CHECK(max_abs_diff(gpu.cpu(), want) <= 1e-5);
    }
  }
  const int64_t capacity = in.tables.size(1) * in.k_pool.size(1);
  const torch::Tensor wide =
      ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, false, capacity);
  CHECK(torch::equal(wide, full));
}

TEST_CASE("kernels: paged_attention on each device against the gather + SDPA composition", "[kernels]") {
  torch::manual_seed(21);
  struct Case {
    torch::Dtype dtype;
    int64_t heads, kv_heads, d, block_size, q_len;
    double tol;
    int64_t context = 24;  // the table's capacity in tokens (about)
  };
  // On CUDA (paged_attention.cu): head_dim 16 / 64 / 128 of float32 and 64 / 128 of bfloat16 run the warp kernel,
  // the rest the GQA kernel (head_dim 12; bfloat16 16 and 8), the double case the warp kernel. Long contexts give
  // each warp many keys, so its running maximum changes within the walk; block size 1 and 4 make a step of keys
  // cross blocks.
  for (const Case& c : {Case{torch::kFloat, 4, 2, 16, 4, 1, 2e-6}, Case{torch::kFloat, 8, 2, 64, 16, 3, 2e-6},
                        Case{torch::kFloat, 4, 4, 12, 1, 2, 2e-6}, Case{torch::kDouble, 4, 1, 8, 4, 2, 1e-13},
                        Case{torch::kFloat, 14, 2, 64, 16, 1, 2e-6, 700}, Case{torch::kFloat, 8, 1, 128, 16, 2, 2e-6, 300}}) {
    INFO("dtype " << c.dtype << " heads " << c.heads << "/" << c.kv_heads << " d " << c.d << " block " << c.block_size
                  << " q " << c.q_len << " context " << c.context);
    const PagedInputs in = paged_inputs(c.dtype, c.heads, c.kv_heads, c.d, c.block_size, c.q_len, c.context);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
    const torch::Tensor want = aten_ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, true, 0);
    for (bool simd : {true, false}) {
      const torch::Tensor got = ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, simd);
      CHECK(got.sizes() == want.sizes());
      CHECK(max_abs_diff(got, want) <= c.tol);
    }
    {
      // bfloat16 on the CPU: the SIMD kernel (head_dim a multiple of 8) against the portable loop. Both widen to
      // float and accumulate in float, so they can differ by one bf16 rounding step (<= 2^-7 relative) and no more.
      const torch::Tensor q16 = in.q.to(torch::kBFloat16), k16 = in.k_pool.to(torch::kBFloat16),
                          v16 = in.v_pool.to(torch::kBFloat16);
      const torch::Tensor fast = ops::paged_attention(q16, k16, v16, in.tables, in.positions, scale, true);
      const torch::Tensor slow = ops::paged_attention(q16, k16, v16, in.tables, in.positions, scale, false);
      REQUIRE(fast.scalar_type() == torch::kBFloat16);
      const torch::Tensor a = fast.to(torch::kDouble), b = slow.to(torch::kDouble);
      CHECK(((a - b).abs() <= std::ldexp(1.0, -7) * b.abs() + 1e-6).all().item<bool>());
      // and both against the float64 composition on the same bf16 inputs, within bf16's resolution
      const torch::Tensor exact = aten_ops::paged_attention(q16.to(torch::kDouble), k16.to(torch::kDouble),
                                                            v16.to(torch::kDouble), in.tables, in.positions, scale, true, 0);
      CHECK(((a - exact).abs() <= std::ldexp(1.0, -7) * exact.abs() + 1e-4).all().item<bool>());
    }
    if (!cuda_or_skip("paged_attention")) continue;
    const torch::Tensor cpu = ops::paged_attention(in.q, in.k_pool, in.v_pool, in.tables, in.positions, scale, false);
    const torch::Tensor got = ops::paged_attention(in.q.cuda(), in.k_pool.cuda(), in.v_pool.cuda(), in.tables.cuda(),
                                                   in.positions.cuda(), scale, true);
    CHECK(got.is_cuda());
    CHECK(max_abs_diff(got, cpu) <= (c.dtype == torch::kDouble ? 1e-12 : 1e-5));
    // bfloat16: both accumulate in float from the same inputs; the outputs differ by their last rounding.
    const torch::Tensor cpu16 = ops::paged_attention(in.q.to(torch::kBFloat16), in.k_pool.to(torch::kBFloat16),
                                                     in.v_pool.to(torch::kBFloat16), in.tables, in.positions, scale);
    const torch::Tensor gpu16 = ops::paged_attention(in.q.to(torch::kBFloat16).cuda(), in.k_pool.to(torch::kBFloat16).cuda(),
                                                     in.v_pool.to(torch::kBFloat16).cuda(), in.tables.cuda(),
                                                     in.positions.cuda(), scale);
    const torch::Tensor a = gpu16.cpu().to(torch::kDouble), b = cpu16.to(torch::kDouble);
    CHECK(((a - b).abs() <= 1e-2 * b.abs() + 1e-2).all().item<bool>());
  }
}

TEST_CASE("kernels: kv_cache_write on each device equals index_copy_ bit for bit", "[kernels]") {
  torch::manual_seed(22);
  for (auto pool_dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kDouble}) {
    for (auto x_dtype : {pool_dtype, torch::kFloat}) {
      INFO("pool " << pool_dtype << " x " << x_dtype);
      const int64_t blocks = 9, block_size = 4, kv_heads = 2, d = 6, bs = 3, q = 2;
      const torch::Tensor base = torch::randn({blocks, block_size, kv_heads, d}).to(pool_dtype);
      // x as attention hands it over: (bs, kv_heads, q, d), a transposed view.
      const torch::Tensor x = torch::randn({bs, q, kv_heads, d}).to(x_dtype).transpose(1, 2);
      const torch::Tensor slots = torch::randperm(blocks * block_size, torch::kLong).narrow(0, 0, bs * q).contiguous();
      torch::Tensor want = base.clone(), got = base.clone();
      aten_ops::kv_cache_write(want, slots, x.to(pool_dtype));
      ops::kv_cache_write(got, slots, x);
      CHECK(torch::equal(got, want));
      CHECK_FALSE(torch::equal(got, base));
      torch::Tensor bad = base.clone();
      CHECK_THROWS_AS(ops::kv_cache_write(bad, slots.narrow(0, 0, 5), x), verl::Error);
      if (!cuda_or_skip("kv_cache_write")) continue;
      torch::Tensor on_gpu = base.cuda();
      ops::kv_cache_write(on_gpu, slots.cuda(), x.cuda());
      CHECK(torch::equal(on_gpu.cpu(), got));
    }
  }
}

TEST_CASE("kernels: sample on each device against the ATen sampler, row by row", "[kernels]") {
  torch::manual_seed(23);
  const int64_t vocab = 300;
  verl::kernels::SamplerRows rows;
  // greedy, plain (T = 1 and T = 0.7), top-k, top-p, min-p, and all three truncations at once.
  rows.push(0.0, 0, 1.0, 0.0, 0.3);
  rows.push(1.0, 0, 1.0, 0.0, 0.61);
  rows.push(0.7, 0, 1.0, 0.0, 0.17);
  rows.push(0.9, 20, 1.0, 0.0, 0.42);
  rows.push(1.1, 0, 0.8, 0.0, 0.93);
  rows.push(1.0, 0, 1.0, 0.05, 0.55);
  rows.push(0.8, 50, 0.9, 0.01, 0.08);
  const torch::Tensor logits = torch::randn({static_cast<int64_t>(rows.size()), vocab}) * 3;
  const verl::kernels::SampleResult want = aten_ops::sample_rows(logits, rows);
  for (bool simd : {true, false}) {
    INFO("allow_simd " << simd);
    auto [tokens, logprobs] =
        ops::sample(logits, rows.temperature, rows.top_k, rows.top_p, rows.min_p, rows.uniform, simd);
    CHECK(torch::equal(tokens, want.tokens));
    CHECK(max_abs_diff(logprobs, want.logprobs) <= 2e-6);
  }
  if (!cuda_or_skip("sample")) return;
  auto [tokens, logprobs] = ops::sample(logits.cuda(), rows.temperature, rows.top_k, rows.top_p, rows.min_p, rows.uniform);
  CHECK(tokens.is_cuda());
  CHECK(torch::equal(tokens.cpu(), want.tokens));
  CHECK(max_abs_diff(logprobs, want.logprobs) <= 2e-6);
  // Qwen2.5's vocabulary, untruncated rows only (the CUDA kernel's one-block-per-row scan): the same
  // draws as the CPU kernel, greedy rows the argmax.
  verl::kernels::SamplerRows wide;
  for (int i = 0; i < 16; ++i) wide.push(i % 4 == 0 ? 0.0 : 0.5 + 0.1 * i, 0, 1.0, 0.0, (i + 0.5) / 16.0);
  const torch::Tensor big = torch::randn({16, 151936}) * 4;
  auto [cpu_tokens, cpu_logprobs] = ops::sample(big, wide.temperature, wide.top_k, wide.top_p, wide.min_p, wide.uniform);
  auto [gpu_tokens, gpu_logprobs] =
      ops::sample(big.cuda(), wide.temperature, wide.top_k, wide.top_p, wide.min_p, wide.uniform);
  CHECK(torch::equal(gpu_tokens.cpu(), cpu_tokens));
  CHECK(max_abs_diff(gpu_logprobs, cpu_logprobs) <= 1e-5);
  CHECK(torch::equal(gpu_tokens.cpu().index({torch::indexing::Slice(0, 16, 4)}), big.argmax(1).index({torch::indexing::Slice(0, 16, 4)})));
}

TEST_CASE("kernels: gae_scan and gae_advantage_return on each device against the ATen loop", "[kernels]") {
  torch::manual_seed(24);
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    const int64_t bs = 7, length = 33;
    const torch::Tensor rewards = torch::randn({bs, length}).to(dtype);
    const torch::Tensor values = torch::randn({bs, length}).to(dtype);
    // Multi-turn masks: observation spans (mask 0) inside the response, and a row's padded tail.
    torch::Tensor valid = torch::rand({bs, length}) > 0.3;
    valid.narrow(1, length - 5, 5).narrow(0, 0, 2).fill_(false);
    for (const torch::Tensor& mask : {valid, valid.to(torch::kLong), valid.to(torch::kFloat)}) {
      INFO("dtype " << dtype << " mask " << mask.scalar_type());
      const torch::Tensor want = aten_ops::gae_scan_aten(rewards, values, mask, 0.99, 0.95);
      const torch::Tensor got = ops::gae_scan(rewards, values, mask, 0.99, 0.95);
      CHECK(torch::equal(got, want));
      auto [adv_want, ret_want] = aten_ops::gae_advantage_return(rewards, values, mask, 0.99, 0.95);
      auto [adv, ret] = ops::gae_advantage_return(rewards, values, mask, 0.99, 0.95);
      CHECK(torch::equal(adv, adv_want));
      CHECK(torch::equal(ret, ret_want));
      if (!cuda_or_skip("gae")) continue;
      // The CUDA scan kernel has the CPU kernel's roundings: bit for bit. Whitening reduces in
      // another order on the GPU.
      CHECK(torch::equal(ops::gae_scan(rewards.cuda(), values.cuda(), mask.cuda(), 0.99, 0.95).cpu(), got));
      auto [adv_gpu, ret_gpu] = ops::gae_advantage_return(rewards.cuda(), values.cuda(), mask.cuda(), 0.99, 0.95);
      CHECK(max_abs_diff(adv_gpu, adv) <= (dtype == torch::kFloat ? 1e-5 : 1e-12));
      CHECK(torch::equal(ret_gpu.cpu(), ret));
    }
  }
  torch::Tensor bad = torch::randn({2, 4});
  bad[1][2] = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_AS(ops::gae_advantage_return(bad, torch::zeros({2, 4}), torch::ones({2, 4}), 1.0, 1.0), verl::Error);
  CHECK_THROWS_AS(ops::gae_scan(torch::zeros({2, 4}), torch::zeros({2, 3}), torch::ones({2, 4}), 1.0, 1.0),
                  verl::Error);
}

TEST_CASE("kernels: rotary on each device equals the ATen op sequence bit for bit", "[kernels]") {
  torch::manual_seed(25);
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kDouble}) {
    INFO("dtype " << dtype);
    const int64_t bs = 2, heads = 3, q = 5, d = 16;
    const torch::Tensor angle = torch::rand({bs, q, d}) * 50;
    const torch::Tensor cos = angle.cos().to(dtype), sin = angle.sin().to(dtype);
    const torch::Tensor x = (torch::randn({bs, q, heads, d}) * 4).to(dtype).transpose(1, 2);
    const torch::Tensor want = aten_ops::rotary(x, cos, sin);
    const torch::Tensor got = ops::rotary(x, cos, sin);
    CHECK(torch::equal(got, want));
    if (!cuda_or_skip("rotary")) continue;
    const torch::Tensor on_gpu = ops::rotary(x.cuda(), cos.cuda(), sin.cuda());
    CHECK(torch::equal(on_gpu.cpu(), got));
    CHECK(on_gpu.strides() == got.strides());
  }
}

TEST_CASE("kernels: rms_norm is RMSNorm's op sequence on CPU and within two roundings of float64 on CUDA", "[kernels]") {
  torch::manual_seed(27);
  torch::NoGradGuard no_grad;
  const double eps = 1e-6;
  // Rows of 896 (Qwen2.5-0.5B's hidden size: more elements than the kernel's threads), 64 (a qk-norm head) and 3.
  for (int64_t dim : {896, 64, 3}) {
    for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kDouble}) {
      INFO("dim " << dim << ", dtype " << dtype);
      const torch::Tensor x = (torch::randn({2, 5, dim}) * 3).to(dtype);
      const torch::Tensor weight = (torch::rand({dim}) + 0.5).to(dtype);
      const torch::Tensor want = aten_ops::rms_norm(x, weight, eps);
      CHECK(torch::equal(ops::rms_norm(x, weight, eps), want));
      // A weight of another dtype promotes, as the op sequence does.
      CHECK(torch::equal(ops::rms_norm(x, weight.to(torch::kFloat), eps),
                         aten_ops::rms_norm(x, weight.to(torch::kFloat), eps)));
      // Against the norm computed in float64 throughout: two roundings to a 16-bit dtype (the normalised row, then
      // its product with the weight), each within the unit roundoff; float32's own arithmetic for the rest.
      const double unit = dtype == torch::kBFloat16 ? 0x1p-8 : dtype == torch::kHalf ? 0x1p-11 : 0.0;
      const double tol = 2.5 * unit + 1e-5;
      const torch::Tensor xd = x.to(torch::kDouble);
      const torch::Tensor exact = weight.to(torch::kDouble) * xd * torch::rsqrt(xd.pow(2).mean(-1, true) + eps);
      CHECK(((want.to(torch::kDouble) - exact).abs() <= exact.abs() * tol).all().item<bool>());  // the bound holds
      if (!cuda_or_skip("rms_norm")) continue;
      const torch::Tensor on_gpu = ops::rms_norm(x.cuda().transpose(0, 1), weight.cuda(), eps).transpose(0, 1).cpu();
      REQUIRE(on_gpu.scalar_type() == dtype);
      CHECK(((on_gpu.to(torch::kDouble) - exact).abs() <= exact.abs() * tol).all().item<bool>());
    }
  }
  CHECK_THROWS_AS(ops::rms_norm(torch::zeros({2, 4}), torch::ones({3}), eps), std::exception);
}

TEST_CASE("kernels: softmax_row_stats on each device against log_softmax", "[kernels]") {
  torch::manual_seed(28);
  torch::NoGradGuard no_grad;
  const double inf = std::numeric_limits<double>::infinity();
  for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kDouble}) {
    INFO("dtype " << dtype);
    // 6 rows of a vocabulary wider than the CUDA kernel's threads, logits up to ~15: then rows holding -inf (masked
    // tokens), only -inf, and +inf, which ATen's logsumexp shifts by 0.
    torch::Tensor logits = (torch::randn({9, 1000}, torch::kDouble) * 5).to(dtype);
    logits[6].narrow(0, 0, 500).fill_(-inf);
    logits[7].fill_(-inf);
    logits[8][3] = inf;
    const torch::Tensor labels = torch::randint(500, 1000, {9, 1}, torch::kLong);
    const auto [lse, picked, mean_x] = ops::softmax_row_stats(logits, labels, true);
    const auto compute = dtype == torch::kDouble ? torch::kDouble : torch::kFloat;
    REQUIRE(lse.scalar_type() == compute);
    const torch::Tensor x = logits.to(torch::kDouble);
    const torch::Tensor log_p = torch::log_softmax(x.narrow(0, 0, 7), -1);
    const double tol = dtype == torch::kDouble ? 1e-12 : 2e-5;
    CHECK(max_abs_diff(lse.narrow(0, 0, 7), torch::logsumexp(x.narrow(0, 0, 7), -1, true)) <= tol);
    CHECK(torch::equal(picked, logits.to(compute).gather(1, labels)));
    // E_p[x] of the finite rows (a -inf logit makes it 0 * -inf = NaN, in the composition as in verl's formula).
    CHECK(max_abs_diff(mean_x.narrow(0, 0, 6), (log_p.exp() * x.narrow(0, 0, 7)).sum(-1, true).narrow(0, 0, 6)) <=
          tol * 10);
    CHECK(lse[7].item<double>() == -inf);
    CHECK(lse[8].item<double>() == inf);
    // Without labels or the mean: empty outputs.
    const auto [lse2, none, no_mean] = ops::softmax_row_stats(logits, torch::empty({0, 1}, torch::kLong), false);
    CHECK(torch::equal(lse2, lse));
    CHECK((none.numel() == 0 && no_mean.numel() == 0));
    if (!cuda_or_skip("softmax_row_stats")) continue;
    const auto [g_lse, g_picked, g_mean] = ops::softmax_row_stats(logits.cuda(), labels.cuda(), true);
    REQUIRE(g_lse.scalar_type() == compute);
    CHECK(max_abs_diff(g_lse.narrow(0, 0, 7), lse.narrow(0, 0, 7)) <= tol);
    CHECK(g_lse[7].item<double>() == -inf);
    CHECK(g_lse[8].item<double>() == inf);
    CHECK(torch::equal(g_picked.cpu(), picked));
    CHECK(max_abs_diff(g_mean.narrow(0, 0, 6), mean_x.narrow(0, 0, 6)) <= tol * 10);
    CHECK(torch::equal(g_mean.narrow(0, 6, 3).cpu().isnan(), mean_x.narrow(0, 6, 3).isnan()));
  }
  CHECK_THROWS_AS(ops::softmax_row_stats(torch::zeros({2, 4}), torch::zeros({3, 1}, torch::kLong), false),
                  std::exception);
}

TEST_CASE("kernels: group_mean_std, row_sums and scale_rows_by_mask on each device against ATen", "[kernels]") {
  torch::manual_seed(26);
  for (auto dtype : {torch::kFloat, torch::kDouble}) {
    INFO("dtype " << dtype);
    const torch::Tensor scores = torch::randn({12}).to(dtype);
    // Groups of 4, 3, 1 (a singleton: mean 0, std 1) and 4.
    const torch::Tensor id = torch::tensor({0, 0, 1, 3, 1, 0, 2, 3, 3, 1, 0, 3}, torch::kLong);
    const torch::Tensor count = torch::tensor({4, 3, 1, 4}).to(dtype);
    auto [mean_want, std_want] = aten_ops::group_mean_std(scores, id, count);
    auto [mean, std] = ops::group_mean_std(scores, id, count);
    CHECK(torch::equal(mean, mean_want));
    CHECK(torch::equal(std, std_want));
    CHECK(mean[2].item<double>() == 0.0);
    CHECK(std[2].item<double>() == 1.0);

    const torch::Tensor rewards = torch::randn({5, 301}).to(dtype);
    const double sum_tol = dtype == torch::kFloat ? 1e-5 : 1e-12;
    CHECK(max_abs_diff(ops::row_sums(rewards), aten_ops::row_sums(rewards)) <= sum_tol);

    const torch::Tensor scalar = torch::randn({5}).to(dtype);
    const torch::Tensor valid = torch::rand({5, 301}) > 0.4;
    for (const torch::Tensor& mask : {valid, valid.to(torch::kLong), valid.to(torch::kUInt8), valid.to(dtype)}) {
      INFO("mask " << mask.scalar_type());
      CHECK(torch::equal(ops::scale_rows_by_mask(scalar, mask), aten_ops::scale_rows_by_mask(scalar, mask)));
    }
    if (!cuda_or_skip("advantage rows")) continue;
    auto [mean_gpu, std_gpu] = ops::group_mean_std(scores.cuda(), id.cuda(), count.cuda());
    CHECK(max_abs_diff(mean_gpu, mean) <= sum_tol);
    CHECK(max_abs_diff(std_gpu, std) <= sum_tol);
    CHECK(max_abs_diff(ops::row_sums(rewards.cuda()), ops::row_sums(rewards)) <= sum_tol);
    CHECK(torch::equal(ops::scale_rows_by_mask(scalar.cuda(), valid.cuda()).cpu(), ops::scale_rows_by_mask(scalar, valid)));
  }
}
