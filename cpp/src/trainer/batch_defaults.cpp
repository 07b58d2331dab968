// The batch sizes a user need not set (see verl/trainer/batch_defaults.h).
#include "verl/trainer/batch_defaults.h"

#include <algorithm>
#include <array>

namespace verl::trainer {
namespace {

constexpr const char* kActor = "actor_rollout_ref.actor";

bool has_value(const Config& config, const std::string& key) {
  return config.has(key) && !config.get(key).is_null();
}

// Neither `key` nor its legacy global form (`key` without _per_gpu) has a value.
bool unset(const Config& config, const std::string& key) {
  const std::string suffix = "_per_gpu";
  const bool per_gpu = key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0;
  return !has_value(config, key) && !(per_gpu && has_value(config, key.substr(0, key.size() - suffix.size())));
}

bool flag(const Config& config, const std::string& key) { return has_value(config, key) && config.get_as<bool>(key); }

int64_t largest_divisor_at_most(int64_t n, int64_t cap) {
  for (int64_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

std::vector<BatchDefault> fill_batch_defaults(Config& config, std::optional<int64_t> dataset_size) {
  std::vector<BatchDefault> notes;
  const auto note = [&](const std::string& key, int64_t value, std::string why) {
    config.set(key, value);
    notes.push_back({key, value, std::move(why)});
  };

  int64_t batch = config.get_as<int64_t>("data.train_batch_size");
  if (dataset_size && *dataset_size > 0 && *dataset_size < batch && !has_value(config, "data.gen_batch_size")) {
    note("data.train_batch_size", *dataset_size,
         "clipped from " + std::to_string(batch) + ": the training set has " + std::to_string(*dataset_size) + " rows");
    batch = *dataset_size;
  }
  for (const std::string key : {std::string(kActor) + ".ppo_mini_batch_size", std::string("critic.ppo_mini_batch_size")}) {
    const int64_t mini = config.get_as<int64_t>(key);
    if (mini > batch) note(key, batch, "clipped from " + std::to_string(mini) + " to data.train_batch_size");
  }

  const int64_t n = config.get_as<int64_t>("actor_rollout_ref.rollout.n");
  const int64_t ranks =
      std::max<int64_t>(1, config.get_as<int64_t>("trainer.nnodes") * config.get_as<int64_t>("trainer.n_gpus_per_node"));
  const int64_t seq_len =
      config.get_as<int64_t>("data.max_prompt_length") + config.get_as<int64_t>("data.max_response_length");
  const auto fitting = [&](const std::string& budget_key) {
    return std::max<int64_t>(1, config.get_as<int64_t>(budget_key) / std::max<int64_t>(seq_len, 1));
  };
  const auto budget_text = [&](const std::string& budget_key) {
    return budget_key + "=" + config.get(budget_key).dump();
  };

  for (const std::string role : {std::string(kActor), std::string("critic")}) {
    const std::string key = role + ".ppo_micro_batch_size_per_gpu";
    if (flag(config, role + ".use_dynamic_bsz") || !unset(config, key)) continue;
    // per rank, as verl normalises the mini-batch (a share the ranks cannot split is refused at start)
    const int64_t rows = std::max<int64_t>(1, config.get_as<int64_t>(role + ".ppo_mini_batch_size") * n / ranks);
    const std::string budget = role + ".ppo_max_token_len_per_gpu";
    note(key, largest_divisor_at_most(rows, fitting(budget)),
         "unset: the largest divisor of one rank's " + std::to_string(rows) + " trajectories of the mini-batch whose " +
             std::to_string(seq_len) + "-token sequences fit " + budget_text(budget));
  }

  struct Forward {
    const char* section;
    const char* micro;
    const char* dynamic;
    const char* budget;
  };
  const std::array<Forward, 3> forward = {{
      {"actor_rollout_ref.rollout", "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz",
       "log_prob_max_token_len_per_gpu"},
      {"actor_rollout_ref.ref", "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz",
       "log_prob_max_token_len_per_gpu"},
      {"critic", "forward_micro_batch_size_per_gpu", "use_dynamic_bsz", "forward_max_token_len_per_gpu"},
  }};
  for (const Forward& f : forward) {
    const std::string section = f.section;
    const std::string key = section + "." + f.micro;
    if (flag(config, section + "." + f.dynamic) || !unset(config, key)) continue;
    const std::string budget = section + "." + f.budget;
    note(key, std::min(batch * n, fitting(budget)),
         "unset: the trajectories of the batch (" + std::to_string(batch * n) + ") whose " + std::to_string(seq_len) +
             "-token sequences fit " + budget_text(budget));
  }
  return notes;
}

}  // namespace verl::trainer
