// DAPO's dynamic sampling (verl's algorithm.filter_groups): generation batches are scored, the groups (rows sharing
// a uid, the rollout.n samples of one prompt) whose metric does not vary are dropped -- they give GRPO no signal --
// and the kept groups gather across generation batches until data.train_batch_size prompts are there; the first
// train_batch_size * rollout.n rows are then one optimize(). A C++ application drives it between the trainer's
// stages:
//
//   verl::trainer::GroupFilter filter(verl::trainer::GroupFilterConfig::from_config(trainer.config()));
//   for (const DataProto& prompts : loader) {
//     filter.add(trainer.compute_rewards(trainer.collect_rollouts(prompts)));
//     if (!filter.ready()) continue;
//     const int64_t gen_batches = filter.num_gen_batches();
//     Metrics metrics = trainer.optimize(filter.take());
//     metrics["train/num_gen_batches"] = static_cast<double>(gen_batches);
//   }
//
// verl.trainer.PPOTrainer.fit (Python) runs exactly this.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/data/data_proto.h"

namespace verl::trainer {

struct VERL_API GroupFilterConfig {
  // algorithm.filter_groups.metric: a column of the reward's extra info, or seq_reward / seq_final_reward (and
  // reward / score where no such column exists): the sum of token_level_scores.
  std::string metric = "reward";
  int64_t max_num_gen_batches = 0;  // algorithm.filter_groups.max_num_gen_batches; 0: no limit
  int64_t train_batch_size = 1;     // data.train_batch_size: prompts per optimize()
  int64_t rollout_n = 1;            // actor_rollout_ref.rollout.n: rows per prompt

  // From those keys; ConfigError naming the key for a missing metric or non-positive sizes.
  static GroupFilterConfig from_config(const Config& config);
};

// The metric's value for every row of a scored batch, as verl reads it: the column `metric` of the non-tensor batch
// (numbers or bools) or, for the sequence-reward names, token_level_scores summed over the response (float32, then
// float64, as verl's scores.sum(-1)). ConfigError for a metric that is neither; DataError naming the row for a
// column value that is not a number.
VERL_API std::vector<double> group_metric_values(const DataProto& batch, const std::string& metric);

// The rows (in order) of the groups to keep: those whose values have a population standard deviation above zero,
// or that have a single row -- verl's `np.std(values) > 0 or len(values) == 1`. The deviation is computed as numpy
// computes it (pairwise sums), so the same groups are kept: numpy's mean of equal non-integers can miss the value by
// an ulp (np.std([0.1] * 3) is 1.4e-17), and verl then keeps such a group. `num_groups`, when given, receives the
// number of groups kept. InvalidArgument when the two lists differ in length.
VERL_API std::vector<int64_t> varying_group_rows(const std::vector<std::string>& uids,
                                                 const std::vector<double>& values, int64_t* num_groups = nullptr);

class VERL_API GroupFilter {
 public:
  explicit GroupFilter(GroupFilterConfig config);

  // Keeps the varying groups of one scored generation batch (it needs a "uid" column and the metric) and appends
  // them to those gathered so far. meta_info of the gathered batch: the first batch's keys, "timing_s" summed over
  // the generation batches, "step_metrics" of the latest. DataError when max_num_gen_batches (> 0) batches have
  // been added and fewer than train_batch_size prompts kept ("the data may be too difficult").
  void add(DataProto scored);
  // Whether train_batch_size prompts are gathered.
  bool ready() const { return num_prompts_ >= config_.train_batch_size; }
  int64_t num_gen_batches() const { return num_gen_batches_; }  // batches added since the last take()
  int64_t num_prompts() const { return num_prompts_; }          // groups kept since the last take()
  // The first train_batch_size * rollout_n gathered rows (verl's batch[:traj_bsz]; the rest are dropped), and a
  // fresh start. InvalidArgument unless ready().
  DataProto take();
  // Drops what was gathered (a new epoch).
  void reset();

  const GroupFilterConfig& config() const { return config_; }

 private:
  GroupFilterConfig config_;
  std::optional<DataProto> gathered_;  // the kept rows, meta_info empty (concat needs equal meta_info)
  Json meta_info_ = Json::object();
  int64_t num_gen_batches_ = 0;
  int64_t num_prompts_ = 0;
};

}  // namespace verl::trainer
