// verl's generation layout and generate_sequences over verl::rollout::Engine: a left-padded prompt DataProto in,
// verl's rollout batch out. The one implementation of the layout: the trainer's step, python/verl/rollout/llm.py
// (LLM.generate_sequences) and the agent loops (pad_agent_outputs) all build their batches here.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/rollout/engine.h"
#include "verl/rollout/sampling_params.h"

namespace verl::trainer {

// The responses of a batch, right-padded to response_length: each (bs, response_length).
struct VERL_API ResponseRows {
  torch::Tensor ids;        // long, pad_token_id after each response
  torch::Tensor mask;       // long: 1 on the tokens the policy generated (0 on tool / environment tokens)
  torch::Tensor attention;  // long: 1 on every response token
  torch::Tensor log_probs;  // float32: the rollout's log-prob of each generated token (0 elsewhere)
};

// Per-row token lists right-padded with pad_token_id to response_length (longer rows are cut there). `masks` and
// `log_probs` may be empty (all 1 / all 0) or hold one list per row, each as long as its row's ids (an empty
// log-prob list: that row's are 0).
VERL_API ResponseRows pad_responses(const std::vector<std::vector<int64_t>>& ids,
                                    const std::vector<std::vector<int64_t>>& masks,
                                    const std::vector<std::vector<double>>& log_probs, int64_t response_length,
                                    int64_t pad_token_id);

// verl's rollout layout of left-padded prompts -- input_ids, attention_mask (bs, prompt_length), position_ids
// (undefined: cumsum(attention_mask) - 1 clamped at 0) -- and their responses:
//   prompts (bs, prompt_length), responses (bs, response_length), input_ids, attention_mask,
//   position_ids (bs, prompt_length + response_length), response_mask, rollout_log_probs
// on the prompts' device, the masks in attention_mask's dtype. The responses continue their prompt's positions
// (last prompt position + 1, + 2, ... -- through the padding after a response too, as verl's vLLM rollout; a padded
// position is attended by nothing and predicts nothing).
VERL_API DataProto::TensorMap generation_layout(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                               const torch::Tensor& position_ids, const ResponseRows& responses);

// Prompts given as token lists, left-padded with pad_token_id to prompt_length: (input_ids, attention_mask), long.
// DataError naming the row when one is longer than prompt_length.
VERL_API std::pair<torch::Tensor, torch::Tensor> left_pad_prompts(const std::vector<std::vector<int64_t>>& prompts,
                                                                  int64_t prompt_length, int64_t pad_token_id);

// prompts: input_ids, attention_mask (bs, prompt_length) left-padded, position_ids optional (default
// cumsum(mask) - 1 clamped at 0). One response per row, right-padded with pad_token_id to
// params.max_tokens = response_length. Returns
//   prompts (bs, prompt_length), responses (bs, response_length), input_ids, attention_mask,
//   position_ids (bs, prompt_length + response_length), response_mask (bs, response_length) (the
//   attention_mask's dtype), rollout_log_probs (bs, response_length) float32
// with the non-tensor columns and meta_info of `prompts`. Runs of identical consecutive prompt rows
// (DataProto::repeat(n, interleave=true)) become one request with n samples (prompt prefilled once).
// With a seed, row i samples as a request seeded seed + i (independent of batching); params.n is ignored.
// DataError when input_ids / attention_mask are missing or a row has no prompt token.
// `on_rows(first, rows)`, when given, receives each request's rows as it finishes -- rows first .. first + n - 1 laid
// out as in the result (a slice of it), while the other requests still decode; see Engine::generate for its errors.
using RowsFinishedFn = std::function<void(int64_t first, const DataProto& rows)>;
VERL_API DataProto generate_sequences(rollout::Engine& engine, const DataProto& prompts,
                                      const rollout::SamplingParams& params, int64_t pad_token_id,
                                      std::optional<int64_t> seed, const RowsFinishedFn& on_rows = {});

}  // namespace verl::trainer
