// DAPO's group filtering (see verl/trainer/group_filter.h).
#include "verl/trainer/group_filter.h"

#include <map>
#include <utility>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::trainer {
namespace {

// numpy's float64 add.reduce of a contiguous array (pairwise_sum in numpy's loops_utils.h): fewer than 8 values
// summed in order; up to 128 in eight interleaved partial sums combined as a tree, then the remainder in order;
// longer arrays split in two halves (the first a multiple of 8) summed recursively. The reduction starts from 0.
double numpy_sum(const double* a, size_t n) {
  if (n < 8) {
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    double r[8];
    for (size_t j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - n % 8; i += 8)
      for (size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  size_t half = n / 2;
  half -= half % 8;
  return numpy_sum(a, half) + numpy_sum(a + half, n - half);
}

// np.std(values) > 0: the mean of the squared deviations from numpy's mean is positive.
bool numpy_std_positive(const std::vector<double>& values) {
  const double n = static_cast<double>(values.size());
  const double mean = numpy_sum(values.data(), values.size()) / n;
  std::vector<double> squares;
  squares.reserve(values.size());
  for (double v : values) squares.push_back((v - mean) * (v - mean));
  return numpy_sum(squares.data(), squares.size()) / n > 0;
}

bool is_sequence_reward(const std::string& metric) {
  return metric == "seq_reward" || metric == "seq_final_reward" || metric == "reward" || metric == "score";
}

}  // namespace

GroupFilterConfig GroupFilterConfig::from_config(const Config& config) {
  GroupFilterConfig c;
  const Json metric = config.get("algorithm.filter_groups.metric");
  VERL_CHECK_AS(ConfigError, metric.is_string() && !metric.get<std::string>().empty(),
                "algorithm.filter_groups.metric must name the metric whose variation keeps a group (a reward "
                "extra-info key, or seq_reward / seq_final_reward), got ", metric.dump());
  c.metric = metric.get<std::string>();
  c.max_num_gen_batches = config.get_as<int64_t>("algorithm.filter_groups.max_num_gen_batches");
  c.train_batch_size = config.get_as<int64_t>("data.train_batch_size");
  c.rollout_n = config.get_as<int64_t>("actor_rollout_ref.rollout.n");
  VERL_CHECK_AS(ConfigError, c.max_num_gen_batches >= 0,
                "algorithm.filter_groups.max_num_gen_batches must be >= 0 (0: no limit), got ", c.max_num_gen_batches);
  VERL_CHECK_AS(ConfigError, c.train_batch_size >= 1, "data.train_batch_size must be >= 1 for group filtering, got ",
                c.train_batch_size);
  VERL_CHECK_AS(ConfigError, c.rollout_n >= 1, "actor_rollout_ref.rollout.n must be >= 1, got ", c.rollout_n);
  return c;
}

std::vector<double> group_metric_values(const DataProto& batch, const std::string& metric) {
  std::vector<double> values;
  if (batch.has_column(metric)) {
    const DataProto::Column& column = batch.column(metric);
    values.reserve(column.size());
    for (size_t i = 0; i < column.size(); ++i) {
      const Json& v = column[i];
      VERL_CHECK_AS(DataError, v.is_number() || v.is_boolean(), "algorithm.filter_groups.metric=", metric,
                    ": row ", i, " holds ", v.dump(), ", not a number");
      values.push_back(v.is_boolean() ? (v.get<bool>() ? 1.0 : 0.0) : v.get<double>());
    }
    return values;
  }
  if (!is_sequence_reward(metric)) {
    std::string columns;
    for (const auto& [key, column] : batch.non_tensor_batch()) columns += (columns.empty() ? "" : ", ") + key;
    VERL_FAIL(ConfigError, "algorithm.filter_groups.metric=", metric, " is neither a reward extra-info key ([",
              columns, "]) nor seq_reward / seq_final_reward");
  }
  torch::Tensor sums = batch.tensor("token_level_scores").sum(-1).to(torch::kDouble).cpu().contiguous();
  values.assign(sums.data_ptr<double>(), sums.data_ptr<double>() + sums.numel());
  return values;
}

std::vector<int64_t> varying_group_rows(const std::vector<std::string>& uids, const std::vector<double>& values,
                                        int64_t* num_groups) {
  VERL_CHECK(uids.size() == values.size(), "varying_group_rows: ", uids.size(), " uids but ", values.size(),
             " metric values");
  std::map<std::string, std::vector<double>> by_uid;
  for (size_t i = 0; i < uids.size(); ++i) by_uid[uids[i]].push_back(values[i]);
  std::map<std::string, bool> keep;
  int64_t kept = 0;
  for (const auto& [uid, group] : by_uid) {
    const bool varies = group.size() == 1 || numpy_std_positive(group);
    keep[uid] = varies;
    kept += varies ? 1 : 0;
  }
  std::vector<int64_t> rows;
  for (size_t i = 0; i < uids.size(); ++i)
    if (keep[uids[i]]) rows.push_back(static_cast<int64_t>(i));
  if (num_groups != nullptr) *num_groups = kept;
  return rows;
}

GroupFilter::GroupFilter(GroupFilterConfig config) : config_(std::move(config)) {
  VERL_CHECK(config_.train_batch_size >= 1 && config_.rollout_n >= 1 && config_.max_num_gen_batches >= 0,
             "GroupFilter: train_batch_size and rollout_n must be >= 1 and max_num_gen_batches >= 0, got ",
             config_.train_batch_size, ", ", config_.rollout_n, ", ", config_.max_num_gen_batches);
}

void GroupFilter::add(DataProto scored) {
  const std::vector<double> values = group_metric_values(scored, config_.metric);
  std::vector<std::string> uids;  // as JSON text: the string "1" and the number 1 are different uids, as in Python
  for (const Json& uid : scored.column("uid")) uids.push_back(uid.dump());
  int64_t kept_groups = 0;
  const std::vector<int64_t> rows = varying_group_rows(uids, values, &kept_groups);

  Json meta = std::move(scored.meta_info());
  scored.meta_info() = Json::object();
  Json timing = meta.contains("timing_s") ? meta["timing_s"] : Json::object();
  Json step_metrics = meta.contains("step_metrics") ? meta["step_metrics"] : Json::object();
  if (gathered_) {
    // The earlier batches' stage times add up; their step metrics are replaced by this batch's.
    for (auto it = meta_info_["timing_s"].begin(); it != meta_info_["timing_s"].end(); ++it)
      timing[it.key()] = timing.value(it.key(), 0.0) + it.value().get<double>();
  } else {
    meta_info_ = std::move(meta);
  }
  meta_info_["timing_s"] = std::move(timing);
  meta_info_["step_metrics"] = std::move(step_metrics);

  DataProto kept = scored.select_idxs(torch::tensor(rows, torch::kLong));
  if (!gathered_)
    gathered_ = std::move(kept);
  else if (kept.size() > 0)
    gathered_ = gathered_->size() > 0 ? DataProto::concat({*gathered_, kept}) : std::move(kept);
  num_gen_batches_ += 1;
  num_prompts_ += kept_groups;

  const int64_t limit = config_.max_num_gen_batches;
  VERL_CHECK_AS(DataError, ready() || limit == 0 || num_gen_batches_ < limit, "num_gen_batches=", num_gen_batches_,
                " >= algorithm.filter_groups.max_num_gen_batches=", limit, " and only ", num_prompts_,
                " prompts with varying ", config_.metric, "; the data may be too difficult (set "
                "max_num_gen_batches=0 for endless trials)");
}

DataProto GroupFilter::take() {
  VERL_CHECK(ready(), "GroupFilter::take: ", num_prompts_, " prompts gathered, ", config_.train_batch_size,
             " needed (check ready() first)");
  DataProto batch = gathered_->slice(0, config_.train_batch_size * config_.rollout_n);
  batch.meta_info() = std::move(meta_info_);
  reset();
  return batch;
}

void GroupFilter::reset() {
  gathered_.reset();
  meta_info_ = Json::object();
  num_gen_batches_ = 0;
  num_prompts_ = 0;
}

}  // namespace verl::trainer
