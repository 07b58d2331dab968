// verl::sample on CPU (kernels/ops.h). Untruncated rows (no top-k / top-p / min-p) run one fused pass
// per row straight from the logits, AVX2 where the CPU has it; truncated rows take the ATen form
// (aten/sample.cpp).
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>

#include "kernels/aten/compositions.h"
#include "kernels/cpu/simd_avx2.h"
#include "kernels/cpu/thread_scratch.h"

namespace verl::kernels::cpu {

namespace {

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

std::tuple<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits_in, c10::ArrayRef<double> temperature,
                                                c10::ArrayRef<int64_t> top_k, c10::ArrayRef<double> top_p,
                                                c10::ArrayRef<double> min_p, c10::ArrayRef<double> uniform,
                                                bool allow_simd) {
  torch::NoGradGuard no_grad;
  const SamplerRows rows = aten::sampler_rows(temperature, top_k, top_p, min_p, uniform);
  // The path is chosen per row (never per batch), so a row's draw does not depend on its neighbours.
  const int64_t n = logits_in.size(0), vocab = logits_in.size(1);
  std::vector<int64_t> plain, truncated;
  for (int64_t i = 0; i < n; ++i) (aten::truncates(rows, i, vocab) ? truncated : plain).push_back(i);
  torch::Tensor logits = logits_in.to(torch::kFloat).contiguous();
  torch::Tensor tokens = torch::empty({n}, torch::kLong);
  torch::Tensor logprobs = torch::empty({n}, torch::kFloat);
  sample_plain_cpu(logits, plain, rows, tokens.data_ptr<int64_t>(), logprobs.data_ptr<float>(), allow_simd);
  if (!truncated.empty()) {
    SamplerRows sub;
    for (int64_t i : truncated)
      sub.push(rows.temperature[i], rows.top_k[i], rows.top_p[i], rows.min_p[i], rows.uniform[i]);
    torch::Tensor idx = torch::tensor(truncated, torch::kLong);
    SampleResult r = aten::sample_rows(logits.index_select(0, idx), sub);
    tokens.index_copy_(0, idx, r.tokens);
    logprobs.index_copy_(0, idx, r.logprobs);
  }
  return {tokens, logprobs};
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) { m.impl("sample", TORCH_FN(sample)); }

}  // namespace verl::kernels::cpu
