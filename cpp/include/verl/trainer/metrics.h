// The step metrics of verl's PPO trainer (verl/trainer/ppo/metric_utils.py, verl/utils/debug/metrics.py,
// verl/utils/seqlen_balancing.py log_seqlen_unbalance), computed from the step's batch with verl's names
// and formulas. Used by verl::trainer::PPOTrainer.
//
// The batch holds (bs rows):
//   prompts (bs, prompt_length), responses (bs, response_length), attention_mask (bs, prompt_length +
//   response_length), response_mask, token_level_scores, token_level_rewards, advantages, returns
//   (bs, response_length); values (bs, response_length) with a critic; rollout_log_probs and old_log_probs
//   (bs, response_length) for the rollout/actor agreement metrics.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "verl/core/export.h"
#include "verl/data/data_proto.h"

namespace verl::trainer {

using Metrics = std::map<std::string, double>;
using TimingRaw = std::map<std::string, double>;  // stage name -> seconds

// verl's compute_data_metrics: critic/score|rewards/{mean,max,min} over non-aborted sequences (a row
// whose response is empty is "aborted"), critic/advantages|returns/{mean,max,min} over response tokens,
// critic/values/{mean,max,min} and critic/vf_explained_var when use_critic, response_length/{mean,max,
// min,clip_ratio}, response_length_non_aborted/*, response/aborted_ratio, prompt_length/{mean,max,min,
// clip_ratio}. Empty selections give NaN as in verl. DataError when a key is missing.
VERL_API Metrics compute_data_metrics(const DataProto& batch, bool use_critic);

// verl's compute_timing_metrics: timing_s/<stage> for every stage, and timing_per_token_ms/<stage> for
// gen (per response token) and ref, values, adv, update_critic, update_actor (per prompt + response token).
VERL_API Metrics compute_timing_metrics(const DataProto& batch, const TimingRaw& timing_raw);

// verl's compute_throughout_metrics: perf/total_num_tokens (the sum of meta_info["global_token_num"] when the
// batch carries it, else the valid tokens of attention_mask), perf/time_per_step (timing_raw["step"]) and
// perf/throughput = tokens / (time * n_gpus). TypeMismatch when global_token_num is not a list of numbers.
VERL_API Metrics compute_throughout_metrics(const DataProto& batch, const TimingRaw& timing_raw, int64_t n_gpus);

// verl's calculate_debug_metrics: how far the actor's recomputed probabilities are from the rollout's
// (training/rollout_probs_diff_{valid,max,mean,std}, training/rollout_actor_probs_pearson_corr), over
// response_mask. With the shared model the difference is zero up to kernel rounding.
VERL_API Metrics compute_rollout_debug_metrics(const DataProto& batch);

// verl's log_seqlen_unbalance: <prefix>/{min,max,minmax_diff,balanced_min,balanced_max,mean} of the
// summed sequence lengths per partition before (contiguous equal chunks) and after balancing.
VERL_API Metrics log_seqlen_unbalance(const std::vector<int64_t>& seqlens,
                                      const std::vector<std::vector<int64_t>>& partitions, const std::string& prefix);

}  // namespace verl::trainer
