// Batched sampling with per-row parameters; see sampler.h for the contract.
#include "verl/rollout/sampler.h"

#include <ATen/Parallel.h>

#include <cmath>
#include <limits>

#include "verl/core/error.h"
#include "rollout/simd_avx2.h"
#include "rollout/thread_scratch.h"

namespace verl::rollout {

namespace {
// SplitMix64 finaliser: a strong 64-bit mixer (Steele et al.), enough for sampling draws.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

torch::Tensor row_tensor(const std::vector<double>& v, const torch::Device& device) {
  return torch::tensor(v, torch::kDouble).to(torch::kFloat).to(device).unsqueeze(1);
}
}  // namespace

double stream_uniform(uint64_t seed, uint64_t step) {
  const uint64_t h = mix64(mix64(seed ^ 0x9e3779b97f4a7c15ULL) + step * 0xd1b54a32d192ed03ULL + 1);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // 53 bits -> [0, 1)
}

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

namespace {

// Any rows, any device: tensor ops (truncation by sort / topk, inverse CDF by cumsum).
SampleResult sample_tensor(const torch::Tensor& logits_in, const SamplerRows& rows) {
  torch::NoGradGuard no_grad;
  const auto device = logits_in.device();
  const int64_t n = logits_in.size(0), vocab = logits_in.size(1);
  torch::Tensor logits = logits_in.to(torch::kFloat);
  bool any_greedy = false, all_greedy = true, any_top_k = false, any_top_p = false, any_min_p = false;
  std::vector<double> temps(n);
  for (int64_t i = 0; i < n; ++i) {
    const bool g = rows.temperature[i] == 0.0;
    any_greedy |= g;
    all_greedy &= g;
    temps[i] = g ? 1.0 : rows.temperature[i];
    if (g) continue;
    any_top_k |= rows.top_k[i] > 0 && rows.top_k[i] < vocab;
    any_top_p |= rows.top_p[i] < 1.0;
    any_min_p |= rows.min_p[i] > 0.0;
  }
  bool unit_temp = true;
  for (double t : temps) unit_temp &= t == 1.0;
  torch::Tensor scaled = unit_temp ? logits : logits / row_tensor(temps, device);
  torch::Tensor logp = torch::log_softmax(scaled, 1);  // (n, vocab)
  torch::Tensor tokens;
  if (all_greedy) {
    tokens = logits.argmax(1);
  } else {
    torch::Tensor probs = logp.exp();
    if (any_top_k) {
      // Keep tokens scoring at least the k-th largest (ties at the boundary are kept, as vLLM).
      std::vector<int64_t> ks(n);
      int64_t kmax = 1;
      for (int64_t i = 0; i < n; ++i) {
        const int64_t k = rows.top_k[i];
        ks[i] = (k <= 0 || k >= vocab) ? vocab : k;
        kmax = std::max(kmax, ks[i]);
      }
      torch::Tensor top = std::get<0>(scaled.topk(kmax, 1));  // (n, kmax) descending
      torch::Tensor kth = top.gather(1, (torch::tensor(ks, torch::kLong).to(device) - 1).unsqueeze(1));
      probs = probs.masked_fill(scaled < kth, 0.0);
    }
    if (any_top_p) {
      // Smallest set of most likely tokens whose renormalised mass reaches top_p (at least one).
      probs = probs / probs.sum(1, true);
      auto [sorted, order] = probs.sort(1, /*descending=*/true);
      torch::Tensor mass_before = sorted.cumsum(1) - sorted;
      torch::Tensor keep_sorted = mass_before < row_tensor(rows.top_p, device);
      torch::Tensor keep = torch::zeros_like(keep_sorted).scatter(1, order, keep_sorted);
      probs = probs.masked_fill(keep.logical_not(), 0.0);
    }
    if (any_min_p) {
      torch::Tensor top = std::get<0>(probs.max(1, true));
      probs = probs.masked_fill(probs < top * row_tensor(rows.min_p, device), 0.0);
    }
    // Inverse CDF in float64: the first token whose cumulative mass exceeds u * total.
    torch::Tensor cdf = probs.to(torch::kDouble).cumsum(1);
    torch::Tensor target = torch::tensor(rows.uniform, torch::kDouble).to(device).unsqueeze(1) * cdf.narrow(1, vocab - 1, 1);
    tokens = torch::searchsorted(cdf, target, /*out_int32=*/false, /*right=*/true).squeeze(1).clamp_max(vocab - 1);
    if (any_greedy) {
      std::vector<uint8_t> g(n);
      for (int64_t i = 0; i < n; ++i) g[i] = rows.temperature[i] == 0.0;
      torch::Tensor greedy = torch::tensor(std::vector<int64_t>(g.begin(), g.end()), torch::kLong).to(device).to(torch::kBool);
      tokens = torch::where(greedy, logits.argmax(1), tokens);
    }
  }
  return {tokens, logp.gather(1, tokens.unsqueeze(1)).squeeze(1)};
}

// Tokens per float64 partial sum of the SIMD row pass (the inverse-CDF scan skips whole chunks).
constexpr int64_t kScanChunk = 256;

struct PlainRow {
  const float* logits;
  float temperature;
  bool greedy;
  double uniform;
};

// One untruncated row: x = logits / T (float32; T = 1 rows are the logits themselves, division by
// 1 being exact), w = exp(x - max x), sum of w in float64, and the first token whose cumulative
// mass exceeds u * sum (greedy rows: the first maximum). Writes the token and log-prob
// (x[token] - max) - log(sum). `xbuf` and `w` hold vocab floats. finish_row is the shared end:
// the scan from `start`, whose preceding mass is `mass_before_start`.
void finish_row(const PlainRow& row, const float* x, const float* w, int64_t vocab, int64_t arg, double sum,
                int64_t start, double mass_before_start, int64_t* token, float* logprob) {
  int64_t tok = arg;
  if (!row.greedy) {
    const double target = row.uniform * sum;
    double acc = mass_before_start;
    tok = -1;
    for (int64_t j = start; j < vocab; ++j) {
      acc += w[j];
      if (acc > target) {
        tok = j;
        break;
      }
    }
    if (tok < 0)  // rounding: u * sum at the very top; take the last token with mass
      for (tok = vocab - 1; tok > 0 && w[tok] == 0.0f; --tok) {
      }
  }
  *token = tok;
  *logprob = static_cast<float>(static_cast<double>(x[tok] - x[arg]) - std::log(sum));
}

void plain_row_portable(const PlainRow& row, int64_t vocab, float* xbuf, float* w, int64_t* token, float* logprob) {
  const float* x = row.logits;
  if (row.temperature != 1.0f) {
    for (int64_t j = 0; j < vocab; ++j) xbuf[j] = row.logits[j] / row.temperature;
    x = xbuf;
  }
  int64_t arg = 0;  // first maximum, as argmax
  for (int64_t j = 1; j < vocab; ++j)
    if (x[j] > x[arg]) arg = j;
  const float mx = x[arg];
  double sum = 0.0;
  for (int64_t j = 0; j < vocab; ++j) {
    w[j] = std::exp(x[j] - mx);
    sum += w[j];
  }
  finish_row(row, x, w, vocab, arg, sum, 0, 0.0, token, logprob);
}

#ifdef VERL_HAVE_AVX2_KERNELS
// The same row 8 lanes at a time (simd_avx2.h). The float64 sum is kept per chunk of 256 tokens,
// so the inverse-CDF scan skips whole chunks before it walks token by token.
// `chunk_sums` holds ceil(vocab / kScanChunk) doubles.
__attribute__((target("avx2,fma"))) void plain_row_avx2(const PlainRow& row, int64_t vocab, float* xbuf, float* w,
                                                        double* chunk_sums, int64_t* token, float* logprob) {
  constexpr int64_t kChunk = kScanChunk;
  const float* x = row.logits;
  if (row.temperature != 1.0f) {
    const __m256 tv = _mm256_set1_ps(row.temperature);
    int64_t j = 0;
    for (; j + 8 <= vocab; j += 8) _mm256_storeu_ps(xbuf + j, _mm256_div_ps(_mm256_loadu_ps(row.logits + j), tv));
    for (; j < vocab; ++j) xbuf[j] = row.logits[j] / row.temperature;
    x = xbuf;
  }
  const float mx = simd::max_ps(x, vocab);
  int64_t arg = 0;  // first maximum, as argmax
  while (arg < vocab - 1 && !(x[arg] == mx)) ++arg;
  const __m256 mxv = _mm256_set1_ps(mx);
  double sum = 0.0;
  int64_t num_chunks = 0;
  for (int64_t c0 = 0; c0 < vocab; c0 += kChunk) {
    const int64_t c1 = c0 + kChunk < vocab ? c0 + kChunk : vocab;
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    int64_t k = c0;
    for (; k + 8 <= c1; k += 8) {
      const __m256 e = simd::exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + k), mxv));
      _mm256_storeu_ps(w + k, e);
      s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
      s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
    }
    alignas(32) double lanes[4];
    _mm256_store_pd(lanes, _mm256_add_pd(s0, s1));
    double chunk = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    if (k < c1) {
      simd::exp_shifted_tail_ps(x + k, c1 - k, mx, w + k);
      for (int64_t l = k; l < c1; ++l) chunk += w[l];
    }
    chunk_sums[num_chunks++] = chunk;
    sum += chunk;
  }
  int64_t start = 0;
  double before = 0.0;
  if (!row.greedy) {
    // The chunk holding the draw: the last one whose preceding mass is still <= u * sum.
    const double goal = row.uniform * sum;
    for (int64_t c = 0; c < num_chunks; ++c) {
      if (before + chunk_sums[c] > goal) break;
      before += chunk_sums[c];
      start = (c + 1) * kChunk;
    }
    if (start >= vocab) {  // rounding at the very top: scan the last chunk again
      start = (num_chunks - 1) * kChunk;
      before -= chunk_sums[num_chunks - 1];
    }
  }
  finish_row(row, x, w, vocab, arg, sum, start, before, token, logprob);
}
#endif

// Untruncated rows on CPU: one fused pass per row straight from the logits, in row buffers that
// stay in cache -- instead of log_softmax + exp + cumsum + searchsorted over (rows, vocab)
// temporaries. `logits` is float32 and contiguous.
void sample_plain_cpu(const torch::Tensor& logits, const std::vector<int64_t>& which, const SamplerRows& rows,
                      int64_t* tokens, float* logprobs, bool allow_simd) {
  const int64_t vocab = logits.size(1);
  if (which.empty()) return;
  const float* base = logits.data_ptr<float>();
  (void)allow_simd;  // unused where no SIMD pass is compiled
#ifdef VERL_HAVE_AVX2_KERNELS
  const bool avx2 = allow_simd && simd::cpu_has_avx2_fma();
#endif
  at::parallel_for(0, static_cast<int64_t>(which.size()), 8, [&](int64_t begin, int64_t end) {
    float* xbuf = detail::thread_scratch<float, 0>(static_cast<size_t>(vocab));
    float* wbuf = detail::thread_scratch<float, 1>(static_cast<size_t>(vocab));
    double* chunk_sums = detail::thread_scratch<double, 0>(static_cast<size_t>((vocab + kScanChunk - 1) / kScanChunk));
    for (int64_t k = begin; k < end; ++k) {
      const int64_t r = which[k];
      const bool greedy = rows.temperature[r] == 0.0;
      const PlainRow row{base + r * vocab, greedy ? 1.0f : static_cast<float>(rows.temperature[r]), greedy,
                         rows.uniform[r]};
#ifdef VERL_HAVE_AVX2_KERNELS
      if (avx2) {
        plain_row_avx2(row, vocab, xbuf, wbuf, chunk_sums, tokens + r, logprobs + r);
        continue;
      }
#endif
      plain_row_portable(row, vocab, xbuf, wbuf, tokens + r, logprobs + r);
    }
  });
}

}  // namespace

SampleResult sample(const torch::Tensor& logits_in, const SamplerRows& rows, bool allow_simd) {
  VERL_CHECK(logits_in.dim() == 2 && logits_in.size(0) == static_cast<int64_t>(rows.size()),
             "sample: logits must be (rows, vocab) with one SamplerRows entry per row, got ", logits_in.sizes(),
             " for ", rows.size(), " rows");
  torch::NoGradGuard no_grad;
  if (!logits_in.device().is_cpu()) return sample_tensor(logits_in, rows);
  // The path is chosen per row (never per batch), so a row's draw does not depend on its neighbours.
  const int64_t n = logits_in.size(0), vocab = logits_in.size(1);
  std::vector<int64_t> plain, truncated;
  for (int64_t i = 0; i < n; ++i) {
    const bool trunc = rows.temperature[i] != 0.0 && ((rows.top_k[i] > 0 && rows.top_k[i] < vocab) ||
                                                      rows.top_p[i] < 1.0 || rows.min_p[i] > 0.0);
    (trunc ? truncated : plain).push_back(i);
  }
  torch::Tensor logits = logits_in.to(torch::kFloat).contiguous();
  torch::Tensor tokens = torch::empty({n}, torch::kLong);
  torch::Tensor logprobs = torch::empty({n}, torch::kFloat);
  sample_plain_cpu(logits, plain, rows, tokens.data_ptr<int64_t>(), logprobs.data_ptr<float>(), allow_simd);
  if (!truncated.empty()) {
    SamplerRows sub;
    for (int64_t i : truncated)
      sub.push(rows.temperature[i], rows.top_k[i], rows.top_p[i], rows.min_p[i], rows.uniform[i]);
    torch::Tensor idx = torch::tensor(truncated, torch::kLong);
    SampleResult r = sample_tensor(logits.index_select(0, idx), sub);
    tokens.index_copy_(0, idx, r.tokens);
    logprobs.index_copy_(0, idx, r.logprobs);
  }
  return {tokens, logprobs};
}

}  // namespace verl::rollout
