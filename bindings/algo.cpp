// verl._C.algo: the RL math of libverl (verl/algo/*.h). python/verl/utils/torch_functional.py and
// python/verl/trainer/ppo/core_algos.py give it verl's Python names and signatures; configs arrive
// here as plain dicts with verl's field names.
#include <memory>
#include <optional>

#include "bindings.h"
#include "json_cast.h"
#include "verl/algo/advantage.h"
#include "verl/algo/agg_loss.h"
#include "verl/algo/functional.h"
#include "verl/algo/gdpo.h"
#include "verl/algo/kl.h"
#include "verl/algo/optimal_token_baseline.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/policy_loss.h"
#include "verl/algo/reinforce_loss.h"
#include "verl/algo/rollout_correction.h"
#include "verl/algo/value_loss.h"

namespace verl::bindings {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;
using algo::AdvantageConfig;
using algo::AdvantageInputs;
using algo::PolicyLossConfig;

// verl's `axis` argument: None, an int or a tuple of ints.
std::optional<std::vector<int64_t>> axis_arg(const py::object& axis) {
  if (axis.is_none()) return std::nullopt;
  if (py::isinstance<py::int_>(axis)) return std::vector<int64_t>{axis.cast<int64_t>()};
  return axis.cast<std::vector<int64_t>>();
}

// A Python callable kept alive by C++ registries. Copies share one reference (no Python refcount
// traffic without the GIL); the last copy drops it under the GIL, or leaks it if the interpreter
// is already gone (registries are destroyed at process exit).
std::shared_ptr<py::object> hold(py::object fn) {
  return std::shared_ptr<py::object>(new py::object(std::move(fn)), [](py::object* p) {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      delete p;
    }
  });
}

template <typename T>
T field(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

std::optional<double> optional_field(const Json& j, const char* key, std::optional<double> fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  return it->is_null() ? std::nullopt : std::optional<double>(it->get<double>());
}

AdvantageConfig advantage_config(const Json& j) {
  AdvantageConfig c;
  c.gamma = field(j, "gamma", c.gamma);
  c.lam = field(j, "lam", c.lam);
  c.norm_adv_by_std_in_grpo = field(j, "norm_adv_by_std_in_grpo", c.norm_adv_by_std_in_grpo);
  c.epsilon = field(j, "epsilon", c.epsilon);
  c.sppo_eta = field(j, "sppo_eta", c.sppo_eta);
  return c;
}

Json config_json(const AdvantageConfig& c) {
  return Json{{"gamma", c.gamma}, {"lam", c.lam}, {"norm_adv_by_std_in_grpo", c.norm_adv_by_std_in_grpo},
              {"epsilon", c.epsilon}, {"sppo_eta", c.sppo_eta}};
}

Json optional_json(const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); }

// A threshold specification as verl takes it: a number, a string, or null (none).
std::optional<std::string> threshold_field(const Json& j, const char* key, std::optional<std::string> fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  if (it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  VERL_CHECK(it->is_number() && !it->is_boolean(), key,
             " must be a float or a string threshold specification, not ", it->dump());
  return algo::rollout_threshold_text(it->get<double>());
}

std::optional<std::string> optional_string(const Json& j, const char* key, std::optional<std::string> fallback) {
  auto it = j.find(key);
  if (it == j.end()) return fallback;
  return it->is_null() ? std::nullopt : std::optional<std::string>(it->get<std::string>());
}

algo::RolloutCorrectionConfig rollout_correction_config(const Json& j) {
  algo::RolloutCorrectionConfig c;
  c.rollout_is = optional_string(j, "rollout_is", c.rollout_is);
  c.rollout_is_threshold = threshold_field(j, "rollout_is_threshold", c.rollout_is_threshold);
  c.rollout_is_batch_normalize = field(j, "rollout_is_batch_normalize", c.rollout_is_batch_normalize);
  c.rollout_rs = optional_string(j, "rollout_rs", c.rollout_rs);
  c.rollout_rs_threshold = threshold_field(j, "rollout_rs_threshold", c.rollout_rs_threshold);
  c.bypass_mode = field(j, "bypass_mode", c.bypass_mode);
  c.loss_type = field(j, "loss_type", c.loss_type);
  return c;
}

Json optional_json(const std::optional<std::string>& v) { return v ? Json(*v) : Json(nullptr); }

Json config_json(const algo::RolloutCorrectionConfig& c) {
  return Json{{"rollout_is", optional_json(c.rollout_is)},
              {"rollout_is_threshold", optional_json(c.rollout_is_threshold)},
              {"rollout_is_batch_normalize", c.rollout_is_batch_normalize},
              {"rollout_rs", optional_json(c.rollout_rs)},
              {"rollout_rs_threshold", optional_json(c.rollout_rs_threshold)},
              {"bypass_mode", c.bypass_mode},
              {"loss_type", c.loss_type}};
}

PolicyLossConfig policy_loss_config(const Json& j) {
  PolicyLossConfig c;
  c.clip_ratio = field(j, "clip_ratio", c.clip_ratio);
  c.clip_ratio_low = optional_field(j, "clip_ratio_low", c.clip_ratio_low);
  c.clip_ratio_high = optional_field(j, "clip_ratio_high", c.clip_ratio_high);
  c.clip_ratio_c = field(j, "clip_ratio_c", c.clip_ratio_c);
  c.loss_agg_mode = field(j, "loss_agg_mode", c.loss_agg_mode);
  c.tau_pos = field(j, "tau_pos", c.tau_pos);
  c.tau_neg = field(j, "tau_neg", c.tau_neg);
  const Json pl = field(j, "policy_loss", Json::object());
  c.policy_loss.loss_mode = field(pl, "loss_mode", c.policy_loss.loss_mode);
  c.policy_loss.clip_cov_ratio = field(pl, "clip_cov_ratio", c.policy_loss.clip_cov_ratio);
  c.policy_loss.clip_cov_lb = field(pl, "clip_cov_lb", c.policy_loss.clip_cov_lb);
  c.policy_loss.clip_cov_ub = field(pl, "clip_cov_ub", c.policy_loss.clip_cov_ub);
  c.policy_loss.kl_cov_ratio = field(pl, "kl_cov_ratio", c.policy_loss.kl_cov_ratio);
  c.policy_loss.ppo_kl_coef = field(pl, "ppo_kl_coef", c.policy_loss.ppo_kl_coef);
  c.policy_loss.dro_beta = optional_field(pl, "dro_beta", c.policy_loss.dro_beta);
  if (auto rc = pl.find("rollout_correction"); rc != pl.end() && !rc->is_null()) {
    c.policy_loss.rollout_correction = rollout_correction_config(*rc);
  }
  const Json gb = field(j, "global_batch_info", Json::object());
  c.global_batch_info.dp_size = field<int64_t>(gb, "dp_size", c.global_batch_info.dp_size);
  c.global_batch_info.batch_num_tokens = optional_field(gb, "batch_num_tokens", std::nullopt);
  c.global_batch_info.global_batch_size = optional_field(gb, "global_batch_size", std::nullopt);
  c.global_batch_info.loss_scale_factor = optional_field(gb, "loss_scale_factor", std::nullopt);
  return c;
}

Json config_json(const PolicyLossConfig& c) {
  const auto& pl = c.policy_loss;
  const auto& gb = c.global_batch_info;
  return Json{{"clip_ratio", c.clip_ratio},
              {"clip_ratio_low", optional_json(c.clip_ratio_low)},
              {"clip_ratio_high", optional_json(c.clip_ratio_high)},
              {"clip_ratio_c", c.clip_ratio_c},
              {"loss_agg_mode", c.loss_agg_mode},
              {"tau_pos", c.tau_pos},
              {"tau_neg", c.tau_neg},
              {"policy_loss",
               {{"loss_mode", pl.loss_mode},
                {"clip_cov_ratio", pl.clip_cov_ratio},
                {"clip_cov_lb", pl.clip_cov_lb},
                {"clip_cov_ub", pl.clip_cov_ub},
                {"kl_cov_ratio", pl.kl_cov_ratio},
                {"ppo_kl_coef", pl.ppo_kl_coef},
                {"dro_beta", optional_json(pl.dro_beta)},
                {"rollout_correction", pl.rollout_correction ? config_json(*pl.rollout_correction) : Json(nullptr)}}},
              {"global_batch_info",
               {{"dp_size", gb.dp_size},
                {"batch_num_tokens", optional_json(gb.batch_num_tokens)},
                {"global_batch_size", optional_json(gb.global_batch_size)},
                {"loss_scale_factor", optional_json(gb.loss_scale_factor)}}}};
}

py::object tensor_or_none(const torch::Tensor& t) { return t.defined() ? py::cast(t) : py::none(); }

// Group ids for verl's `index`: uid strings (any Python objects, compared by their str()) -> (bs,) int64.
torch::Tensor group_ids(const py::iterable& uids) {
  std::vector<std::string> keys;
  for (auto u : uids) keys.push_back(py::isinstance<py::str>(u) ? u.cast<std::string>() : std::string(py::str(u)));
  py::gil_scoped_release release;
  return algo::group_ids(keys);
}

void register_functional(py::module_& algo) {
  using Reduction = torch::Tensor (*)(const torch::Tensor&, const torch::Tensor&, std::optional<std::vector<int64_t>>);
  for (auto [name, reduce] : {std::pair<const char*, Reduction>{"masked_sum", &algo::masked_sum},
                              std::pair<const char*, Reduction>{"masked_mean", &algo::masked_mean}}) {
    algo.def(name,
             // An init-capture: clang < 16 cannot capture a structured binding by name (C++20 allows it).
             [reduce = reduce](const torch::Tensor& values, const torch::Tensor& mask, const py::object& axis) {
               auto dims = axis_arg(axis);
               py::gil_scoped_release release;
               return reduce(values, mask, dims);
             },
             py::arg("values"), py::arg("mask"), py::arg("axis") = py::none());
  }
  algo.def("masked_var", &algo::masked_var, py::arg("values"), py::arg("mask"), py::arg("unbiased") = true,
           Release());
  algo.def("masked_whiten", &algo::masked_whiten, py::arg("values"), py::arg("mask"), py::arg("shift_mean") = true,
           Release());
  algo.def("get_response_mask",
           [](const torch::Tensor& response_id, const std::vector<int64_t>& eos_token) {
             return algo::get_response_mask(response_id, eos_token);
           },
           py::arg("response_id"), py::arg("eos_token"), Release());
  algo.def("entropy_from_logits", &algo::entropy_from_logits, py::arg("logits"), py::arg("chunk_size") = 1024,
           Release());
  algo.def("logprobs_from_logits", &algo::logprobs_from_logits, py::arg("logits"), py::arg("labels"),
           py::arg("chunk_size") = 1024, Release());
}

void register_advantages(py::module_& algo) {
  algo.def("group_ids", &group_ids, py::arg("uids"));
  algo.def("compute_gae_advantage_return", &algo::compute_gae_advantage_return, py::arg("token_level_rewards"),
           py::arg("values"), py::arg("response_mask"), py::arg("gamma"), py::arg("lam"), Release());
  for (auto [name, fn] : {std::pair{"compute_grpo_outcome_advantage", &algo::compute_grpo_outcome_advantage},
                          std::pair{"compute_grpo_vectorized_outcome_advantage",
                                    &algo::compute_grpo_vectorized_outcome_advantage},
                          std::pair{"compute_grpo_passk_outcome_advantage", &algo::compute_grpo_passk_outcome_advantage}}) {
    algo.def(name, fn, py::arg("token_level_rewards"), py::arg("response_mask"), py::arg("index"),
             py::arg("epsilon") = 1e-6, py::arg("norm_adv_by_std_in_grpo") = true, Release());
  }
  for (auto [name, fn] :
       {std::pair{"compute_rloo_outcome_advantage", &algo::compute_rloo_outcome_advantage},
        std::pair{"compute_rloo_vectorized_outcome_advantage", &algo::compute_rloo_vectorized_outcome_advantage},
        std::pair{"compute_opo_outcome_advantage", &algo::compute_opo_outcome_advantage},
        std::pair{"compute_reinforce_plus_plus_baseline_outcome_advantage",
                  &algo::compute_reinforce_plus_plus_baseline_outcome_advantage}}) {
    algo.def(name, fn, py::arg("token_level_rewards"), py::arg("response_mask"), py::arg("index"), Release());
  }
  algo.def("compute_reinforce_plus_plus_outcome_advantage", &algo::compute_reinforce_plus_plus_outcome_advantage,
           py::arg("token_level_rewards"), py::arg("response_mask"), py::arg("gamma"), Release());
  algo.def("compute_remax_outcome_advantage", &algo::compute_remax_outcome_advantage, py::arg("token_level_rewards"),
           py::arg("reward_baselines"), py::arg("response_mask"), Release());
  algo.def("compute_gpg_outcome_advantage", &algo::compute_gpg_outcome_advantage, py::arg("token_level_rewards"),
           py::arg("response_mask"), py::arg("index"), py::arg("f_norm") = 1.0, Release());

  for (auto [name, fn] : {std::pair{"compute_optimal_token_baseline_advantage",
                                    &algo::compute_optimal_token_baseline_advantage},
                          std::pair{"compute_multi_turn_optimal_token_baseline_advantage",
                                    &algo::compute_multi_turn_optimal_token_baseline_advantage}}) {
    algo.def(name,
             [fn = fn](const torch::Tensor& token_level_rewards, const torch::Tensor& response_mask,
                       const torch::Tensor& index, const torch::Tensor& old_log_probs,
                       const torch::Tensor& sum_pi_squared, std::optional<torch::Tensor> rollout_is_weights,
                       bool handle_zero_tail, double epsilon) {
               return fn(token_level_rewards, response_mask, index, old_log_probs, sum_pi_squared,
                         rollout_is_weights.value_or(torch::Tensor()), handle_zero_tail, epsilon);
             },
             py::arg("token_level_rewards"), py::arg("response_mask"), py::arg("index"), py::arg("old_log_probs"),
             py::arg("sum_pi_squared"), py::arg("rollout_is_weights") = py::none(),
             py::arg("handle_zero_tail") = true, py::arg("epsilon") = 1e-8, Release());
  }
  algo.def("compute_gdpo_outcome_advantage", &algo::compute_gdpo_outcome_advantage, py::arg("component_rewards"),
           py::arg("response_mask"), py::arg("index"), py::arg("epsilon") = 1e-6,
           py::arg("norm_adv_by_std_in_grpo") = true, py::arg("reward_weights") = py::none(), Release());
  algo.def("gdpo_component_rewards", &algo::gdpo_component_rewards, py::arg("scores"), py::arg("attention_mask"),
           py::arg("prompt_length"), py::arg("response_mask"), Release());
  algo.def("pf_ppo_weights", &algo::pf_ppo_weights, py::arg("scores"), py::arg("reweight_method"),
           py::arg("weight_pow") = 2.0, Release());
  algo.def("pf_ppo_sample_indices",
           [](const torch::Tensor& token_level_scores, const std::string& reweight_method, double weight_pow) {
             return algo::pf_ppo_sample_indices(token_level_scores, reweight_method, weight_pow);  // default generator
           },
           py::arg("token_level_scores"),
           py::arg("reweight_method") = "pow", py::arg("weight_pow") = 2.0, Release());

  // Runs whatever is registered under `name` in the C++ registry (built-in or Python), as the
  // C++ trainer will.
  algo.def("run_adv_estimator",
           [](const std::string& name, torch::Tensor token_level_rewards, torch::Tensor response_mask,
              std::optional<torch::Tensor> index, std::optional<torch::Tensor> values,
              std::optional<torch::Tensor> reward_baselines, const py::dict& config) {
             const AdvantageConfig cfg = advantage_config(to_json(config, "config"));
             const AdvantageInputs in{std::move(token_level_rewards), std::move(response_mask),
                                      index.value_or(torch::Tensor()), values.value_or(torch::Tensor()),
                                      reward_baselines.value_or(torch::Tensor())};
             py::gil_scoped_release release;
             return algo::get_adv_estimator_fn(name)(in, cfg);
           },
           py::arg("name"), py::arg("token_level_rewards"), py::arg("response_mask"), py::arg("index") = py::none(),
           py::arg("values") = py::none(), py::arg("reward_baselines") = py::none(), py::arg("config") = py::dict());
  // Registers a Python adapter `fn(token_level_rewards, response_mask, index, values, reward_baselines, config: dict)
  // -> (advantages, returns)` in the C++ registry; `identity` is the user's function (same one again: no-op).
  algo.def("register_adv_est",
           [](const std::string& name, py::object fn, const py::object& identity) {
             auto callable = hold(std::move(fn));
             algo::register_adv_est(
                 name,
                 [callable](const AdvantageInputs& in, const AdvantageConfig& cfg) {
                   py::gil_scoped_acquire gil;
                   py::tuple out = (*callable)(in.token_level_rewards, in.response_mask, tensor_or_none(in.index),
                                               tensor_or_none(in.values), tensor_or_none(in.reward_baselines),
                                               to_python(config_json(cfg)));
                   return std::make_pair(out[0].cast<torch::Tensor>(), out[1].cast<torch::Tensor>());
                 },
                 identity.ptr());
           },
           py::arg("name"), py::arg("fn"), py::arg("identity"));
  algo.def("adv_estimator_names", [] { return algo::adv_estimator_registry().names(); });
}

void register_kl(py::module_& algo) {
  algo.def("kl_penalty", &algo::kl_penalty, py::arg("logprob"), py::arg("ref_logprob"), py::arg("kl_penalty"),
           Release());
  algo.def("kl_penalty_forward", &algo::kl_penalty_forward, py::arg("logprob"), py::arg("ref_logprob"),
           py::arg("kl_penalty"), Release());
  algo.def("compute_rewards", &algo::compute_rewards, py::arg("token_level_scores"), py::arg("old_log_prob"),
           py::arg("ref_log_prob"), py::arg("kl_ratio"), Release());
  py::class_<algo::KLController>(algo, "KLController")
      .def_readwrite("value", &algo::KLController::value)
      .def("update", &algo::KLController::update, py::arg("current_kl"), py::arg("n_steps"));
  py::class_<algo::FixedKLController, algo::KLController>(algo, "FixedKLController",
                                                          "A constant KL coefficient (verl's FixedKLController).")
      .def(py::init<double>(), py::arg("kl_coef"));
  py::class_<algo::AdaptiveKLController, algo::KLController>(
      algo, "AdaptiveKLController", "KL coefficient steered towards target_kl (Ziegler et al.; verl's).")
      .def(py::init<double, double, int64_t>(), py::arg("init_kl_coef"), py::arg("target_kl"), py::arg("horizon"))
      .def_readwrite("target", &algo::AdaptiveKLController::target)
      .def_readwrite("horizon", &algo::AdaptiveKLController::horizon);
  algo.def("get_kl_controller", &algo::get_kl_controller, py::arg("type"), py::arg("kl_coef") = 0.001,
           py::arg("target_kl") = 0.1, py::arg("horizon") = 10000);
}

void register_losses(py::module_& algo) {
  algo.def("agg_loss",
           py::overload_cast<const torch::Tensor&, const torch::Tensor&, const std::string&, int64_t,
                             std::optional<double>, std::optional<double>, std::optional<double>>(&algo::agg_loss),
           py::arg("loss_mat"), py::arg("loss_mask"), py::arg("loss_agg_mode"), py::arg("dp_size") = 1,
           py::arg("batch_num_tokens") = py::none(), py::arg("global_batch_size") = py::none(),
           py::arg("loss_scale_factor") = py::none(), Release());
  // Runs the policy loss registered under `name` (built-in or Python) with a config dict of verl's fields.
  algo.def("run_policy_loss",
           [](const std::string& name, const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
              const torch::Tensor& advantages, const torch::Tensor& response_mask, const std::string& loss_agg_mode,
              const py::dict& config, std::optional<torch::Tensor> rollout_is_weights) {
             const PolicyLossConfig cfg = policy_loss_config(to_json(config, "config"));
             algo::PolicyLossOutput out;
             {
               py::gil_scoped_release release;
               out = algo::get_policy_loss_fn(name)(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                                                    cfg, rollout_is_weights.value_or(torch::Tensor()));
             }
             return py::make_tuple(out.pg_loss, out.metrics);
           },
           py::arg("name"), py::arg("old_log_prob"), py::arg("log_prob"), py::arg("advantages"),
           py::arg("response_mask"), py::arg("loss_agg_mode"), py::arg("config"),
           py::arg("rollout_is_weights") = py::none());
  // Registers a Python adapter `fn(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode, config: dict,
  // rollout_is_weights) -> (loss, metrics)` in the C++ registry.
  algo.def("register_policy_loss",
           [](const std::string& name, py::object fn, const py::object& identity) {
             auto callable = hold(std::move(fn));
             algo::register_policy_loss(
                 name,
                 [callable](const torch::Tensor& old_log_prob, const torch::Tensor& log_prob,
                            const torch::Tensor& advantages, const torch::Tensor& response_mask,
                            const std::string& loss_agg_mode, const PolicyLossConfig& cfg,
                            const torch::Tensor& rollout_is_weights) {
                   py::gil_scoped_acquire gil;
                   py::tuple out = (*callable)(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
                                               to_python(config_json(cfg)), tensor_or_none(rollout_is_weights));
                   algo::PolicyLossOutput result{out[0].cast<torch::Tensor>(), {}};
                   for (auto [k, v] : out[1].cast<py::dict>()) {
                     result.metrics[py::str(k)] = py::float_(py::reinterpret_borrow<py::object>(v)).cast<double>();
                   }
                   return result;
                 },
                 identity.ptr());
           },
           py::arg("name"), py::arg("fn"), py::arg("identity"));
  algo.def("compute_policy_loss_reinforce",
           [](const torch::Tensor& rollout_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
              const torch::Tensor& response_mask, const std::string& loss_agg_mode, const py::dict& config,
              std::optional<torch::Tensor> rollout_is_weights) {
             const PolicyLossConfig cfg = policy_loss_config(to_json(config, "config"));
             algo::PolicyLossOutput out;
             {
               py::gil_scoped_release release;
               out = algo::compute_policy_loss_reinforce(rollout_log_prob, log_prob, advantages, response_mask,
                                                         loss_agg_mode, cfg,
                                                         rollout_is_weights.value_or(torch::Tensor()));
             }
             return py::make_tuple(out.pg_loss, out.metrics);
           },
           py::arg("rollout_log_prob"), py::arg("log_prob"), py::arg("advantages"), py::arg("response_mask"),
           py::arg("loss_agg_mode"), py::arg("config"), py::arg("rollout_is_weights") = py::none());
  // verl's rollout_corr_helper (python/verl/trainer/ppo/rollout_corr_helper.py gives verl's signatures).
  algo.def("compute_rollout_correction_weights",
           [](const torch::Tensor& log_ratio, const torch::Tensor& response_mask, const std::string& rollout_is,
              const std::string& rollout_is_threshold, bool rollout_is_batch_normalize) {
             auto r = algo::compute_rollout_correction_weights(log_ratio, response_mask, rollout_is,
                                                               rollout_is_threshold, rollout_is_batch_normalize);
             return std::make_tuple(r.weights, r.metrics);
           },
           py::arg("log_ratio"), py::arg("response_mask"), py::arg("rollout_is"), py::arg("rollout_is_threshold"),
           py::arg("rollout_is_batch_normalize"), Release());
  algo.def("compute_rollout_rejection_mask",
           [](const torch::Tensor& log_ratio, const torch::Tensor& response_mask, const std::string& rollout_rs,
              const std::string& rollout_rs_threshold) {
             auto r = algo::compute_rollout_rejection_mask(log_ratio, response_mask, rollout_rs, rollout_rs_threshold);
             return std::make_tuple(r.response_mask, r.metrics);
           },
           py::arg("log_ratio"), py::arg("response_mask"), py::arg("rollout_rs"), py::arg("rollout_rs_threshold"),
           Release());
  algo.def("compute_offpolicy_metrics",
           [](const torch::Tensor& old_log_prob, std::optional<torch::Tensor> rollout_log_prob,
              const torch::Tensor& response_mask) {
             py::gil_scoped_release release;
             return algo::compute_offpolicy_metrics(old_log_prob, rollout_log_prob.value_or(torch::Tensor()),
                                                    response_mask);
           },
           py::arg("old_log_prob"), py::arg("rollout_log_prob"), py::arg("response_mask"));
  algo.def("compute_rollout_correction_and_rejection_mask",
           [](const torch::Tensor& old_log_prob, const torch::Tensor& rollout_log_prob,
              const torch::Tensor& response_mask, const py::dict& config) {
             const algo::RolloutCorrectionConfig cfg = rollout_correction_config(to_json(config, "config"));
             py::gil_scoped_release release;
             auto r = algo::compute_rollout_correction_and_rejection_mask(old_log_prob, rollout_log_prob,
                                                                          response_mask, cfg);
             return std::make_tuple(r.rollout_is_weights.defined() ? std::optional<torch::Tensor>(r.rollout_is_weights)
                                                                   : std::nullopt,
                                    r.response_mask, r.metrics);
           },
           py::arg("old_log_prob"), py::arg("rollout_log_prob"), py::arg("response_mask"), py::arg("config"));
  algo.def("policy_loss_names", [] { return algo::policy_loss_registry().names(); });
  algo.def("compute_policy_loss",
           [](const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
              const torch::Tensor& response_mask, std::optional<double> cliprange, std::optional<double> cliprange_low,
              std::optional<double> cliprange_high, double clip_ratio_c, const std::string& loss_agg_mode) {
             auto r = algo::compute_policy_loss(old_log_prob, log_prob, advantages, response_mask, cliprange,
                                                cliprange_low, cliprange_high, clip_ratio_c, loss_agg_mode);
             return std::make_tuple(r.pg_loss, r.pg_clipfrac, r.ppo_kl, r.pg_clipfrac_lower);
           },
           py::arg("old_log_prob"), py::arg("log_prob"), py::arg("advantages"), py::arg("response_mask"),
           py::arg("cliprange") = py::none(), py::arg("cliprange_low") = py::none(),
           py::arg("cliprange_high") = py::none(), py::arg("clip_ratio_c") = 3.0,
           py::arg("loss_agg_mode") = "token-mean", Release());
  algo.def("compute_value_loss",
           [](const torch::Tensor& vpreds, const torch::Tensor& returns, const torch::Tensor& values,
              const torch::Tensor& response_mask, double cliprange_value, const std::string& loss_agg_mode,
              int64_t dp_size, std::optional<double> batch_num_tokens, std::optional<double> global_batch_size,
              std::optional<double> loss_scale_factor) {
             auto r = algo::compute_value_loss(vpreds, returns, values, response_mask, cliprange_value, loss_agg_mode,
                                               dp_size, batch_num_tokens, global_batch_size, loss_scale_factor);
             return std::make_pair(r.vf_loss, r.vf_clipfrac);
           },
           py::arg("vpreds"), py::arg("returns"), py::arg("values"), py::arg("response_mask"),
           py::arg("cliprange_value"), py::arg("loss_agg_mode") = "token-mean", py::arg("dp_size") = 1,
           py::arg("batch_num_tokens") = py::none(), py::arg("global_batch_size") = py::none(),
           py::arg("loss_scale_factor") = py::none(), Release());
  algo.def("compute_entropy_loss", &algo::compute_entropy_loss, py::arg("logits"), py::arg("response_mask"),
           py::arg("loss_agg_mode") = "token-mean", Release());
}

}  // namespace

void register_algo(py::module_& m) {
  py::module_ algo = m.def_submodule("algo", "RL math: masked statistics, advantages, KL, losses.");
  register_functional(algo);
  register_advantages(algo);
  register_kl(algo);
  register_losses(algo);
}

}  // namespace verl::bindings
