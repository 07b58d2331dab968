// Teacher-forced passes over (prompt + response) rows that return per-response-token quantities:
// log-probs and entropy for the actor / reference policy, values for the critic. Padding is removed
// (the valid tokens of every row are packed and run through CausalLM::hidden_states_packed) and the
// head is applied only at the positions that predict a response token, so neither the prompt's
// logits nor padding cost anything. Used by the actor and critic workers.
//
// Layout (verl's): input_ids = cat(prompts, responses) (bs, prompt_length + response_length), left-
// padded prompts, right-padded responses, attention_mask (bs, seq) marks real tokens. The quantity
// for response slot j of a row is read at the row's previous real token (verl's
// logits[:, -response_length-1:-1] / values[:, -response_length-1:-1]); slots whose
// attention_mask is 0 hold 0.
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"

namespace verl::workers {

struct VERL_API ResponseHidden {
  torch::Tensor hidden;          // (num_response_tokens, hidden): final-norm states that predict each real response token
  torch::Tensor labels;          // (num_response_tokens,) int64: those response tokens
  torch::Tensor response_valid;  // (bs, response_length) bool: attention_mask of the response part
};

// remove_padding=true packs the valid tokens (positions restart at 0 per row, verl's convention);
// when position_ids are given and differ from that convention the padded forward is used instead.
// Throws DataError for inconsistent shapes, response_length outside (0, seq), or a row with a
// response token but no real token before it.
VERL_API ResponseHidden response_hidden_states(model::CausalLM& model, const torch::Tensor& input_ids,
                                               const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                               int64_t response_length, bool remove_padding = true);

// (num_response_tokens, ...) values at the real response slots -> (bs, response_length, ...) with
// zeros elsewhere. Differentiable.
VERL_API torch::Tensor scatter_response(const torch::Tensor& values, const torch::Tensor& response_valid);

struct VERL_API ResponseLogProbs {
  torch::Tensor log_probs;  // (bs, response_length): log softmax(logits / temperature)[token]
  torch::Tensor entropy;    // (bs, response_length) entropy of softmax(logits / temperature); undefined unless asked
  // (bs, response_length) sum over the vocabulary of softmax(logits / temperature)^2 (verl's sum_pi_squared,
  // the Optimal Token Baseline's input); undefined unless asked
  torch::Tensor sum_pi_squared;
};

// verl's actor forward: logits / max(temperature, 1e-8) (skipped at temperature 1), log-probs of the
// response tokens, optionally the entropy and sum_pi_squared. At least float32 (float64 stays float64). Differentiable
// unless called under NoGradGuard. The model must have the LM head.
VERL_API ResponseLogProbs response_log_probs(model::CausalLM& model, const torch::Tensor& input_ids,
                                             const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                             int64_t response_length, double temperature, bool calculate_entropy,
                                             bool remove_padding = true, bool calculate_sum_pi_squared = false);

// The critic's forward: values (bs, response_length), at least float32. The model must have the value head.
VERL_API torch::Tensor response_values(model::CausalLM& model, const torch::Tensor& input_ids,
                                       const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                       int64_t response_length, bool remove_padding = true);

}  // namespace verl::workers
