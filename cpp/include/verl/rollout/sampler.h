// verl::rollout sampling: per-row temperature / top-k / top-p / min-p truncation and an
// inverse-CDF draw from a counter-based random stream, so a row's token depends only on its
// logits and its (seed, step) -- never on the other rows of the batch.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/kernels/sample_rows.h"

namespace verl::rollout {

// A uniform double in [0, 1) from the counter (seed, step): sample `step` of the stream `seed`.
// A pure function, so a preempted-and-recomputed sequence draws exactly the same numbers.
VERL_API double stream_uniform(uint64_t seed, uint64_t step);

// Per-row sampling settings and the sampled tokens: the sampling kernel's types (verl/kernels/sample_rows.h).
using SamplerRows = kernels::SamplerRows;
using SampleResult = kernels::SampleResult;

// logits (rows, vocab), any float dtype and device; computed in float32. Truncation order:
// top_k, then top_p on the renormalised remainder, then min_p (relative to the top token).
// The reported log-prob is of the temperature-scaled, *untruncated* distribution -- what the
// trainer recomputes as log_softmax(logits / temperature) -- and for greedy rows of the
// unscaled distribution. On CPU, untruncated rows run an AVX2 pass where the CPU has one;
// allow_simd = false forces the portable loop (the reference the SIMD pass is tested against).
VERL_API SampleResult sample(const torch::Tensor& logits, const SamplerRows& rows, bool allow_simd = true);

}  // namespace verl::rollout
