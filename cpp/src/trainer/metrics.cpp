// verl's PPO step metrics (see verl/trainer/metrics.h).
#include "verl/trainer/metrics.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double item(const torch::Tensor& t) { return t.to(torch::kFloat64).item<double>(); }

// mean / max / min of a 1-D selection into out[prefix + "/mean"|"/max"|"/min"]; NaN when empty (verl).
void add_stats(Metrics& out, const std::string& prefix, const torch::Tensor& values) {
  if (values.numel() == 0) {
    out[prefix + "/mean"] = out[prefix + "/max"] = out[prefix + "/min"] = kNaN;
    return;
  }
  torch::Tensor v = values.to(torch::kFloat64);
  out[prefix + "/mean"] = item(v.mean());
  out[prefix + "/max"] = item(v.max());
  out[prefix + "/min"] = item(v.min());
}

// A numeric per-row column (verl's numpy arrays in non_tensor_batch) as a float64 tensor of its rows that have a
// value (null: a row whose agent loop does not report it); DataError naming the column for a non-number.
torch::Tensor numeric_column(const DataProto& batch, const std::string& key) {
  const DataProto::Column& column = batch.column(key);
  std::vector<double> values;
  values.reserve(column.size());
  for (const Json& v : column) {
    if (v.is_null()) continue;
    VERL_CHECK_AS(DataError, v.is_number(), "non_tensor_batch['", key, "'] must hold numbers (or null)");
    values.push_back(v.get<double>());
  }
  return torch::tensor(values, torch::kFloat64);
}

struct LengthInfo {
  torch::Tensor prompt_length;    // (bs,) float
  torch::Tensor response_length;  // (bs,) float
};

// verl's _compute_response_info.
LengthInfo response_info(const DataProto& batch) {
  if (batch.has_tensor("prompt_length") && batch.has_tensor("response_length")) {
    return {batch.tensor("prompt_length").to(torch::kFloat64), batch.tensor("response_length").to(torch::kFloat64)};
  }
  const int64_t response_length = batch.tensor("responses").size(-1);
  const torch::Tensor& attention_mask = batch.tensor("attention_mask");
  VERL_CHECK_AS(DataError, attention_mask.dim() == 2 && attention_mask.size(1) >= response_length,
                "attention_mask must be (bs, prompt_length + response_length) with response_length ", response_length);
  torch::Tensor prompt_mask = attention_mask.slice(1, 0, attention_mask.size(1) - response_length);
  torch::Tensor response_mask = attention_mask.slice(1, attention_mask.size(1) - response_length);
  return {prompt_mask.to(torch::kFloat64).sum(-1), response_mask.to(torch::kFloat64).sum(-1)};
}

}  // namespace

Metrics compute_data_metrics(const DataProto& batch, bool use_critic) {
  torch::NoGradGuard no_grad;
  Metrics m;
  torch::Tensor sequence_score = batch.tensor("token_level_scores").to(torch::kFloat64).sum(-1);
  torch::Tensor sequence_reward = batch.tensor("token_level_rewards").to(torch::kFloat64).sum(-1);
  const torch::Tensor& advantages = batch.tensor("advantages");
  const torch::Tensor& returns = batch.tensor("returns");
  // The prompt part of attention_mask (its width less the response's), as verl counts it: the same as the width
  // of `prompts` when the batch has them, and no need for them when it has not.
  const double max_response_length = static_cast<double>(batch.tensor("responses").size(-1));
  const double max_prompt_length = static_cast<double>(batch.tensor("attention_mask").size(-1)) - max_response_length;
  torch::Tensor response_mask = batch.tensor("response_mask").to(torch::kBool);

  LengthInfo info = response_info(batch);
  torch::Tensor aborted = info.response_length.eq(0);
  torch::Tensor non_aborted = aborted.logical_not();

  add_stats(m, "critic/score", sequence_score.masked_select(non_aborted));
  add_stats(m, "critic/rewards", sequence_reward.masked_select(non_aborted));
  torch::Tensor valid_adv = advantages.masked_select(response_mask);
  torch::Tensor valid_returns = returns.masked_select(response_mask);
  add_stats(m, "critic/advantages", valid_adv);
  add_stats(m, "critic/returns", valid_returns);

  if (use_critic) {
    torch::Tensor valid_values = batch.tensor("values").masked_select(response_mask);
    add_stats(m, "critic/values", valid_values);
    if (valid_returns.numel() > 0 && valid_values.numel() > 0) {
      // torch.var is unbiased, as verl's.
      torch::Tensor r = valid_returns.to(torch::kFloat64);
      torch::Tensor v = valid_values.to(torch::kFloat64);
      double return_diff_var = item(torch::var(r - v));
      double return_var = item(torch::var(r));
      m["critic/vf_explained_var"] = 1.0 - return_diff_var / (return_var + 1e-5);
    } else {
      m["critic/vf_explained_var"] = kNaN;
    }
  }

  add_stats(m, "response_length", info.response_length);
  m["response_length/clip_ratio"] = item(info.response_length.eq(max_response_length).to(torch::kFloat64).mean());
  torch::Tensor non_aborted_lengths = info.response_length.masked_select(non_aborted);
  add_stats(m, "response_length_non_aborted", non_aborted_lengths);
  m["response_length_non_aborted/clip_ratio"] =
      non_aborted_lengths.numel() > 0
          ? item(non_aborted_lengths.eq(max_response_length).to(torch::kFloat64).mean())
          : kNaN;
  m["response/aborted_ratio"] = item(aborted.to(torch::kFloat64).mean());
  add_stats(m, "prompt_length", info.prompt_length);
  m["prompt_length/clip_ratio"] = item(info.prompt_length.eq(max_prompt_length).to(torch::kFloat64).mean());
  // Agent-loop rollouts: each row's chat turns and tool calls.
  if (batch.has_column("__num_turns__")) add_stats(m, "num_turns", numeric_column(batch, "__num_turns__"));
  if (batch.has_column("tool_call_counts")) add_stats(m, "tool_call_counts", numeric_column(batch, "tool_call_counts"));
  return m;
}

Metrics compute_timing_metrics(const DataProto& batch, const TimingRaw& timing_raw) {
  LengthInfo info = response_info(batch);
  const double num_prompt_tokens = item(info.prompt_length.sum());
  const double num_response_tokens = item(info.response_length.sum());
  const double num_overall_tokens = num_prompt_tokens + num_response_tokens;
  Metrics m;
  for (const auto& [name, seconds] : timing_raw) {
    m["timing_s/" + name] = seconds;
    double tokens = -1;
    if (name == "gen") {
      tokens = num_response_tokens;
    } else if (name == "ref" || name == "values" || name == "adv" || name == "update_critic" ||
               name == "update_actor") {
      tokens = num_overall_tokens;
    }
    if (tokens >= 0) m["timing_per_token_ms/" + name] = tokens > 0 ? seconds * 1000.0 / tokens : 0.0;
  }
  return m;
}

Metrics compute_throughout_metrics(const DataProto& batch, const TimingRaw& timing_raw, int64_t n_gpus) {
  auto it = timing_raw.find("step");
  VERL_CHECK(it != timing_raw.end(), "compute_throughout_metrics: timing_raw has no 'step' entry");
  VERL_CHECK(n_gpus > 0, "compute_throughout_metrics: n_gpus must be positive, got ", n_gpus);
  // verl sums meta_info["global_token_num"], the valid tokens of each row's attention_mask; a batch that carries
  // it (verl's trainer sets it, user code may) is counted from it, one without it from attention_mask itself.
  double total_num_tokens = 0.0;
  auto counts = batch.meta_info().find("global_token_num");
  if (counts != batch.meta_info().end()) {
    VERL_CHECK_AS(TypeMismatch, counts->is_array(),
                  "compute_throughout_metrics: meta_info['global_token_num'] must be a list of token counts, got ",
                  counts->type_name());
    for (const Json& n : *counts) {
      VERL_CHECK_AS(TypeMismatch, n.is_number(), "compute_throughout_metrics: meta_info['global_token_num'] holds a ",
                    n.type_name(), ", not a token count");
      total_num_tokens += n.get<double>();
    }
  } else {
    total_num_tokens = item(batch.tensor("attention_mask").to(torch::kFloat64).sum());
  }
  const double time = it->second;
  return {{"perf/total_num_tokens", total_num_tokens},
          {"perf/time_per_step", time},
          {"perf/throughput", total_num_tokens / (time * static_cast<double>(n_gpus))}};
}

Metrics compute_rollout_debug_metrics(const DataProto& batch) {
  torch::NoGradGuard no_grad;
  torch::Tensor rollout = batch.tensor("rollout_log_probs").to(torch::kFloat64);
  torch::Tensor actor = batch.tensor("old_log_probs").to(torch::kFloat64);
  const int64_t response_length = batch.tensor("responses").size(1);
  torch::Tensor mask = batch.has_tensor("response_mask") ? batch.tensor("response_mask")
                                                         : batch.tensor("attention_mask");
  mask = mask.slice(1, mask.size(1) - response_length).to(torch::kBool);
  if (!mask.any().item<bool>()) {
    return {{"training/rollout_probs_diff_valid", 0.0},
            {"training/rollout_probs_diff_max", kNaN},
            {"training/rollout_probs_diff_mean", kNaN},
            {"training/rollout_probs_diff_std", kNaN},
            {"training/rollout_actor_probs_pearson_corr", kNaN}};
  }
  torch::Tensor actor_probs = actor.exp().masked_select(mask);
  torch::Tensor rollout_probs = rollout.exp().masked_select(mask);
  torch::Tensor diff = (actor_probs - rollout_probs).abs();
  double corr = item(torch::corrcoef(torch::stack({actor_probs, rollout_probs}))[0][1]);
  return {{"training/rollout_probs_diff_valid", 1.0},
          {"training/rollout_probs_diff_max", item(diff.max())},
          {"training/rollout_probs_diff_mean", item(diff.mean())},
          {"training/rollout_probs_diff_std", diff.numel() > 1 ? item(diff.std()) : kNaN},
          {"training/rollout_actor_probs_pearson_corr", corr}};
}

Metrics log_seqlen_unbalance(const std::vector<int64_t>& seqlens, const std::vector<std::vector<int64_t>>& partitions,
                             const std::string& prefix) {
  VERL_CHECK(!partitions.empty() && !seqlens.empty(), "log_seqlen_unbalance: empty input");
  const size_t chunk = std::max<size_t>(1, seqlens.size() / partitions.size());
  int64_t min_sum = std::numeric_limits<int64_t>::max(), max_sum = std::numeric_limits<int64_t>::min(), total = 0;
  for (size_t offset = 0; offset < seqlens.size(); offset += chunk) {
    const size_t end = std::min(seqlens.size(), offset + chunk);
    const int64_t s = std::accumulate(seqlens.begin() + static_cast<std::ptrdiff_t>(offset),
                                      seqlens.begin() + static_cast<std::ptrdiff_t>(end), int64_t{0});
    min_sum = std::min(min_sum, s);
    max_sum = std::max(max_sum, s);
    total += s;
  }
  int64_t balanced_min = std::numeric_limits<int64_t>::max(), balanced_max = std::numeric_limits<int64_t>::min();
  for (const auto& part : partitions) {
    int64_t s = 0;
    for (int64_t i : part) s += seqlens.at(static_cast<size_t>(i));
    balanced_min = std::min(balanced_min, s);
    balanced_max = std::max(balanced_max, s);
  }
  return {{prefix + "/min", static_cast<double>(min_sum)},
          {prefix + "/max", static_cast<double>(max_sum)},
          {prefix + "/minmax_diff", static_cast<double>(max_sum - min_sum)},
          {prefix + "/balanced_min", static_cast<double>(balanced_min)},
          {prefix + "/balanced_max", static_cast<double>(balanced_max)},
          {prefix + "/mean", static_cast<double>(total) / static_cast<double>(partitions.size())}};
}

}  // namespace verl::trainer
