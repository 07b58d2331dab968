// Batched sampling with per-row parameters; see sampler.h for the contract. The computation is the
// verl::sample op (kernels/ops.h): a kernel per device.
#include "verl/rollout/sampler.h"

#include "verl/core/error.h"
#include "kernels/ops.h"

namespace verl::rollout {

namespace {
// SplitMix64 finaliser: a strong 64-bit mixer (Steele et al.), enough for sampling draws.
uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
}  // namespace

double stream_uniform(uint64_t seed, uint64_t step) {
  const uint64_t h = mix64(mix64(seed ^ 0x9e3779b97f4a7c15ULL) + step * 0xd1b54a32d192ed03ULL + 1);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);  // 53 bits -> [0, 1)
}

SampleResult sample(const torch::Tensor& logits_in, const SamplerRows& rows, bool allow_simd) {
  VERL_CHECK(logits_in.dim() == 2 && logits_in.size(0) == static_cast<int64_t>(rows.size()),
             "sample: logits must be (rows, vocab) with one SamplerRows entry per row, got ", logits_in.sizes(),
             " for ", rows.size(), " rows");
  VERL_CHECK(rows.top_k.size() == rows.size() && rows.top_p.size() == rows.size() &&
                 rows.min_p.size() == rows.size() && rows.uniform.size() == rows.size(),
             "sample: the fields of SamplerRows must all have one entry per row");
  auto [tokens, logprobs] = kernels::sample(logits_in, rows.temperature, rows.top_k, rows.top_p, rows.min_p,
                                            rows.uniform, allow_simd);
  return {tokens, logprobs};
}

}  // namespace verl::rollout
