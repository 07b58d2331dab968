// verl::trainer::DPOTrainer: the DPO step (see dpo_trainer.h).
#include "verl/trainer/dpo_trainer.h"

#include <algorithm>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/dpo_loss.h"
#include "verl/core/error.h"
#include "verl/workers/micro_batch.h"
#include "trainer/reference_policy.h"
#include "trainer/target_batch.h"
#include "verl/workers/train_engine.h"
#include "workers/worker_common.h"

namespace verl::trainer {

using detail::PackedTargets;
using detail::TargetBatch;

DPOConfig DPOConfig::from_config(const Config& config, double beta, double label_smoothing,
                                 const std::string& loss_type, std::optional<int64_t> total_training_steps) {
  DPOConfig c;
  c.step = SFTConfig::from_config(config, total_training_steps);
  c.beta = beta;
  c.label_smoothing = label_smoothing;
  c.loss_type = loss_type;
  c.validate();
  return c;
}

void DPOConfig::validate() const {
  step.validate();
  algo::check_dpo_loss_config(beta, label_smoothing, loss_type, "dpo");
}

std::map<std::string, double> DPOMetricSums::means() const {
  const double n = num_pairs > 0 ? static_cast<double>(num_pairs) : 1.0;
  return {{"loss", loss / n},
          {"rewards/chosen", chosen_rewards / n},
          {"rewards/rejected", rejected_rewards / n},
          {"rewards/accuracies", accuracies / n},
          {"rewards/margins", margins / n},
          {"logps/chosen", chosen_logps / n},
          {"logps/rejected", rejected_logps / n}};
}

DPOMetricSums& DPOMetricSums::operator+=(const DPOMetricSums& o) {
  loss += o.loss;
  chosen_rewards += o.chosen_rewards;
  rejected_rewards += o.rejected_rewards;
  accuracies += o.accuracies;
  margins += o.margins;
  chosen_logps += o.chosen_logps;
  rejected_logps += o.rejected_logps;
  num_pairs += o.num_pairs;
  return *this;
}

namespace {

// One micro-batch: whole pairs (rows 2i, 2i + 1 of the batch, kept adjacent), packed once per step.
struct PairMicroBatch {
  std::vector<int64_t> batch_rows;  // the rows of the batch it holds, in order
  TargetBatch rows;
  PackedTargets packed;
};

// Checks the pair layout on top of check_target_batch: an even number of rows, and a completion token in each.
void check_pairs(const TargetBatch& b) {
  const int64_t rows = b.input_ids.size(0);
  VERL_CHECK_AS(DataError, rows % 2 == 0, "DPO batch: ", rows,
                " rows; it needs an even number (row 2i: pair i's chosen sequence, row 2i + 1: its rejected one)");
  const PackedTargets whole = detail::pack_targets(b);
  torch::Tensor counts = torch::bincount(whole.target_rows, {}, rows);
  torch::Tensor empty = (counts == 0).nonzero();
  if (empty.numel() > 0) {
    const int64_t row = empty[0][0].item<int64_t>();
    VERL_CHECK_AS(DataError, false, "DPO batch: the ", row % 2 == 0 ? "chosen" : "rejected", " sequence of pair ",
                  row / 2, " (row ", row, ") has no completion token after a real token (loss_mask)");
  }
}

// Whole pairs per micro-batch: micro_batch_size_per_gpu pairs, or pairs whose two sequences fit the token budget
// (the same number of micro-batches on every data-parallel rank). `longest_pair`: the global batch's, so every rank
// refuses a batch alike.
std::vector<PairMicroBatch> pair_micro_batches(const SFTConfig& config, const workers::TrainEngine& engine,
                                               const TargetBatch& b, int64_t longest_pair) {
  if (config.use_dynamic_bsz) {
    VERL_CHECK_AS(DataError, longest_pair <= config.max_token_len_per_gpu, "DPO batch: a pair of ", longest_pair,
                  " tokens (chosen + rejected) does not fit the micro-batch token budget data.max_token_len_per_gpu=",
                  config.max_token_len_per_gpu, " (raise it, or lower data.max_length)");
  }
  const std::vector<int64_t> lens = workers::detail::row_token_counts(b.attention_mask);
  const int64_t num_pairs = static_cast<int64_t>(lens.size()) / 2;
  std::vector<int64_t> pair_lens(static_cast<size_t>(num_pairs));
  for (int64_t p = 0; p < num_pairs; ++p) pair_lens[p] = lens[2 * p] + lens[2 * p + 1];
  std::vector<PairMicroBatch> out;
  for (const auto& pairs : engine.micro_batches(
           pair_lens, {config.use_dynamic_bsz, config.micro_batch_size_per_gpu, config.max_token_len_per_gpu})) {
    std::vector<int64_t> rows;
    for (int64_t p : pairs) {
      rows.push_back(2 * p);
      rows.push_back(2 * p + 1);
    }
    TargetBatch part = detail::take_rows(b, rows);
    PackedTargets packed = detail::pack_targets(part);
    out.push_back({std::move(rows), std::move(part), std::move(packed)});
  }
  return out;
}

// The longest pair (chosen + rejected real tokens) of a batch.
int64_t longest_pair(const TargetBatch& b) {
  const torch::Tensor lens = b.attention_mask.sum(1);
  return (lens.slice(0, 0, lens.size(0), 2) + lens.slice(0, 1, lens.size(0), 2)).max().item<int64_t>();
}

// (rows,) summed completion log-prob of each row of `m` (every row has a target: check_pairs).
torch::Tensor sequence_sums(model::CausalLM& model, const PairMicroBatch& m, bool remove_padding) {
  torch::Tensor logp = *detail::target_log_probs(model, m.rows, m.packed, remove_padding);
  return torch::zeros({m.rows.input_ids.size(0)}, logp.options()).index_add(0, m.packed.target_rows, logp);
}

// The rows of `m` as pair indices of the micro-batch: even rows are chosen, odd rows rejected.
torch::Tensor chosen_of(const torch::Tensor& per_row) { return per_row.slice(0, 0, per_row.size(0), 2); }
torch::Tensor rejected_of(const torch::Tensor& per_row) { return per_row.slice(0, 1, per_row.size(0), 2); }

// The DPO loss of the pairs of `m` from its rows' summed log-probs (policy and reference).
algo::DPOLossOutput pair_loss(const DPOConfig& c, const PairMicroBatch& m, const torch::Tensor& policy_logps,
                              const torch::Tensor& ref_logps) {
  const torch::Tensor lengths = torch::bincount(m.packed.target_rows, {}, m.rows.input_ids.size(0));
  return algo::dpo_loss(chosen_of(policy_logps), rejected_of(policy_logps), chosen_of(ref_logps),
                        rejected_of(ref_logps), chosen_of(lengths), rejected_of(lengths), c.beta, c.label_smoothing,
                        c.loss_type);
}

DPOMetricSums sums_of(const algo::DPOLossOutput& out, const torch::Tensor& policy_logps) {
  // (7, pairs) summed in float64, then one device-to-host copy for all the sums
  const torch::Tensor sums =
      torch::stack({out.losses.detach(), out.chosen_rewards, out.rejected_rewards,
                    (out.chosen_rewards > out.rejected_rewards).to(out.chosen_rewards.scalar_type()),
                    out.chosen_rewards - out.rejected_rewards, chosen_of(policy_logps).detach(),
                    rejected_of(policy_logps).detach()})
          .to(torch::kDouble)
          .sum(1)
          .to(torch::kCPU);
  const double* v = sums.data_ptr<double>();
  DPOMetricSums s;
  s.loss = v[0];
  s.chosen_rewards = v[1];
  s.rejected_rewards = v[2];
  s.accuracies = v[3];
  s.margins = v[4];
  s.chosen_logps = v[5];
  s.rejected_logps = v[6];
  s.num_pairs = out.losses.size(0);
  return s;
}

// The engine options of the SFT tree's keys (no optimizer: the reference's).
workers::TrainEngineOptions engine_options(const SFTConfig& step) {
  workers::TrainEngineOptions options;
  options.dtype = step.dtype;
  options.dtype_key = "engine.dtype";
  options.model_dtype_key = "model.dtype";
  options.gather = {step.reshard_after_forward, step.forward_prefetch};
  return options;
}

// The sums over every data-parallel rank's pairs.
DPOMetricSums all_ranks(const DPOMetricSums& s, const workers::detail::DataParallel& dp) {
  if (dp.size() == 1) return s;
  DPOMetricSums out;
  out.loss = dp.sum(s.loss);
  out.chosen_rewards = dp.sum(s.chosen_rewards);
  out.rejected_rewards = dp.sum(s.rejected_rewards);
  out.accuracies = dp.sum(s.accuracies);
  out.margins = dp.sum(s.margins);
  out.chosen_logps = dp.sum(s.chosen_logps);
  out.rejected_logps = dp.sum(s.rejected_logps);
  out.num_pairs = static_cast<int64_t>(dp.sum(static_cast<double>(s.num_pairs)));
  return out;
}

}  // namespace

DPOTrainer::DPOTrainer(DPOConfig config, std::shared_ptr<model::CausalLM> policy,
                       std::shared_ptr<model::CausalLM> reference)
    : config_(std::move(config)), policy_(std::move(policy)), reference_(std::move(reference)) {
  VERL_CHECK(policy_ != nullptr, "DPOTrainer: model is null");
  VERL_CHECK(policy_->head_kind() == model::HeadKind::kLanguageModel,
             "DPOTrainer: the model must have the LM head (got a value-head model)");
  config_.validate();
  // LoRA (model.lora_rank): the adapters go on before the engine is built; the reference is then the policy's own
  // base with its adapters disabled (verl's ref_in_actor), no second copy of the weights -- unless one is given.
  if (config_.step.lora) workers::apply_lora(*policy_, *config_.step.lora, config_.step.lora_seed);
  if (!reference_ && !policy_->lora()) reference_ = detail::copy_as_reference(*policy_);
  if (reference_) {
    VERL_CHECK(reference_ != policy_, "DPOTrainer: the reference must be a separate model (it stays frozen)");
    VERL_CHECK(reference_->head_kind() == model::HeadKind::kLanguageModel,
               "DPOTrainer: the reference model must have the LM head");
    VERL_CHECK(reference_->config().vocab_size == policy_->config().vocab_size,
               "DPOTrainer: the reference's vocab_size ", reference_->config().vocab_size, " differs from the policy's ",
               policy_->config().vocab_size);
    VERL_CHECK(reference_->device() == policy_->device(), "DPOTrainer: the reference is on ", reference_->device(),
               ", the policy on ", policy_->device());
    for (auto& p : reference_->parameters()) p.set_requires_grad(false);
    reference_->eval();
    reference_engine_ = make_reference_engine();
  }
  workers::TrainEngineOptions options = engine_options(config_.step);
  options.optim = config_.step.optim;
  options.optim_key = "optim";
  options.enable_gradient_checkpointing = config_.step.enable_gradient_checkpointing;
  engine_ = std::make_unique<workers::TrainEngine>(policy_, std::move(options));
}

std::unique_ptr<workers::TrainEngine> DPOTrainer::make_reference_engine() const {
  // The reference computes in the policy's compute dtype, so at step 0 its log-probs equal the policy's.
  return std::make_unique<workers::TrainEngine>(reference_, engine_options(config_.step));
}

DPOTrainer::~DPOTrainer() = default;

void DPOTrainer::set_data_parallel(std::shared_ptr<dist::Communicator> communicator,
                                   const workers::ShardGroups& groups) {
  // Models built on each rank start from rank 0's weights, before the policy is sharded.
  VERL_CHECK_AS(ConfigError, !policy_->lora() || !communicator || communicator->world_size() == 1,
                "model.lora_rank: LoRA over several ranks is not supported yet (the sharded engine does not take "
                "adapters); train with one process");
  const workers::detail::DataParallel dp(communicator);
  dp.broadcast_model_from_controller(*policy_);
  if (reference_) {
    dp.broadcast_model_from_controller(*reference_);
    reference_engine_ = make_reference_engine();  // its compute copy from the broadcast weights
  }
  engine_->shard_over(std::move(communicator), /*generation_tp=*/1, groups);
}

workers::Optimizer& DPOTrainer::optimizer() { return engine_->optimizer(); }

std::map<std::string, double> DPOTrainer::train_step(const DataProto& data) {
  // Every rank checks the whole batch, so a bad one fails on all of them alike, before any collective.
  const TargetBatch global = detail::check_target_batch(data, *policy_, "DPO batch");
  check_pairs(global);
  const workers::detail::DataParallel& dp = engine_->data_parallel();
  const TargetBatch b = detail::rank_share(global, engine_->rank(), dp.size(), 2, "data.train_batch_size");
  const std::vector<PairMicroBatch> micro = pair_micro_batches(config_.step, *engine_, b, longest_pair(global));
  const bool remove_padding = config_.step.use_remove_padding;
  const double num_pairs = static_cast<double>(global.input_ids.size(0) / 2);

  // The reference's log-probs once per batch, before the policy changes anything.
  std::vector<torch::Tensor> ref_logps;
  reference_passes(micro.size(), [&](model::CausalLM& reference, size_t i) {
    ref_logps.push_back(sequence_sums(reference, micro[i], remove_padding));
  });

  policy_->train();
  DPOMetricSums sums;
  // Each micro-batch's sum over its pairs divided by the global batch's pairs: the accumulated gradient is that of
  // the batch's mean loss however the batch is cut; over N ranks the sharded optimizer averages the gradients, which
  // the factor N makes up for.
  const double grad_norm = engine_->train_batch(micro.size(), [&](model::CausalLM& policy, size_t i) {
    const torch::Tensor policy_logps = sequence_sums(policy, micro[i], remove_padding);
    const algo::DPOLossOutput out = pair_loss(config_, micro[i], policy_logps, ref_logps[i]);
    sums += sums_of(out, policy_logps);
    return out.losses.sum() * (static_cast<double>(dp.size()) / num_pairs);
  });
  const double lr = engine_->scheduler_step();
  ++global_step_;
  std::map<std::string, double> metrics = all_ranks(sums, dp).means();
  metrics["grad_norm"] = grad_norm;
  metrics["learning_rate"] = lr;
  return metrics;
}

DPOMetricSums DPOTrainer::evaluate(const DataProto& data) {
  const TargetBatch b = detail::check_target_batch(data, *policy_, "DPO batch");
  check_pairs(b);
  const bool remove_padding = config_.step.use_remove_padding;
  // The whole batch on every rank: the same passes everywhere (ZeRO-3 gathers weights in each), the global sums.
  const std::vector<PairMicroBatch> micro = pair_micro_batches(config_.step, *engine_, b, longest_pair(b));
  std::vector<torch::Tensor> ref_logps;
  reference_passes(micro.size(), [&](model::CausalLM& reference, size_t i) {
    ref_logps.push_back(sequence_sums(reference, micro[i], remove_padding));
  });
  DPOMetricSums sums;
  engine_->infer_batch(micro.size(), [&](model::CausalLM& policy, size_t i) {
    const torch::Tensor policy_logps = sequence_sums(policy, micro[i], remove_padding);
    sums += sums_of(pair_loss(config_, micro[i], policy_logps, ref_logps[i]), policy_logps);
  });
  return sums;
}

torch::Tensor DPOTrainer::sequence_log_probs(const DataProto& data, bool reference) {
  const TargetBatch b = detail::check_target_batch(data, *policy_, "DPO batch");
  check_pairs(b);
  torch::Tensor out = torch::zeros({b.input_ids.size(0)}, b.input_ids.options().dtype(torch::kDouble));
  const std::vector<PairMicroBatch> micro = pair_micro_batches(config_.step, *engine_, b, longest_pair(b));
  const auto pass = [&](model::CausalLM& model, size_t i) {
    // dynamic micro-batches regroup the pairs: every row goes back to its place
    torch::Tensor rows = torch::tensor(micro[i].batch_rows, torch::kLong).to(out.device());
    out.index_copy_(0, rows, sequence_sums(model, micro[i], config_.step.use_remove_padding).to(torch::kDouble));
  };
  if (reference) {
    reference_passes(micro.size(), pass);
  } else {
    engine_->infer_batch(micro.size(), pass);
  }
  return out;
}

void DPOTrainer::reference_passes(size_t count, const std::function<void(model::CausalLM&, size_t)>& pass) {
  if (reference_engine_) {
    reference_engine_->infer_batch(count, pass);
    return;
  }
  engine_->infer_batch(count, [&](model::CausalLM& policy, size_t i) {
    model::AdaptersDisabled base(policy);
    pass(policy, i);
  });
}

}  // namespace verl::trainer
