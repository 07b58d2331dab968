// verl::sample as ATen ops, any device (kernels/ops.h): truncation by topk / sort, the draw by an
// inverse CDF (cumsum in float64 + searchsorted). The CPU kernel runs it for its truncated rows.
#include "kernels/aten/compositions.h"

#include <torch/library.h>
#include <torch/torch.h>

#include <algorithm>

#include "core/host_arrays.h"

namespace verl::kernels {

void SamplerRows::clear() {
  temperature.clear();
  top_k.clear();
  top_p.clear();
  min_p.clear();
  uniform.clear();
}

void SamplerRows::push(double t, int64_t k, double p, double mp, double u) {
  temperature.push_back(t);
  top_k.push_back(k);
  top_p.push_back(p);
  min_p.push_back(mp);
  uniform.push_back(u);
}

}  // namespace verl::kernels

namespace verl::kernels::aten {

SampleResult sample_rows(const torch::Tensor& logits_in, const SamplerRows& rows) {
  torch::NoGradGuard no_grad;
  const auto device = logits_in.device();
  const int64_t n = logits_in.size(0), vocab = logits_in.size(1);
  torch::Tensor logits = logits_in.to(torch::kFloat);
  bool any_greedy = false, all_greedy = true, any_top_k = false, any_top_p = false, any_min_p = false;
  std::vector<double> temps(n);
  std::vector<int64_t> ks(n), greedy(n);
  for (int64_t i = 0; i < n; ++i) {
    const bool g = rows.temperature[i] == 0.0;
    any_greedy |= g;
    all_greedy &= g;
    greedy[i] = g;
    temps[i] = g ? 1.0 : rows.temperature[i];
    const int64_t k = rows.top_k[i];
    ks[i] = (k <= 0 || k >= vocab) ? vocab : k;
    if (g) continue;
    any_top_k |= k > 0 && k < vocab;
    any_top_p |= rows.top_p[i] < 1.0;
    any_min_p |= rows.min_p[i] > 0.0;
  }
  // The rows' parameters reach the device in one copy (HostArrays: on CUDA, no host synchronisation).
  detail::HostArrays arrays;
  const size_t temps_at = arrays.add(temps), ks_at = arrays.add(ks), top_p_at = arrays.add(rows.top_p),
               min_p_at = arrays.add(rows.min_p), uniform_at = arrays.add(rows.uniform),
               greedy_at = arrays.add(greedy);
  const std::vector<torch::Tensor> staged = arrays.to(device);
  auto per_row = [&](size_t at) { return staged[at].to(torch::kFloat).unsqueeze(1); };
  bool unit_temp = true;
  for (double t : temps) unit_temp &= t == 1.0;
  torch::Tensor scaled = unit_temp ? logits : logits / per_row(temps_at);
  torch::Tensor logp = torch::log_softmax(scaled, 1);  // (n, vocab)
  torch::Tensor tokens;
  if (all_greedy) {
    tokens = logits.argmax(1);
  } else {
    torch::Tensor probs = logp.exp();
    if (any_top_k) {
      // Keep tokens scoring at least the k-th largest (ties at the boundary are kept, as vLLM).
      const int64_t kmax = std::max<int64_t>(1, *std::max_element(ks.begin(), ks.end()));
      torch::Tensor top = std::get<0>(scaled.topk(kmax, 1));  // (n, kmax) descending
      torch::Tensor kth = top.gather(1, (staged[ks_at] - 1).unsqueeze(1));
      probs = probs.masked_fill(scaled < kth, 0.0);
    }
    if (any_top_p) {
      // Smallest set of most likely tokens whose renormalised mass reaches top_p (at least one).
      probs = probs / probs.sum(1, true);
      auto [sorted, order] = probs.sort(1, /*descending=*/true);
      torch::Tensor mass_before = sorted.cumsum(1) - sorted;
      torch::Tensor keep_sorted = mass_before < per_row(top_p_at);
      torch::Tensor keep = torch::zeros_like(keep_sorted).scatter(1, order, keep_sorted);
      probs = probs.masked_fill(keep.logical_not(), 0.0);
    }
    if (any_min_p) {
      torch::Tensor top = std::get<0>(probs.max(1, true));
      probs = probs.masked_fill(probs < top * per_row(min_p_at), 0.0);
    }
    // Inverse CDF in float64: the first token whose cumulative mass exceeds u * total.
    torch::Tensor cdf = probs.to(torch::kDouble).cumsum(1);
    torch::Tensor target = staged[uniform_at].unsqueeze(1) * cdf.narrow(1, vocab - 1, 1);
    tokens = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).squeeze(1).clamp_max(vocab - 1);
    if (any_greedy) tokens = torch::where(staged[greedy_at].to(torch::kBool), logits.argmax(1), tokens);
  }
  return {tokens, logp.gather(1, tokens.unsqueeze(1)).squeeze(1)};
}

namespace {

std::tuple<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits, c10::ArrayRef<double> temperature,
                                                c10::ArrayRef<int64_t> top_k, c10::ArrayRef<double> top_p,
                                                c10::ArrayRef<double> min_p, c10::ArrayRef<double> uniform,
                                                bool /*allow_simd: the CPU kernel's switch*/) {
  SampleResult r = sample_rows(logits, sampler_rows(temperature, top_k, top_p, min_p, uniform));
  return {r.tokens, r.logprobs};
}

}  // namespace

bool truncates(const SamplerRows& rows, int64_t i, int64_t vocab) {
  return rows.temperature[i] != 0.0 &&
         ((rows.top_k[i] > 0 && rows.top_k[i] < vocab) || rows.top_p[i] < 1.0 || rows.min_p[i] > 0.0);
}

SamplerRows sampler_rows(c10::ArrayRef<double> temperature, c10::ArrayRef<int64_t> top_k,
                                  c10::ArrayRef<double> top_p, c10::ArrayRef<double> min_p,
                                  c10::ArrayRef<double> uniform) {
  SamplerRows rows;
  rows.temperature.assign(temperature.begin(), temperature.end());
  rows.top_k.assign(top_k.begin(), top_k.end());
  rows.top_p.assign(top_p.begin(), top_p.end());
  rows.min_p.assign(min_p.begin(), min_p.end());
  rows.uniform.assign(uniform.begin(), uniform.end());
  return rows;
}

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("sample", TORCH_FN(sample)); }

}  // namespace verl::kernels::aten
