// verl's generate_sequences over the rollout engine (see verl/trainer/generation.h).
#include "verl/trainer/generation.h"

#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {

namespace {

// The responses of rows [first, first + count): token ids (right-padded with pad), mask and log-probs.
struct Responses {
  torch::Tensor ids, mask, log_probs;
};

Responses sampled_responses(const std::vector<const rollout::RequestOutput*>& outputs,
                            const std::vector<std::pair<int64_t, int64_t>>& groups, int64_t rows,
                            int64_t response_length, int64_t pad_token_id) {
  Responses r{torch::full({rows, response_length}, pad_token_id, torch::kLong),
              torch::zeros({rows, response_length}, torch::kLong),
              torch::zeros({rows, response_length}, torch::kFloat32)};
  auto ids_a = r.ids.accessor<int64_t, 2>();
  auto mask_a = r.mask.accessor<int64_t, 2>();
  auto log_probs_a = r.log_probs.accessor<float, 2>();
  const int64_t base = groups.empty() ? 0 : groups.front().first;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [first, count] = groups[g];
    const auto& outs = outputs[g]->outputs;
    VERL_CHECK(static_cast<int64_t>(outs.size()) == count, "generate_sequences: request ", g, " returned ",
               outs.size(), " samples, expected ", count);
    for (int64_t k = 0; k < count; ++k) {
      const auto& c = outs[static_cast<size_t>(k)];
      const int64_t row = first + k - base;
      const int64_t n_tok = static_cast<int64_t>(c.token_ids.size());
      VERL_CHECK(n_tok <= response_length, "generate_sequences: sample of row ", first + k, " has ", n_tok,
                 " tokens, more than max_tokens ", response_length);
      for (int64_t t = 0; t < n_tok; ++t) {
        ids_a[row][t] = c.token_ids[static_cast<size_t>(t)];
        mask_a[row][t] = 1;
        if (static_cast<size_t>(t) < c.logprobs.size()) log_probs_a[row][t] = c.logprobs[static_cast<size_t>(t)];
      }
    }
  }
  return r;
}

// verl's rollout layout of `prompts` (the rows the responses belong to) and their responses.
DataProto sequences_layout(const DataProto& prompts, Responses r) {
  const torch::Tensor& input_ids = prompts.tensor("input_ids");
  const torch::Tensor& attention_mask = prompts.tensor("attention_mask");
  const int64_t prompt_len = input_ids.size(1);
  const int64_t response_length = r.ids.size(1);
  const torch::Device device = input_ids.device();
  torch::Tensor responses = r.ids.to(device, input_ids.scalar_type());
  torch::Tensor response_mask = r.mask.to(device, attention_mask.scalar_type());
  torch::Tensor position_ids = prompts.has_tensor("position_ids")
                                   ? prompts.tensor("position_ids")
                                   : (attention_mask.to(torch::kLong).cumsum(-1) - 1).clamp_min(0);
  torch::Tensor delta = torch::arange(1, response_length + 1, torch::TensorOptions().device(device).dtype(position_ids.scalar_type()));
  torch::Tensor response_positions = position_ids.slice(1, prompt_len - 1) + delta.unsqueeze(0);

  DataProto::TensorMap out{
      {"prompts", input_ids},
      {"responses", responses},
      {"input_ids", torch::cat({input_ids, responses}, -1)},
      {"attention_mask", torch::cat({attention_mask, response_mask}, -1)},
      {"position_ids", torch::cat({position_ids, response_positions}, -1)},
      {"response_mask", response_mask},
      {"rollout_log_probs", r.log_probs.to(device)},
  };
  return DataProto(std::move(out), prompts.non_tensor_batch(), prompts.meta_info());
}

}  // namespace

DataProto generate_sequences(rollout::Engine& engine, const DataProto& prompts, const rollout::SamplingParams& params,
                             int64_t pad_token_id, std::optional<int64_t> seed, const RowsFinishedFn& on_rows) {
  VERL_CHECK_AS(DataError, prompts.has_tensor("input_ids") && prompts.has_tensor("attention_mask"),
                "generate_sequences: the prompt batch needs 'input_ids' and 'attention_mask'");
  const torch::Tensor& input_ids = prompts.tensor("input_ids");
  const torch::Tensor& attention_mask = prompts.tensor("attention_mask");
  VERL_CHECK_AS(DataError, input_ids.dim() == 2 && attention_mask.sizes() == input_ids.sizes(),
                "generate_sequences: input_ids and attention_mask must both be (bs, prompt_length), got ",
                input_ids.sizes(), " and ", attention_mask.sizes());
  const int64_t bs = input_ids.size(0);
  const int64_t response_length = params.max_tokens;
  VERL_CHECK(response_length > 0, "generate_sequences: max_tokens (response_length) must be positive");

  // The valid tokens of each row, read once from the host.
  torch::Tensor ids_cpu = input_ids.to(torch::kCPU, torch::kLong).contiguous();
  torch::Tensor mask_cpu = attention_mask.to(torch::kCPU).to(torch::kBool).contiguous();
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(bs));
  const int64_t prompt_len = input_ids.size(1);
  const int64_t* ids_ptr = ids_cpu.data_ptr<int64_t>();
  const bool* mask_ptr = mask_cpu.data_ptr<bool>();
  for (int64_t i = 0; i < bs; ++i) {
    auto& row = rows[static_cast<size_t>(i)];
    for (int64_t j = 0; j < prompt_len; ++j) {
      if (mask_ptr[i * prompt_len + j]) row.push_back(ids_ptr[i * prompt_len + j]);
    }
    VERL_CHECK_AS(DataError, !row.empty(), "generate_sequences: prompt row ", i, " has no token (attention_mask all 0)");
  }

  // Runs of identical prompts share one request (their prompt KV is computed once).
  std::vector<std::pair<int64_t, int64_t>> groups;  // (first row, count)
  for (int64_t i = 0; i < bs;) {
    int64_t j = i + 1;
    while (j < bs && rows[static_cast<size_t>(j)] == rows[static_cast<size_t>(i)]) ++j;
    groups.emplace_back(i, j - i);
    i = j;
  }
  std::vector<std::vector<int64_t>> request_prompts;
  std::vector<rollout::SamplingParams> request_params;
  request_prompts.reserve(groups.size());
  request_params.reserve(groups.size());
  for (const auto& [first, count] : groups) {
    request_prompts.push_back(rows[static_cast<size_t>(first)]);
    rollout::SamplingParams p = params;
    p.n = count;
    p.logprobs = true;
    if (seed) p.seed = *seed + first;
    request_params.push_back(std::move(p));
  }
  std::function<void(size_t, const rollout::RequestOutput&)> on_finished;
  if (on_rows) {
    on_finished = [&](size_t g, const rollout::RequestOutput& output) {
      const auto [first, count] = groups[g];
      on_rows(first, sequences_layout(prompts.slice(first, first + count),
                                      sampled_responses({&output}, {groups[g]}, count, response_length, pad_token_id)));
    };
  }
  std::vector<rollout::RequestOutput> outputs = engine.generate(request_prompts, request_params, on_finished);
  VERL_CHECK(outputs.size() == groups.size(), "generate_sequences: the engine returned ", outputs.size(),
             " outputs for ", groups.size(), " requests");
  std::vector<const rollout::RequestOutput*> output_ptrs;
  for (const auto& o : outputs) output_ptrs.push_back(&o);
  return sequences_layout(prompts, sampled_responses(output_ptrs, groups, bs, response_length, pad_token_id));
}

}  // namespace verl::trainer
