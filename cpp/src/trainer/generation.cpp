// verl's generate_sequences over the rollout engine (see verl/trainer/generation.h).
#include "verl/trainer/generation.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {

namespace {

// The samples of requests `outputs` (request g's n samples are rows groups[g].first ...), as per-row lists.
ResponseRows sampled_responses(const std::vector<const rollout::RequestOutput*>& outputs,
                               const std::vector<std::pair<int64_t, int64_t>>& groups, int64_t response_length,
                               int64_t pad_token_id) {
  std::vector<std::vector<int64_t>> ids;
  std::vector<std::vector<double>> log_probs;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [first, count] = groups[g];
    const auto& outs = outputs[g]->outputs;
    VERL_CHECK(static_cast<int64_t>(outs.size()) == count, "generate_sequences: request ", g, " returned ",
               outs.size(), " samples, expected ", count);
    for (int64_t k = 0; k < count; ++k) {
      const auto& c = outs[static_cast<size_t>(k)];
      VERL_CHECK(static_cast<int64_t>(c.token_ids.size()) <= response_length, "generate_sequences: sample of row ",
                 first + k, " has ", c.token_ids.size(), " tokens, more than max_tokens ", response_length);
      ids.emplace_back(c.token_ids.begin(), c.token_ids.end());
      log_probs.emplace_back(c.logprobs.begin(), c.logprobs.end());
      log_probs.back().resize(ids.back().size(), 0.0);
    }
  }
  return pad_responses(ids, {}, log_probs, response_length, pad_token_id);
}

// The layout of `prompts` (the rows the responses belong to) and their responses, with the prompts' columns.
DataProto sequences_layout(const DataProto& prompts, const ResponseRows& r) {
  const torch::Tensor position_ids = prompts.has_tensor("position_ids") ? prompts.tensor("position_ids") : torch::Tensor();
  return DataProto(generation_layout(prompts.tensor("input_ids"), prompts.tensor("attention_mask"), position_ids, r),
                   prompts.non_tensor_batch(), prompts.meta_info());
}

}  // namespace

ResponseRows pad_responses(const std::vector<std::vector<int64_t>>& ids, const std::vector<std::vector<int64_t>>& masks,
                           const std::vector<std::vector<double>>& log_probs, int64_t response_length,
                           int64_t pad_token_id) {
  const auto rows = static_cast<int64_t>(ids.size());
  VERL_CHECK(response_length > 0, "generation layout: response_length must be positive, got ", response_length);
  VERL_CHECK(masks.empty() || masks.size() == ids.size(), "generation layout: ", masks.size(), " response masks for ",
             rows, " rows");
  VERL_CHECK(log_probs.empty() || log_probs.size() == ids.size(), "generation layout: ", log_probs.size(),
             " log-prob rows for ", rows, " rows");
  ResponseRows r{torch::full({rows, response_length}, pad_token_id, torch::kLong),
                 torch::zeros({rows, response_length}, torch::kLong), torch::zeros({rows, response_length}, torch::kLong),
                 torch::zeros({rows, response_length}, torch::kFloat32)};
  auto ids_a = r.ids.accessor<int64_t, 2>();
  auto mask_a = r.mask.accessor<int64_t, 2>();
  auto attention_a = r.attention.accessor<int64_t, 2>();
  auto log_probs_a = r.log_probs.accessor<float, 2>();
  for (int64_t i = 0; i < rows; ++i) {
    const auto& row = ids[static_cast<size_t>(i)];
    const int64_t n = std::min<int64_t>(static_cast<int64_t>(row.size()), response_length);
    const auto* mask = masks.empty() ? nullptr : &masks[static_cast<size_t>(i)];
    const auto* lp = log_probs.empty() || log_probs[static_cast<size_t>(i)].empty() ? nullptr
                                                                                : &log_probs[static_cast<size_t>(i)];
    VERL_CHECK(!mask || mask->size() == row.size(), "generation layout: row ", i, " has ", row.size(),
               " response tokens but a mask of ", mask->size());
    VERL_CHECK(!lp || lp->size() == row.size(), "generation layout: row ", i, " has ", row.size(),
               " response tokens but ", lp->size(), " log-probs");
    for (int64_t t = 0; t < n; ++t) {
      const auto k = static_cast<size_t>(t);
      ids_a[i][t] = row[k];
      mask_a[i][t] = mask ? (*mask)[k] : 1;
      attention_a[i][t] = 1;
      if (lp) log_probs_a[i][t] = static_cast<float>((*lp)[k]);
    }
  }
  return r;
}

DataProto::TensorMap generation_layout(const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
                                       const torch::Tensor& position_ids, const ResponseRows& r) {
  const int64_t prompt_len = input_ids.size(1);
  const int64_t response_length = r.ids.size(1);
  const torch::Device device = input_ids.device();
  const torch::Tensor responses = r.ids.to(device, input_ids.scalar_type());
  const torch::Tensor response_mask = r.mask.to(device, attention_mask.scalar_type());
  const torch::Tensor response_attention = r.attention.to(device, attention_mask.scalar_type());
  const torch::Tensor positions =
      position_ids.defined() ? position_ids : (attention_mask.to(torch::kLong).cumsum(-1) - 1).clamp_min(0);
  const torch::Tensor delta =
      torch::arange(1, response_length + 1, torch::TensorOptions().device(device).dtype(positions.scalar_type()));
  const torch::Tensor response_positions = positions.slice(1, prompt_len - 1) + delta.unsqueeze(0);
  return {
      {"prompts", input_ids},
      {"responses", responses},
      {"input_ids", torch::cat({input_ids, responses}, -1)},
      {"attention_mask", torch::cat({attention_mask, response_attention}, -1)},
      {"position_ids", torch::cat({positions, response_positions}, -1)},
      {"response_mask", response_mask},
      {"rollout_log_probs", r.log_probs.to(device)},
  };
}

std::pair<torch::Tensor, torch::Tensor> left_pad_prompts(const std::vector<std::vector<int64_t>>& prompts,
                                                         int64_t prompt_length, int64_t pad_token_id) {
  const auto rows = static_cast<int64_t>(prompts.size());
  torch::Tensor ids = torch::full({rows, prompt_length}, pad_token_id, torch::kLong);
  torch::Tensor mask = torch::zeros({rows, prompt_length}, torch::kLong);
  auto ids_a = ids.accessor<int64_t, 2>();
  auto mask_a = mask.accessor<int64_t, 2>();
  for (int64_t i = 0; i < rows; ++i) {
    const auto& row = prompts[static_cast<size_t>(i)];
    const auto n = static_cast<int64_t>(row.size());
    VERL_CHECK_AS(DataError, n <= prompt_length, "sample ", i, ": prompt of ", n,
                  " tokens exceeds rollout.prompt_length=", prompt_length);
    for (int64_t t = 0; t < n; ++t) {
      ids_a[i][prompt_length - n + t] = row[static_cast<size_t>(t)];
      mask_a[i][prompt_length - n + t] = 1;
    }
  }
  return {ids, mask};
}

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
                                      sampled_responses({&output}, {groups[g]}, response_length, pad_token_id)));
    };
  }
  std::vector<rollout::RequestOutput> outputs = engine.generate(request_prompts, request_params, on_finished);
  VERL_CHECK(outputs.size() == groups.size(), "generate_sequences: the engine returned ", outputs.size(),
             " outputs for ", groups.size(), " requests");
  std::vector<const rollout::RequestOutput*> output_ptrs;
  for (const auto& o : outputs) output_ptrs.push_back(&o);
  return sequences_layout(prompts, sampled_responses(output_ptrs, groups, response_length, pad_token_id));
}

}  // namespace verl::trainer
