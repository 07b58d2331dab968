// The range and choice rules for config keys (see config_schema.h). Ranges follow the checks
// verl makes in its config dataclasses and trainer; choices list what verl accepts.
#include "config_schema.h"

#include <sstream>

namespace verl::config_schema {
namespace {

using K = Rule::Kind;

const std::vector<std::string> kKlPenalties = {"kl",  "k1",  "abs",  "mse",  "k2",  "low_var_kl",  "k3",
                                               "kl+", "k1+", "abs+", "mse+", "k2+", "low_var_kl+", "k3+"};
const std::vector<std::string> kLossAggModes = {"token-mean", "seq-mean-token-sum", "seq-mean-token-mean",
                                                "seq-mean-token-sum-norm"};

std::vector<Rule> optim_rules(const std::string& prefix) {
  auto k = [&](const char* leaf) { return prefix + leaf; };
  return {
      {k(".lr"), K::kNumber, 0.0},
      {k(".weight_decay"), K::kNumber, 0.0},
      {k(".lr_warmup_steps_ratio"), K::kNumber, 0.0, 1.0},
      {k(".min_lr_ratio"), K::kNumber, 0.0, 1.0},
      {k(".clip_grad"), K::kNumber, 0.0},
      {k(".lr_scheduler_type"), K::kString, {}, {}, false, {"constant", "cosine"}},
      {k(".num_cycles"), K::kNumber, 0.0},
      {k(".optimizer"), K::kString, {}, {}, false, {"AdamW", "adamw", "Adam", "adam", "SGD", "sgd"}},
  };
}

std::vector<Rule> build_rules() {
  std::vector<Rule> r = {
      {"data.train_batch_size", K::kInt, 1.0},
      {"data.val_batch_size", K::kInt, 1.0, {}, false, {}, true},
      {"data.gen_batch_size", K::kInt, 1.0, {}, false, {}, true},
      {"data.max_prompt_length", K::kInt, 1.0},
      {"data.max_response_length", K::kInt, 1.0},
      {"data.truncation", K::kString, {}, {}, false, {"error", "left", "right", "middle"}},
      {"data.prompt_key", K::kString},
      {"actor_rollout_ref.rollout.name", K::kString, {}, {}, false, {"native", "vllm", "sglang"}},
      {"actor_rollout_ref.rollout.n", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.temperature", K::kNumber, 0.0},
      {"actor_rollout_ref.rollout.top_p", K::kNumber, 0.0, 1.0, true},
      {"actor_rollout_ref.rollout.top_k", K::kInt, -1.0},
      {"actor_rollout_ref.rollout.gpu_memory_utilization", K::kNumber, 0.0, 1.0, true},
      {"actor_rollout_ref.rollout.max_num_seqs", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.max_num_batched_tokens", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.tensor_model_parallel_size", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.data_parallel_size", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.prompt_length", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.response_length", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.dtype", K::kString, {}, {}, false,
       {"auto", "bfloat16", "float16", "float32", "bf16", "fp16", "fp32"}},
      {"actor_rollout_ref.rollout.val_kwargs.n", K::kInt, 1.0},
      {"actor_rollout_ref.rollout.val_kwargs.temperature", K::kNumber, 0.0},
      {"actor_rollout_ref.rollout.val_kwargs.top_p", K::kNumber, 0.0, 1.0, true},
      {"actor_rollout_ref.rollout.val_kwargs.top_k", K::kInt, -1.0},
      {"actor_rollout_ref.actor.ppo_mini_batch_size", K::kInt, 1.0},
      {"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", K::kInt, 1.0, {}, false, {}, true},
      {"actor_rollout_ref.actor.ppo_max_token_len_per_gpu", K::kInt, 1.0},
      {"actor_rollout_ref.actor.ppo_epochs", K::kInt, 1.0},
      {"actor_rollout_ref.actor.clip_ratio", K::kNumber, 0.0},
      {"actor_rollout_ref.actor.clip_ratio_low", K::kNumber, 0.0},
      {"actor_rollout_ref.actor.clip_ratio_high", K::kNumber, 0.0},
      {"actor_rollout_ref.actor.clip_ratio_c", K::kNumber, 1.0, {}, true},
      {"actor_rollout_ref.actor.loss_agg_mode", K::kString, {}, {}, false, kLossAggModes},
      {"actor_rollout_ref.actor.entropy_coeff", K::kNumber},
      {"actor_rollout_ref.actor.kl_loss_coef", K::kNumber, 0.0},
      {"actor_rollout_ref.actor.kl_loss_type", K::kString, {}, {}, false, kKlPenalties},
      {"actor_rollout_ref.actor.grad_clip", K::kNumber, 0.0},
      {"actor_rollout_ref.actor.policy_loss.loss_mode", K::kString},
      {"critic.ppo_mini_batch_size", K::kInt, 1.0},
      {"critic.ppo_epochs", K::kInt, 1.0},
      {"critic.cliprange_value", K::kNumber, 0.0},
      {"critic.grad_clip", K::kNumber, 0.0},
      {"critic.loss_agg_mode", K::kString, {}, {}, false, kLossAggModes},
      {"algorithm.gamma", K::kNumber, 0.0, 1.0},
      {"algorithm.lam", K::kNumber, 0.0, 1.0},
      {"algorithm.adv_estimator", K::kString},
      {"algorithm.kl_penalty", K::kString, {}, {}, false, kKlPenalties},
      {"algorithm.kl_ctrl.type", K::kString, {}, {}, false, {"fixed", "adaptive"}},
      {"algorithm.kl_ctrl.kl_coef", K::kNumber, 0.0},
      {"algorithm.kl_ctrl.horizon", K::kInt, 1.0},
      {"algorithm.kl_ctrl.target_kl", K::kNumber, 0.0},
      {"algorithm.filter_groups.max_num_gen_batches", K::kInt, 0.0},
      {"trainer.total_epochs", K::kInt, 0.0},
      {"trainer.total_training_steps", K::kInt, 1.0, {}, false, {}, true},
      {"trainer.save_freq", K::kInt, -1.0},
      {"trainer.test_freq", K::kInt, -1.0},
      {"trainer.critic_warmup", K::kInt, 0.0},
      {"trainer.nnodes", K::kInt, 1.0},
      {"trainer.n_gpus_per_node", K::kInt, 1.0},
      {"trainer.resume_mode", K::kString, {}, {}, false, {"auto", "disable", "resume_path"}},
      {"trainer.device", K::kString, {}, {}, false, {"cuda", "cpu"}},
      {"trainer.logger", K::kStringOrList},
      {"trainer.log_val_generations", K::kInt, 0.0},
      // LoRA (issue 42): target_modules is a string (all-linear, a regex) or a list of module names, as in PEFT.
      {"actor_rollout_ref.model.lora_rank", K::kInt, 0.0},
      {"actor_rollout_ref.model.lora_alpha", K::kNumber, 0.0, {}, true},
      {"actor_rollout_ref.model.target_modules", K::kStringOrList},
      {"critic.model.lora_rank", K::kInt, 0.0},
      {"critic.model.lora_alpha", K::kNumber, 0.0, {}, true},
      {"critic.model.target_modules", K::kStringOrList},
      {"trainer.max_actor_ckpt_to_keep", K::kInt, 1.0, {}, false, {}, true},
      {"trainer.max_critic_ckpt_to_keep", K::kInt, 1.0, {}, false, {}, true},
  };
  for (const char* prefix : {"actor_rollout_ref.actor.optim", "critic.optim"})
    for (Rule& rule : optim_rules(prefix)) r.push_back(std::move(rule));
  return r;
}

// verl 0.9.1's sft_trainer_engine.yaml keys (python/verl/trainer/config/sft_trainer.yaml).
std::vector<Rule> build_sft_rules() {
  std::vector<Rule> r = {
      {"data.train_batch_size", K::kInt, 1.0},
      {"data.micro_batch_size_per_gpu", K::kInt, 1.0},
      {"data.max_token_len_per_gpu", K::kInt, 1.0},
      {"data.max_length", K::kInt, 1.0},
      {"data.truncation", K::kString, {}, {}, false, {"error", "left", "right"}},
      {"data.train_max_samples", K::kInt, -1.0},
      {"data.val_max_samples", K::kInt, -1.0},
      {"data.messages_key", K::kString},
      {"data.prompt_key", K::kString},
      {"data.response_key", K::kString},
      {"model.dtype", K::kString, {}, {}, false, {"fp32", "bf16", "fp16", "float32", "bfloat16", "float16"}},
      {"model.lora_rank", K::kInt, 0.0},
      {"model.lora_alpha", K::kNumber, 0.0, {}, true},
      {"model.target_modules", K::kStringOrList},
      {"trainer.total_epochs", K::kInt, 1.0},
      {"trainer.total_training_steps", K::kInt, 1.0, {}, false, {}, true},
      {"trainer.save_freq", K::kInt, -1.0},
      {"trainer.test_freq", K::kInt, -1.0},
      {"trainer.max_ckpt_to_keep", K::kInt, 1.0, {}, false, {}, true},
      {"trainer.resume_mode", K::kString, {}, {}, false, {"auto", "disable", "resume_path"}},
      {"trainer.device", K::kString, {}, {}, false, {"cuda", "cpu"}},
      {"trainer.logger", K::kStringOrList},
  };
  for (Rule& rule : optim_rules("optim")) r.push_back(std::move(rule));
  return r;
}

std::string describe(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

}  // namespace

const std::vector<Rule>& rules(Tree tree) {
  static const std::vector<Rule> ppo = build_rules();
  static const std::vector<Rule> sft = build_sft_rules();
  return tree == Tree::kSFT ? sft : ppo;
}

const Rule* find_rule(const std::string& key, Tree tree) {
  for (const Rule& r : rules(tree))
    if (key == r.key) return &r;
  return nullptr;
}

std::string type_violation(const Rule& rule, const Json& v) {
  if (v.is_null()) return rule.nullable ? "" : "must not be null";
  switch (rule.kind) {
    case K::kInt:
      return v.is_number_integer() ? "" : "must be an integer";
    case K::kNumber:
      return v.is_number() ? "" : "must be a number";
    case K::kString:
      return v.is_string() ? "" : "must be a string";
    case K::kStringOrList:
      return v.is_string() || v.is_array() ? "" : "must be a string or a list of strings";
  }
  return "";
}

std::string value_violation(const Rule& rule, const Json& v) {
  if (v.is_number()) {
    const double x = v.get<double>();
    if (rule.min && (rule.min_exclusive ? !(x > *rule.min) : !(x >= *rule.min)))
      return std::string("must be ") + (rule.min_exclusive ? "> " : ">= ") + describe(*rule.min);
    if (rule.max && !(x <= *rule.max)) return "must be <= " + describe(*rule.max);
  }
  if (!rule.choices.empty()) {
    for (const auto& c : rule.choices)
      if (v.get_ref<const std::string&>() == c) return "";
    std::string list;
    for (const auto& c : rule.choices) list += (list.empty() ? "" : ", ") + c;
    return "must be one of: " + list;
  }
  return "";
}

}  // namespace verl::config_schema
