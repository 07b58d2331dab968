// verl::trainer::PPOTrainer: one PPO-family training step in C++, in the order of verl 0.9.1's
// RayPPOTrainer.fit (verl/trainer/ppo/ray_trainer.py) with its config keys and metric names.
//
//   prompts --collect_rollouts--> uid per prompt, repeat rollout.n (interleaved), generate (+ the greedy
//           baseline for remax), union, balance_batch
//           --compute_rewards--> token_level_scores (bs, response_length) from the reward callback
//           --optimize--> old_log_probs (+ actor/entropy), ref_log_prob, values, KL-in-reward or
//           token_level_rewards = scores, advantages/returns (algorithm.adv_estimator registry),
//           update_critic, update_actor (after trainer.critic_warmup), weight hand-over, metrics
//
// The rollout engine runs on the actor's CausalLM object itself (no weight copy): the hand-over is a
// no-op and the rollout's log-probs are the trainer's (training/rollout_probs_diff_* stay ~0). With
// actor_rollout_ref.hybrid_engine=false (verl's one-step off-policy trainer) it holds a copy of its own, so the
// next batch can be generated while this one trains (submit_rollouts / wait_rollouts). A
// reference model (only when actor.use_kl_loss or algorithm.use_kl_in_reward) and a critic (critic.enable,
// or adv_estimator gae when critic.enable is null) are created from the actor when not given.
//
// Prompt batches: input_ids, attention_mask (bs, max_prompt_length) left-padded, position_ids optional;
// non-tensor columns (data_source, reward_model, extra_info, ...) pass through to the reward callback;
// meta_info "epoch" (int) is reported as training/epoch.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/algo/advantage.h"
#include "verl/algo/kl.h"
#include "verl/algo/pf_ppo.h"
#include "verl/algo/safe_rlhf.h"
#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/core/json.h"
#include "verl/data/data_proto.h"
#include "verl/dist/device_mesh.h"
#include "verl/dist/worker_group.h"
#include "verl/model/transformer.h"
#include "verl/rollout/engine.h"
#include "verl/trainer/generation.h"
#include "verl/trainer/metrics.h"
#include "verl/workers/actor.h"
#include "verl/workers/critic.h"

namespace verl::hybrid {
class WeightHandOver;  // hybrid/weight_hand_over.h (private to libverl)
}  // namespace verl::hybrid

namespace verl::trainer {

// What a reward callback returns for a rollout batch of bs rows.
struct VERL_API RewardOutput {
  torch::Tensor token_level_scores;  // (bs, response_length) float: the score of each token (verl puts a
                                     // sequence's score on its last response token)
  std::map<std::string, std::vector<Json>> extra_info;  // reward_extra_info: per-sample columns, bs entries each
};

// Scores the generated batch (prompts, responses, attention_mask, response_mask, ... and the prompt
// batch's non-tensor columns). Exceptions propagate out of step() unchanged.
using RewardFn = std::function<RewardOutput(const DataProto& batch)>;

// A rollout that generates a batch itself in place of the engine's one-shot generate_sequences: verl's agent loops
// (multi-turn conversations with tool calls; verl.PPOTrainer passes verl.experimental.agent_loop over an asyncio
// front of this trainer's engine). Called on the controller, the engine awake with the actor's current weights,
// with the rows to generate for -- input_ids / attention_mask / position_ids and the rows' non-tensor columns
// (raw_prompt, agent_name, tools_kwargs, extra_info, ...), already repeated rollout.n times --, the mode's sampling
// parameters (n = 1, max_tokens = rollout.response_length) and a seed (row i samples with seed + i). Returns verl's
// generation layout, one row per input row: prompts (bs, prompt width), responses / response_mask (0 on tool
// tokens) / rollout_log_probs (bs, response_length), input_ids / attention_mask / position_ids (bs, prompt width +
// response_length), and any new non-tensor columns (__num_turns__, the loops' extra fields).
using RolloutFn =
    std::function<DataProto(const DataProto& rows, const rollout::SamplingParams& params, int64_t seed)>;

// The models a trainer works on. Only `actor` is required.
struct VERL_API PPOTrainerModels {
  std::shared_ptr<model::CausalLM> actor;   // LM head; trained in place; the rollout engine generates with it
  std::shared_ptr<model::CausalLM> ref;     // LM head; frozen. Default: a copy of the actor's initial weights
  std::shared_ptr<model::CausalLM> critic;  // value head. Default: the actor's backbone + a new value head
  std::shared_ptr<rollout::Engine> engine;  // default: an Engine on `actor` sized from actor_rollout_ref.rollout
  // value head; Safe-RLHF's cost critic (algorithm.safe_rlhf.enable with a critic). Default: made as the critic is
  std::shared_ptr<model::CausalLM> cost_critic;
};

struct VERL_API PPOTrainerOptions {
  std::optional<int64_t> pad_token_id;  // response padding; default: the model config's pad id, else 0
  std::vector<int64_t> eos_token_ids;   // stop ids for a default engine; empty: the model config's eos ids
  // Sets actor_rollout_ref.actor.optim.total_training_steps and critic.optim.total_training_steps
  // (verl's trainer does this from the dataloader length) for warmup ratios and cosine schedules.
  std::optional<int64_t> total_training_steps;
  uint64_t init_seed = 0;  // seeds the default critic's new value head
  // Several processes (torchrun): this rank's process groups of the job's layout (verl/dist/device_mesh.h: the plan
  // of trainer.nnodes x trainer.n_gpus_per_node, the rollout's tensor parallelism, HSDP, a rollout pool). Every rank
  // builds the trainer with the same config and models and its own groups of dist::plan_mesh(config); the trainer
  // checks them against that plan (a ConfigError names the key and the group). Rank 0 of mesh.trainer is the
  // controller -- it runs step() and the other stages, the reward callback included, and dispatches generation, the
  // log-prob/value passes and the updates to every rank by rows (data parallel: the same step as one process on the
  // whole batch); the others call serve(). With a rollout pool (one-step off-policy, hybrid_engine=false) the pool's
  // ranks generate while the trainer's train: the controller dispatches generation over mesh.rollout_pool and, once
  // per submit_rollouts, broadcasts the actor's compute weights to it a unit at a time (gathered from the trainer
  // ranks' ZeRO-3 shards unit by unit, so no rank holds a second whole copy); a pool rank trains nothing, builds the
  // engine and serve()s the pool. Empty: one process.
  dist::DeviceMesh mesh;
  // Safe-RLHF's cost callback, the reward callback's form (the cost on each token, a sequence's on its last):
  // required exactly when algorithm.safe_rlhf.enable (ConfigError otherwise).
  RewardFn cost_fn;
  // Generation through agent loops: required exactly when actor_rollout_ref.rollout.multi_turn.enable (ConfigError
  // otherwise); then every generation -- training, ReMax's greedy baseline, validation -- goes through it, on the
  // controller (not with rollout.tensor_model_parallel_size > 1: one rank's engine holds a shard). Without it, rows
  // whose agent_name column asks for a loop other than single_turn_agent are a DataError.
  RolloutFn rollout_fn;
  // The reward callback scores every row on its own (verl's per-sample reward managers), so it may be given any
  // rows: step() and submit_rollouts then score each prompt's samples as soon as they finish, while the engine
  // still decodes the others (verl's reward loop) -- in one process, without agent loops or a Safe-RLHF cost.
  // false: the callback gets the whole batch after generation (a batched function, a reward model).
  bool reward_per_sample = false;
};

// The algorithm.* / trainer.* / rollout settings the step reads, from a verl::Config.
struct VERL_API PPOTrainerConfig {
  std::string adv_estimator = "gae";
  // algorithm.gamma, lam, norm_adv_by_std_in_grpo, sppo_eta, +gdpo_reward_keys / gdpo_reward_weights: what the
  // estimators read (algo::advantage_config, which holds every estimator's rule).
  algo::AdvantageConfig advantage;
  bool use_kl_in_reward = false;
  std::string kl_penalty = "kl";
  std::string kl_ctrl_type = "fixed";
  double kl_coef = 0.001;
  double target_kl = 0.1;
  int64_t kl_horizon = 10000;
  // algorithm.rollout_correction. Decoupled mode: IS weights / rejection of the recomputed old_log_probs
  // against the rollout's log-probs, applied before the advantage. bypass_mode: the rollout's log-probs are
  // old_log_probs (no recompute) and the actor's "bypass_mode" loss applies the correction.
  algo::RolloutCorrectionConfig rollout_correction;
  // algorithm.use_pf_ppo / pf_ppo.*: the batch resampled by reward after GAE (verl applies it to gae only).
  algo::PfPpoConfig pf_ppo;
  // algorithm.safe_rlhf (PPO-Lagrangian, verl/algo/safe_rlhf.h): the advantage is (A_r - lambda A_c) / (1 + lambda),
  // A_c the same estimator's advantage of the cost (with the cost critic's values for gae), lambda updated each
  // step from the batch's mean sequence cost before the advantage is formed.
  algo::SafeRlhfConfig safe_rlhf;
  bool use_kl_loss = false;
  bool use_critic = false;     // need_critic(config)
  bool use_reference = false;  // need_reference_policy(config)
  bool balance_batch = true;
  int64_t critic_warmup = 0;
  int64_t n_gpus = 1;  // the job's devices, one per rank (perf/throughput divides by it)
  // actor_rollout_ref.actor: the entropy metric's aggregation
  std::string loss_agg_mode = "token-mean";
  std::optional<double> loss_scale_factor;
  // actor_rollout_ref.actor.calculate_sum_pi_squared: the old-log-prob pass also gives sum_pi_squared
  // (the Optimal Token Baseline estimators' input; they require it)
  bool calculate_sum_pi_squared = false;
  // actor_rollout_ref.actor.old_log_prob_from_update (verl-cpp's addition): the old-log-prob pass is skipped when
  // the actor update's own first forward gives old_log_probs bit for bit
  // (workers::ActorWorker::old_log_prob_from_update_is_exact) and no stage reads them before the update; they, the
  // entropy and the rollout-vs-trainer metrics then come from the update.
  bool old_log_prob_from_update = true;
  // actor_rollout_ref.rollout
  int64_t rollout_n = 1;
  int64_t rollout_tensor_parallel_size = 1;  // tensor_model_parallel_size
  double temperature = 1.0;
  double top_p = 1.0;
  int64_t top_k = -1;
  bool do_sample = true;
  int64_t response_length = 512;
  int64_t prompt_length = 512;
  bool ignore_eos = false;
  int64_t rollout_seed = 42;
  bool free_cache_engine = true;
  // actor_rollout_ref.hybrid_engine. false: verl's one-step off-policy trainer (verl/experimental/
  // one_step_off_policy): the rollout engine generates from a copy of the weights of its own, handed over from the
  // actor once per submit_rollouts, so generation can overlap the update. In one process (a thread of it), or over
  // a rollout pool of ranks of its own (PPOTrainerOptions::mesh.rollout_pool).
  bool hybrid_engine = true;
  // rollout.nnodes x rollout.n_gpus_per_node (one-step off-policy): the ranks of the rollout pool; 0: none.
  int64_t rollout_pool_ranks = 0;
  // actor_rollout_ref.rollout.val_kwargs
  int64_t val_n = 1;
  double val_temperature = 0.0;
  double val_top_p = 1.0;
  int64_t val_top_k = -1;
  bool val_do_sample = false;

  // ConfigError naming the key for an unknown adv_estimator, kl_penalty or kl_ctrl.type, or bad values.
  static PPOTrainerConfig from_config(const Config& config);
};

class VERL_API PPOTrainer {
 public:
  PPOTrainer(Config config, PPOTrainerModels models, RewardFn reward_fn, PPOTrainerOptions options = {});
  ~PPOTrainer();

  // One full step; returns verl's metrics (timing_s/*, actor/*, critic/*, response_length/*,
  // prompt_length/*, perf/*, training/global_step, training/epoch, ...) and advances global_step().
  Metrics step(const DataProto& prompts);

  // The stages of step(), for callers that want to look between them. Stage times accumulate in
  // meta_info["timing_s"]; optimize() returns the step's metrics (timing_s/step = the stages' sum) and
  // advances global_step().
  // uid per prompt row ("step<N>.<k>-<row>" for the k-th generation batch of step N; DAPO's dynamic
  // sampling gathers several before one optimize), repeat rollout.n interleaved, generate, union, response_mask, balance_batch
  // (reward_baselines for remax). Prompt rows keep their non-tensor columns.
  DataProto collect_rollouts(const DataProto& prompts);
  // token_level_scores (and the reward's extra columns) from the callback. DataError naming the sample
  // for a wrong shape or a non-finite score.
  DataProto compute_rewards(DataProto batch);
  // old_log_prob, ref, values, advantage, critic and actor updates, hand-over; the metrics.
  Metrics optimize(DataProto batch);

  // Validation generation: val_kwargs (n, temperature, top_p, top_k, do_sample; greedy by default),
  // then the reward. Returns the batch (prompts, responses, ..., token_level_scores, the reward's extra
  // columns, named in meta_info["reward_extra_keys"]) with one row per sample (prompt rows repeated val_kwargs.n
  // times, interleaved).
  DataProto generate_validation(const DataProto& prompts);

  // One-step off-policy (actor_rollout_ref.hybrid_engine=false; verl/experimental/one_step_off_policy): generation
  // of the next batch overlaps the update on this one. submit_rollouts hands the actor's current weights to the
  // rollout engine's own copy (timed as the next optimize's timing_s/sync_rollout_weights) and runs collect_rollouts
  // and compute_rewards of `prompts` on a thread of its own; wait_rollouts returns that scored batch, or rethrows
  // what the thread threw. verl's loop -- batch = wait_rollouts(); submit_rollouts(next prompts); optimize(batch) --
  // samples batch N+1 from the weights after step N-1 while step N trains: one step stale, which
  // algorithm.rollout_correction corrects (bypass_mode: the rollout's log-probs are the old policy). The waited
  // batch's timing_s: gen = the wait, generate_async / reward_async = the thread's stages (not in timing_s/step).
  // One batch in flight at a time; meanwhile optimize, compute_rewards and the accessors may run, and
  // collect_rollouts, step, generate_validation and set_global_step raise InvalidArgument. ConfigError with
  // hybrid_engine=true (the engine generates from the weights being trained); InvalidArgument when a batch is in
  // flight (submit) or none is (wait).
  void submit_rollouts(const DataProto& prompts);
  DataProto wait_rollouts();
  bool rollouts_in_flight() const { return rollout_in_flight_; }
  // Starts verl's loop afresh: the batch in flight finishes and is dropped (its error too), and batches waited for
  // but not optimized are forgotten -- the next submission is the next step's (a loop that failed midway).
  void discard_rollouts();

  // The batch of the last completed step (after optimize), for inspection and rollout dumps.
  const DataProto& last_batch() const { return last_batch_; }

  int64_t global_step() const { return global_step_; }  // completed steps
  void set_global_step(int64_t step);                    // resume
  double kl_coef() const;                                // the in-reward KL controller's value
  void set_kl_coef(double value);                        // resume of an adaptive controller
  // Safe-RLHF's Lagrange multiplier (lambda_init before the first step); set_ for a resume (>= 0, finite).
  double safe_rlhf_lambda() const { return safe_rlhf_lambda_; }
  void set_safe_rlhf_lambda(double value);

  // Multi-process jobs (PPOTrainerOptions::mesh.trainer). Rank 0 is the controller; the others call serve(), which
  // runs the controller's dispatched work until it calls release_workers() (both no-ops in one process).
  bool is_controller() const { return !pool_rank_ && workers_->is_controller(); }
  // The "actor", "critic" or "cost_critic" optimizer of this rank (InvalidArgument for another role or a missing
  // critic).
  workers::Optimizer& optimizer(const std::string& role);
  // Writes that optimizer's state to `path` (atomic) in the one-process layout. Several ranks: the controller
  // dispatches it, every rank's slice of the sharded state gathers to rank 0, which writes the file.
  void save_optimizer(const std::string& role, const std::string& path);
  // The whole weights of the "actor", "critic" or "cost_critic" model, to write a checkpoint from: the model itself
  // in one process; over several ranks (ZeRO-3 shards) a new module in the master dtype on the controller, gathered
  // from every rank's shards (the controller dispatches the gather; null on the other ranks).
  std::shared_ptr<model::CausalLM> model_for_checkpoint(const std::string& role);
  // This rank's `role` model takes the whole weights `state` (CausalLM::load_state_dict's names and checks, strict);
  // over several ranks each keeps its shard, so every rank loads (no collective).
  void load_model_state(const std::string& role, const std::map<std::string, torch::Tensor>& state);
  // Bytes of the `role` model's weights this rank holds: its shards over several ranks, the whole model otherwise.
  int64_t model_weight_bytes(const std::string& role);
  // Whether the `role` model is ZeRO-3 sharded (several ranks): its checkpoints are then per-rank files
  // (verl/workers/sharded_checkpoint.h), written without ever gathering the model.
  bool model_sharded(const std::string& role) { return precision(role).sharding() != nullptr; }
  // Controller of a sharded model: writes the `role` checkpoint directory `dir` -- config.json and the tokenizer
  // files of `tokenizer_dir` (rank 0), then every rank's model and optimizer shard files (dispatched; each rank
  // fsyncs its own). `dir`'s parent must be on a file system every rank sees.
  void save_model_shards(const std::string& role, const std::string& dir,
                         const std::optional<std::string>& tokenizer_dir);
  // Every rank, no collective: the `role` model and its optimizer (moments and schedule) from a sharded checkpoint
  // directory written at any number of ranks; at this job's layout each rank reads its own files only.
  void load_model_shards(const std::string& role, const std::string& dir);
  // The trainer's ranks (a rollout pool's ranks are not counted; on a pool rank: 1).
  int64_t world_size() const { return workers_->world_size(); }
  // Whether this rank generates for the controller's rollout pool (PPOTrainerOptions::mesh.rollout_pool) and trains nothing.
  bool is_rollout_pool_rank() const { return pool_rank_; }
  void serve();
  void release_workers();

  const PPOTrainerConfig& settings() const { return settings_; }
  const Config& config() const { return config_; }
  // InvalidArgument on a rollout pool's rank (is_rollout_pool_rank), as the other accessors of what it does not train.
  workers::ActorWorker& actor();
  workers::ActorWorker* ref() { return ref_.get(); }
  workers::CriticWorker* critic() { return critic_.get(); }
  workers::CriticWorker* cost_critic() { return cost_critic_.get(); }
  // InvalidArgument on a trainer rank of a job with a rollout pool (the pool's ranks generate; they hold the engine).
  rollout::Engine& engine();
  // The worker training `role` (InvalidArgument as optimizer()).
  workers::MixedPrecision& precision(const std::string& role);
  // The models given or made. On a rollout pool's rank with rollout.tensor_model_parallel_size > 1 the actor is null:
  // the rank keeps its tensor-parallel shard (the engine's model) only.
  const PPOTrainerModels& models() const { return models_; }
  int64_t pad_token_id() const { return pad_token_id_; }

 private:
  using Clock = std::chrono::steady_clock;
  Metrics optimize_impl(DataProto batch, std::optional<double> step_seconds);
  // PPOTrainerConfig::old_log_prob_from_update holds for this step's batch: the update gives old_log_probs bit for
  // bit, and no stage before it reads them.
  bool old_log_probs_from_update(const DataProto& batch, int64_t step_no) const;
  // What the old-log-prob pass's output gives besides old_log_probs: actor/entropy, and against the rollout's
  // log-probs verl's training/rollout_probs_diff_* (after the pass, or after an update that gave them).
  Metrics old_log_prob_metrics(const DataProto& batch, const torch::Tensor& entropys) const;
  // collect_rollouts with the step number and generation index its uids and seeds are drawn from; `score`: also
  // token_level_scores and the reward's columns, each prompt's samples scored as they finish (streams_rewards()).
  DataProto collect_rollouts_at(const DataProto& prompts, int64_t step_no, int64_t gen_index, bool score);
  // collect_rollouts + compute_rewards, as step() and submit_rollouts run them: with the scoring streamed beside
  // the generation where streams_rewards() (verl's reward loop), else after it.
  DataProto scored_rollouts(const DataProto& prompts, int64_t step_no, int64_t gen_index);
  // PPOTrainerOptions::reward_per_sample, in one process generating every row with a reward callback of its own
  // (no ranks, no tensor parallelism, no agent loops, no Safe-RLHF cost).
  bool streams_rewards() const;
  void set_scores(DataProto& batch, RewardOutput scores) const;
  // Generation of `rows` on this process's engine (woken, weights handed over; asleep after when
  // free_cache_engine); on_rows as generate_sequences'.
  DataProto generate_on_engine(const DataProto& rows, const rollout::SamplingParams& params, int64_t seed,
                               const RowsFinishedFn& on_rows = {});
  // InvalidArgument naming `what` while submit_rollouts' batch is in flight (the engine is generating).
  void check_no_rollout_in_flight(const char* what) const;
  rollout::SamplingParams sampling_params(bool validation) const;
  // Generation on every rank (rows split in order); mode "train", "greedy" (ReMax's baseline) or "validation".
  DataProto generate(const DataProto& prompts, const std::string& mode, int64_t seed);
  rollout::SamplingParams mode_sampling_params(const std::string& mode) const;
  // The rows generation reads, popped from `batch`: its input tensors, and with a rollout_fn its non-tensor columns.
  DataProto pop_generation_input(DataProto& batch) const;
  DataProto generate_with_rollout_fn(const DataProto& rows, const std::string& mode, int64_t seed);
  RewardOutput call_reward(const DataProto& batch);
  void hand_over_weights();
  // With a rollout pool (controller): the actor's compute weights to every pool rank, if they changed since the last
  // time (a pool call whose controller side gathers the trainer ranks' units and broadcasts them; see
  // rollout_pool.cpp, hybrid/weight_hand_over.h). A pool rank's side: hybrid::receive_units.
  void sync_pool_weights();
  void register_pool_methods();
  // The rows' generation on the ranks that generate: the trainer's, or the rollout pool's.
  dist::WorkerGroup& generation_group() { return pool_ ? *pool_ : *workers_; }
  DataProto generate_chunk(const DataProto& chunk);
  // Awake, with the actor's current weights: what generation needs.
  void ready_engine();
  void register_worker_methods();
  // Error unless this rank is the controller (the workers and the rollout pool's ranks call serve()).
  void check_controller() const;
  // Controller: runs a registered worker method over the ranks as its registration dispatches it, checking that it
  // is the controller calling.
  DataProto dispatch(const std::string& method, const DataProto& data);

  Config config_;
  PPOTrainerConfig settings_;
  PPOTrainerModels models_;
  RewardFn reward_fn_;
  int64_t pad_token_id_ = 0;
  std::unique_ptr<workers::ActorWorker> actor_;
  std::unique_ptr<workers::ActorWorker> ref_;
  bool reference_in_actor_ = false;  // LoRA: the reference policy is the actor with its adapters disabled
  std::unique_ptr<workers::CriticWorker> critic_;
  std::unique_ptr<workers::CriticWorker> cost_critic_;  // Safe-RLHF with a critic
  RewardFn cost_fn_;
  RolloutFn rollout_fn_;
  bool reward_per_sample_ = false;
  bool multi_turn_ = false;  // actor_rollout_ref.rollout.multi_turn.enable: generation through agent loops
  double safe_rlhf_lambda_ = 0.0;
  std::shared_ptr<rollout::Engine> engine_;
  // The actor's weights into engine_ (hybrid/weight_hand_over.h); null without an engine or an actor.
  std::unique_ptr<hybrid::WeightHandOver> hand_over_;
  // PPOTrainerOptions' tensor_parallel / tensor_parallel_slice, with t > 1 over several ranks.
  std::shared_ptr<dist::Communicator> tensor_parallel_, tensor_parallel_slice_;
  // The rollout generates from a copy gathered from the actor's ZeRO-3 shards (several ranks): it sleeps without it.
  bool rollout_copy_of_shards() const;
  // InvalidArgument naming `what` on a rollout pool's rank.
  void check_trains(const std::string& what) const;
  // The training engine of a trained role ("actor", "critic", "cost_critic"): InvalidArgument for another.
  workers::TrainEngine& engine_of(const std::string& role);
  std::unique_ptr<algo::KLController> kl_ctrl_;
  int64_t global_step_ = 0;
  int64_t validation_count_ = 0;
  int64_t gen_batches_in_step_ = 0;  // collect_rollouts calls since the last optimize (seeds, uids)
  // submit_rollouts: the batch in flight, whether one is (read by its thread: written only while none runs), the
  // batches waited for and not yet optimized (the next submission trains that many steps later), and the weight
  // hand-over time the next optimize reports.
  std::future<DataProto> rollout_future_;
  bool rollout_in_flight_ = false;
  int64_t waited_not_optimized_ = 0;
  std::optional<double> sync_rollout_weights_seconds_;
  DataProto last_batch_;
  std::unique_ptr<dist::WorkerGroup> workers_;
  // PPOTrainerOptions::mesh.rollout_pool's group (controller and pool ranks); pool_rank_: this rank is one of the pool's.
  std::unique_ptr<dist::WorkerGroup> pool_;
  bool pool_rank_ = false;
  int64_t pool_weights_version_ = -1;  // the actor's compute weights version last broadcast to the pool
};

}  // namespace verl::trainer

namespace verl {
// The names docs/architecture.md (section 1) promises C++ applications: verl::PPOTrainer trainer(config, models, reward_fn).
using trainer::PPOTrainer;
using trainer::RewardFn;
using trainer::RewardOutput;
}  // namespace verl
