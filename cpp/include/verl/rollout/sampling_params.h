// verl::rollout::SamplingParams: how one request is sampled, with vLLM's (and verl's rollout
// config's) names and meanings. Validated against the engine's vocabulary and max length.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "verl/core/export.h"

namespace verl::rollout {

struct VERL_API SamplingParams {
  int64_t n = 1;               // samples per prompt; they share the prompt's KV blocks
  double temperature = 1.0;    // 0 = greedy (argmax)
  double top_p = 1.0;          // nucleus: keep the smallest set of tokens with mass >= top_p; in (0, 1]
  int64_t top_k = -1;          // keep the k most likely tokens; -1 or 0 = off
  double min_p = 0.0;          // drop tokens with prob < min_p * max prob; in [0, 1]
  int64_t max_tokens = 16;     // new tokens per sample, >= 0
  int64_t min_tokens = 0;      // EOS / stop ids are ignored before this many tokens
  std::vector<int64_t> stop_token_ids;  // finish ('stop') when one is sampled (kept in the output)
  bool ignore_eos = false;     // do not stop on the model's EOS ids
  // Sample i of the request draws exactly as a request with n = 1 and seed + i would, whatever
  // else is batched with it. Unset: the engine draws a seed from its own generator.
  std::optional<int64_t> seed;
  bool logprobs = true;        // report the sampled tokens' log-probs (see engine.h for the distribution)

  // Throws verl::InvalidArgument (Python ValueError) naming the offending parameter.
  void validate() const;
  bool greedy() const { return temperature == 0.0; }
};

}  // namespace verl::rollout
