// verl._C.trainer: the C++ PPO trainer (verl/trainer/ppo_trainer.h), its metric functions, DAPO's group
// filter (verl/trainer/group_filter.h) and the C++ generate_sequences. python/verl/trainer/ppo_trainer.py
// drives it with datasets, reward managers, tracking and checkpoints. step() runs without the GIL; the Python
// reward callback takes it back.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bindings.h"
#include "json_cast.h"
#include "verl/core/config.h"
#include "verl/dist/device_mesh.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/rollout/engine.h"
#include "verl/trainer/batch_defaults.h"
#include "verl/trainer/generation.h"
#include "verl/trainer/group_filter.h"
#include "verl/trainer/metrics.h"
#include "verl/trainer/ppo_trainer.h"

namespace verl::bindings {
namespace {

using trainer::PPOTrainer;
using trainer::RewardOutput;
using Release = py::call_guard<py::gil_scoped_release>;

// A Python reward callable f(batch: verl._C.DataProto) returning token_level_scores (a tensor), a tuple
// (tensor, {key: per-sample list}) or verl's dict {"reward_tensor": ..., "reward_extra_info": {...}}.
// Its exceptions reach the caller of step() unchanged.
// A Python callable shared by C++ callbacks: released with the GIL held, whichever thread drops the last reference.
std::shared_ptr<py::function> hold_with_gil(py::function fn) {
  return std::shared_ptr<py::function>(new py::function(std::move(fn)), [](py::function* p) {
    py::gil_scoped_acquire gil;
    delete p;
  });
}

// Deletes a trainer without the GIL: a rollout batch still in flight (submit_rollouts) finishes first, and its
// thread may need the GIL for the reward callback.
struct DeleteWithoutGil {
  void operator()(PPOTrainer* trainer) const {
    if (PyGILState_Check() == 0) {
      delete trainer;
      return;
    }
    py::gil_scoped_release release;
    delete trainer;
  }
};
using TrainerHolder = std::unique_ptr<PPOTrainer, DeleteWithoutGil>;

trainer::RewardFn wrap_reward(py::function fn) {
  std::shared_ptr<py::function> holder = hold_with_gil(std::move(fn));
  return [holder](const DataProto& batch) -> RewardOutput {
    py::gil_scoped_acquire gil;
    py::object result = (*holder)(batch);
    py::object scores = result;
    py::object extra = py::none();
    if (py::isinstance<py::tuple>(result)) {
      auto tup = result.cast<py::tuple>();
      VERL_CHECK_AS(TypeMismatch, tup.size() == 2, "reward callback returned a tuple of ", tup.size(),
                    " items; expected (token_level_scores, reward_extra_info)");
      scores = tup[0];
      extra = tup[1];
    } else if (py::isinstance<py::dict>(result)) {
      auto d = result.cast<py::dict>();
      VERL_CHECK_AS(TypeMismatch, d.contains("reward_tensor"), "reward callback returned a dict without 'reward_tensor'");
      scores = d["reward_tensor"];
      if (d.contains("reward_extra_info")) extra = d["reward_extra_info"];
    }
    VERL_CHECK_AS(TypeMismatch, py::isinstance(scores, py::module_::import("torch").attr("Tensor")),
                  "reward callback returned ",
                  std::string(py::str(scores.get_type().attr("__name__"))),
                  " for token_level_scores; expected a torch.Tensor (bs, response_length)");
    RewardOutput out;
    out.token_level_scores = scores.cast<torch::Tensor>();
    if (!extra.is_none()) {
      VERL_CHECK_AS(TypeMismatch, py::isinstance<py::dict>(extra), "reward_extra_info must be a dict of per-sample lists");
      for (auto item : extra.cast<py::dict>()) {
        const std::string key = py::str(item.first);
        std::vector<Json> column;
        for (auto v : py::iter(item.second)) column.push_back(to_json(v, "reward_extra_info['" + key + "']"));
        out.extra_info[key] = std::move(column);
      }
    }
    return out;
  };
}

// A Python rollout f(rows: verl._C.DataProto, params: SamplingParams, seed: int) -> verl._C.DataProto (see
// trainer::RolloutFn); its exceptions reach the caller of step() unchanged.
trainer::RolloutFn wrap_rollout(py::function fn) {
  std::shared_ptr<py::function> holder = hold_with_gil(std::move(fn));
  return [holder](const DataProto& rows, const rollout::SamplingParams& params, int64_t seed) -> DataProto {
    py::gil_scoped_acquire gil;
    py::object result = (*holder)(rows, params, seed);
    VERL_CHECK_AS(TypeMismatch, py::isinstance<DataProto>(result), "rollout_fn returned ",
                  std::string(py::str(result.get_type().attr("__name__"))), "; expected a verl._C.DataProto");
    return result.cast<DataProto>();
  };
}

py::dict settings_dict(const trainer::PPOTrainerConfig& s) {
  py::dict d;
  d["adv_estimator"] = s.adv_estimator;
  d["use_critic"] = s.use_critic;
  d["use_reference"] = s.use_reference;
  d["use_kl_in_reward"] = s.use_kl_in_reward;
  d["use_kl_loss"] = s.use_kl_loss;
  d["rollout_n"] = s.rollout_n;
  d["response_length"] = s.response_length;
  d["prompt_length"] = s.prompt_length;
  d["val_n"] = s.val_n;
  d["critic_warmup"] = s.critic_warmup;
  d["balance_batch"] = s.balance_batch;
  return d;
}

}  // namespace

void register_trainer(py::module_& m) {
  py::module_ t = m.def_submodule("trainer", "verl::trainer: the PPO-family training step and its metrics");

  t.def(
      "fill_batch_defaults",
      [](Config& config, std::optional<int64_t> dataset_size) {
        py::list out;
        for (const trainer::BatchDefault& d : trainer::fill_batch_defaults(config, dataset_size))
          out.append(py::make_tuple(d.key, d.value, d.why));
        return out;
      },
      py::arg("config"), py::arg("dataset_size") = py::none(),
      "Settles the batch sizes a user need not set (verl/trainer/batch_defaults.h) in place: [(key, value, why)].");
  t.def("compute_data_metrics", &trainer::compute_data_metrics, py::arg("batch"), py::arg("use_critic") = true,
        Release());
  t.def("compute_timing_metrics", &trainer::compute_timing_metrics, py::arg("batch"), py::arg("timing_raw"),
        Release());
  t.def("compute_throughout_metrics", &trainer::compute_throughout_metrics, py::arg("batch"), py::arg("timing_raw"),
        py::arg("n_gpus") = 1, Release());
  t.def("compute_rollout_debug_metrics", &trainer::compute_rollout_debug_metrics, py::arg("batch"), Release());
  t.def(
      "generate_sequences",
      [](rollout::Engine& engine, const DataProto& prompts, const rollout::SamplingParams& params,
         int64_t pad_token_id, std::optional<int64_t> seed) {
        return trainer::generate_sequences(engine, prompts, params, pad_token_id, seed);
      },
      py::arg("engine"), py::arg("prompts"),
        py::arg("sampling_params"), py::arg("pad_token_id") = 0, py::arg("seed") = py::none(), Release(),
        "verl's generate_sequences on a rollout Engine (verl.rollout.LLM.generate_sequences runs it).");
  t.def(
      "generation_layout",
      [](const std::vector<std::vector<int64_t>>& prompts, const std::vector<std::vector<int64_t>>& responses,
         const std::vector<std::vector<int64_t>>& response_masks, const std::vector<std::vector<double>>& log_probs,
         int64_t prompt_length, int64_t response_length, int64_t pad_token_id) {
        VERL_CHECK_AS(DataError, prompts.size() == responses.size(), "generation_layout: ", prompts.size(),
                      " prompts for ", responses.size(), " responses");
        auto [input_ids, attention_mask] = trainer::left_pad_prompts(prompts, prompt_length, pad_token_id);
        return trainer::generation_layout(
            input_ids, attention_mask, torch::Tensor(),
            trainer::pad_responses(responses, response_masks, log_probs, response_length, pad_token_id));
      },
      py::arg("prompts"), py::arg("responses"), py::arg("response_masks"), py::arg("log_probs"),
      py::arg("prompt_length"), py::arg("response_length"), py::arg("pad_token_id"), Release(),
      "verl's rollout layout (verl/trainer/generation.h) from per-row token lists: prompts left-padded to "
      "prompt_length, responses right-padded to response_length (response_masks / log_probs: [] or one list per row; "
      "an empty row of log_probs is zeros). Returns {prompts, responses, input_ids, attention_mask, position_ids, "
      "response_mask, rollout_log_probs}.");
  t.def(
      "varying_group_rows",
      [](const std::vector<std::string>& uids, const std::vector<double>& values) {
        return trainer::varying_group_rows(uids, values);
      },
      py::arg("uids"), py::arg("values"),
      "DAPO: the rows of the groups (uids) whose values vary (numpy's std > 0) or that have one row, in order.");
  py::class_<trainer::GroupFilter>(t, "GroupFilter",
                                   "DAPO's dynamic sampling (algorithm.filter_groups), verl/trainer/group_filter.h.")
      .def(py::init([](const Config& config) {
             return trainer::GroupFilter(trainer::GroupFilterConfig::from_config(config));
           }),
           py::arg("config"))
      .def("add", &trainer::GroupFilter::add, py::arg("batch"), Release())
      .def_property_readonly("ready", &trainer::GroupFilter::ready)
      .def_property_readonly("num_gen_batches", &trainer::GroupFilter::num_gen_batches)
      .def_property_readonly("num_prompts", &trainer::GroupFilter::num_prompts)
      .def("take", &trainer::GroupFilter::take, Release())
      .def("reset", &trainer::GroupFilter::reset);

  py::class_<PPOTrainer, TrainerHolder>(t, "PPOTrainer", "verl's PPO/GRPO/... training step in C++ on a shared actor/rollout model.")
      .def(py::init([](const Config& config, std::shared_ptr<model::CausalLM> actor, py::function reward_fn,
                       std::shared_ptr<model::CausalLM> ref, std::shared_ptr<model::CausalLM> critic,
                       std::shared_ptr<rollout::Engine> engine, std::optional<int64_t> pad_token_id,
                       std::vector<int64_t> eos_token_ids, std::optional<int64_t> total_training_steps,
                       uint64_t init_seed, std::optional<dist::DeviceMesh> mesh, py::object cost_fn,
                       std::shared_ptr<model::CausalLM> cost_critic, py::object rollout_fn, bool reward_per_sample) {
             trainer::PPOTrainerModels models{std::move(actor), std::move(ref), std::move(critic), std::move(engine)};
             trainer::PPOTrainerOptions options;
             options.pad_token_id = pad_token_id;
             options.eos_token_ids = std::move(eos_token_ids);
             options.total_training_steps = total_training_steps;
             options.init_seed = init_seed;
             if (mesh) options.mesh = std::move(*mesh);
             if (!cost_fn.is_none()) options.cost_fn = wrap_reward(cost_fn.cast<py::function>());
             models.cost_critic = std::move(cost_critic);
             if (!rollout_fn.is_none()) options.rollout_fn = wrap_rollout(rollout_fn.cast<py::function>());
             options.reward_per_sample = reward_per_sample;
             trainer::RewardFn fn = wrap_reward(std::move(reward_fn));
             py::gil_scoped_release release;
             return TrainerHolder(new PPOTrainer(config, std::move(models), std::move(fn), options));
           }),
           py::arg("config"), py::arg("actor"), py::arg("reward_fn"), py::kw_only(), py::arg("ref") = nullptr,
           py::arg("critic") = nullptr, py::arg("engine") = nullptr, py::arg("pad_token_id") = py::none(),
           py::arg("eos_token_ids") = std::vector<int64_t>{}, py::arg("total_training_steps") = py::none(),
           py::arg("init_seed") = 0, py::arg("mesh") = py::none(), py::arg("cost_fn") = py::none(),
           py::arg("cost_critic") = nullptr, py::arg("rollout_fn") = py::none(), py::arg("reward_per_sample") = false)
      .def("step", &PPOTrainer::step, py::arg("prompts"), Release())
      .def_property_readonly("is_controller", &PPOTrainer::is_controller)
      .def_property_readonly("world_size", &PPOTrainer::world_size)
      .def_property_readonly("is_rollout_pool_rank", &PPOTrainer::is_rollout_pool_rank)
      .def("serve", &PPOTrainer::serve, Release(),
           "Workers (rank > 0): run the controller's dispatched work until it calls release_workers().")
      .def("release_workers", &PPOTrainer::release_workers, Release(),
           "Controller (rank 0): end the workers' serve().")
      .def("collect_rollouts", &PPOTrainer::collect_rollouts, py::arg("prompts"), Release())
      .def("compute_rewards", &PPOTrainer::compute_rewards, py::arg("batch"), Release())
      .def("optimize", &PPOTrainer::optimize, py::arg("batch"), Release())
      .def("generate_validation", &PPOTrainer::generate_validation, py::arg("prompts"), Release())
      .def("submit_rollouts", &PPOTrainer::submit_rollouts, py::arg("prompts"), Release(),
           "actor_rollout_ref.hybrid_engine=false: hand the actor's weights to the rollout engine and generate + "
           "score `prompts` on a thread while the caller trains (one batch in flight).")
      .def("wait_rollouts", &PPOTrainer::wait_rollouts, Release(), "The submitted batch, generated and scored.")
      .def_property_readonly("rollouts_in_flight", &PPOTrainer::rollouts_in_flight)
      .def("discard_rollouts", &PPOTrainer::discard_rollouts, Release(),
           "Drops the batch in flight and the waited, unoptimized ones: the next submission is the next step's.")
      .def_property_readonly("last_batch", &PPOTrainer::last_batch)
      .def_property("global_step", &PPOTrainer::global_step, &PPOTrainer::set_global_step)
      .def_property("kl_coef", &PPOTrainer::kl_coef, &PPOTrainer::set_kl_coef)
      .def_property("safe_rlhf_lambda", &PPOTrainer::safe_rlhf_lambda, &PPOTrainer::set_safe_rlhf_lambda)
      .def_property_readonly("settings", [](const PPOTrainer& p) { return settings_dict(p.settings()); })
      .def_property_readonly("config", &PPOTrainer::config)
      .def_property_readonly("pad_token_id", &PPOTrainer::pad_token_id)
      .def_property_readonly("actor_model", [](const PPOTrainer& p) { return p.models().actor; })
      .def_property_readonly("ref_model", [](const PPOTrainer& p) { return p.models().ref; })
      .def_property_readonly("critic_model", [](const PPOTrainer& p) { return p.models().critic; })
      .def_property_readonly("cost_critic_model", [](const PPOTrainer& p) { return p.models().cost_critic; })
      .def_property_readonly("engine", [](const PPOTrainer& p) { return p.models().engine; })
      .def(
          "save_optimizer",
          [](PPOTrainer& p, const std::string& role, const std::string& path) {
            py::gil_scoped_release release;
            p.save_optimizer(role, path);
          },
          py::arg("role"), py::arg("path"), "Writes the 'actor' or 'critic' optimizer + scheduler state (atomic).")
      .def(
          "load_optimizer",
          [](PPOTrainer& p, const std::string& role, const std::string& path) {
            workers::Optimizer& optimizer = p.optimizer(role);
            py::gil_scoped_release release;
            optimizer.load(path);
          },
          py::arg("role"), py::arg("path"), "Restores an optimizer + scheduler state written by save_optimizer.")
      .def(
          "model_for_checkpoint",
          [](PPOTrainer& p, const std::string& role) {
            py::gil_scoped_release release;
            return p.model_for_checkpoint(role);
          },
          py::arg("role"),
          "The whole 'actor' / 'critic' / 'cost_critic' model to write a checkpoint from: the model itself in one "
          "process; over several ranks a module gathered from the ZeRO-3 shards on the controller (None elsewhere).")
      .def(
          "load_model_state",
          [](PPOTrainer& p, const std::string& role, const std::map<std::string, torch::Tensor>& state) {
            py::gil_scoped_release release;
            p.load_model_state(role, state);
          },
          py::arg("role"), py::arg("state_dict"),
          "The role's model takes the whole weights (strict HF names); over several ranks each rank keeps its shard.")
      .def("model_sharded", &PPOTrainer::model_sharded, py::arg("role"),
           "Whether the role's model is ZeRO-3 sharded (several ranks): its checkpoints are per-rank files.")
      .def(
          "save_model_shards",
          [](PPOTrainer& p, const std::string& role, const std::string& dir,
             const std::optional<std::string>& tokenizer_dir) {
            py::gil_scoped_release release;
            p.save_model_shards(role, dir, tokenizer_dir);
          },
          py::arg("role"), py::arg("dir"), py::arg("tokenizer_dir") = py::none(),
          "Controller: writes the role's sharded checkpoint directory (config, tokenizer files, every rank's "
          "model_world_size_N_rank_r / optim_world_size_N_rank_r files).")
      .def(
          "load_model_shards",
          [](PPOTrainer& p, const std::string& role, const std::string& dir) {
            py::gil_scoped_release release;
            p.load_model_shards(role, dir);
          },
          py::arg("role"), py::arg("dir"),
          "Every rank: the role's model and optimizer from a sharded checkpoint directory written at any N.")
      .def("model_weight_bytes", &PPOTrainer::model_weight_bytes, py::arg("role"),
           "Bytes of the role's weights this rank holds (its ZeRO-3 shards over several ranks).")
      .def(
          "optimizer_state_bytes", [](PPOTrainer& p, const std::string& role) { return p.optimizer(role).state_bytes(); },
          py::arg("role"), "Bytes of AdamW state this rank holds for 'actor' or 'critic' (1/N of it when sharded).");
}

}  // namespace verl::bindings
