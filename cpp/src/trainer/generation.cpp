// verl's generate_sequences over the rollout engine (see verl/trainer/generation.h).
#include "verl/trainer/generation.h"

#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {

DataProto generate_sequences(rollout::Engine& engine, const DataProto& prompts, const rollout::SamplingParams& params,
                             int64_t pad_token_id, std::optional<int64_t> seed) {
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
  std::vector<rollout::RequestOutput> outputs = engine.generate(request_prompts, request_params);
  VERL_CHECK(outputs.size() == groups.size(), "generate_sequences: the engine returned ", outputs.size(),
             " outputs for ", groups.size(), " requests");

  torch::Tensor responses = torch::full({bs, response_length}, pad_token_id, torch::kLong);
  torch::Tensor response_mask = torch::zeros({bs, response_length}, torch::kLong);
  torch::Tensor log_probs = torch::zeros({bs, response_length}, torch::kFloat32);
  auto responses_a = responses.accessor<int64_t, 2>();
  auto mask_a = response_mask.accessor<int64_t, 2>();
  auto log_probs_a = log_probs.accessor<float, 2>();
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [first, count] = groups[g];
    const auto& outs = outputs[g].outputs;
    VERL_CHECK(static_cast<int64_t>(outs.size()) == count, "generate_sequences: request ", g, " returned ",
               outs.size(), " samples, expected ", count);
    for (int64_t k = 0; k < count; ++k) {
      const auto& c = outs[static_cast<size_t>(k)];
      const int64_t row = first + k;
      const int64_t n_tok = static_cast<int64_t>(c.token_ids.size());
      VERL_CHECK(n_tok <= response_length, "generate_sequences: sample of row ", row, " has ", n_tok,
                 " tokens, more than max_tokens ", response_length);
      for (int64_t t = 0; t < n_tok; ++t) {
        responses_a[row][t] = c.token_ids[static_cast<size_t>(t)];
        mask_a[row][t] = 1;
        if (static_cast<size_t>(t) < c.logprobs.size()) log_probs_a[row][t] = c.logprobs[static_cast<size_t>(t)];
      }
    }
  }

  const torch::Device device = input_ids.device();
  responses = responses.to(device, input_ids.scalar_type());
  response_mask = response_mask.to(device, attention_mask.scalar_type());
  log_probs = log_probs.to(device);
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
      {"rollout_log_probs", log_probs},
  };
  return DataProto(std::move(out), prompts.non_tensor_batch(), prompts.meta_info());
}

}  // namespace verl::trainer
