// verl's generate_sequences over verl::rollout::Engine: a left-padded prompt DataProto in, verl's rollout
// batch out. The C++ twin of python/verl/rollout/llm.py LLM.generate_sequences, used by the trainer so a
// step never leaves C++.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/rollout/engine.h"
#include "verl/rollout/sampling_params.h"

namespace verl::trainer {

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
