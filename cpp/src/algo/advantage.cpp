// Advantage estimators and their registry (see advantage.h). Grouped statistics are computed with
// one unique + index_add per quantity, so no per-group loop runs on the host or the device.
#include "verl/algo/advantage.h"

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <unordered_map>

#include <torch/torch.h>

#include "algo/batch_estimators.h"
#include "kernels/ops.h"
#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

// Half precision accumulates too coarsely for group statistics and recurrences: use float32.
torch::ScalarType compute_dtype(torch::ScalarType t) {
  return (t == torch::kDouble) ? torch::kDouble : torch::kFloat;
}

// The validated (bs, response_length) inputs every estimator starts from. Nothing here makes a
// pass over the (bs, T) matrix except converting rewards of a narrower dtype; the masks each
// estimator needs are built by token_mask / outcome_result, once.
struct Batch {
  torch::Tensor rewards;        // (bs, T) compute dtype
  torch::Tensor response_mask;  // (bs, T) as given (any dtype), on the rewards' device
  torch::ScalarType out_dtype;  // dtype of the results
  int64_t bs;

  torch::Tensor out(const torch::Tensor& t) const { return t.to(out_dtype); }
};

// `out_dtype` defaults to the rewards' dtype.
Batch prepare(const char* who, const torch::Tensor& rewards, const torch::Tensor& response_mask,
              std::optional<torch::ScalarType> out_dtype = std::nullopt) {
  VERL_CHECK(rewards.defined(), who, ": token_level_rewards is undefined");
  VERL_CHECK(response_mask.defined(), who, ": response_mask is undefined");
  VERL_CHECK(rewards.dim() == 2, who, ": token_level_rewards must be (bs, response_length), got shape ",
             rewards.sizes());
  VERL_CHECK(rewards.numel() > 0, who, ": empty batch (token_level_rewards has shape ", rewards.sizes(), ")");
  VERL_CHECK(rewards.is_floating_point(), who, ": token_level_rewards must be floating point, got ",
             rewards.scalar_type());
  VERL_CHECK(!response_mask.is_complex(), who, ": response_mask must be bool, integer or floating, got ",
             response_mask.scalar_type());
  check_same_shape(rewards, "token_level_rewards", response_mask, "response_mask");
  Batch b;
  b.out_dtype = out_dtype.value_or(rewards.scalar_type());
  b.rewards = rewards.to(compute_dtype(b.out_dtype));
  b.response_mask = response_mask.to(rewards.device());
  b.bs = rewards.size(0);
  return b;
}

// The response mask of the token-level estimators, which never read masked positions.
struct TokenMask {
  torch::Tensor valid;  // (bs, T) bool: response_mask != 0
  torch::Tensor mask;   // (bs, T) compute dtype 0/1
};

// `check_rewards`: refuse NaN/Inf rewards inside the mask (callers that check in a fused kernel
// pass false).
TokenMask token_mask(const Batch& b, bool check_rewards = true) {
  TokenMask m;
  m.valid = b.response_mask.ne(0);
  if (check_rewards) check_finite(b.rewards, "token_level_rewards", m.valid);
  m.mask = m.valid.to(b.rewards.scalar_type());
  return m;
}

// The outcome score of every row, (bs,): the sum over the whole row, as verl (masked positions
// included). A NaN or Inf anywhere in a row makes its sum non-finite, so checking the (bs,) sums
// refuses exactly the inputs that would put NaN/Inf into the result, without a pass over the matrix.
torch::Tensor row_scores(const Batch& b) {
  torch::Tensor scores = kernels::row_sums(b.rewards);
  const torch::Tensor bad = ~torch::isfinite(scores);
  VERL_CHECK(!bad.any().item<bool>(), "token_level_rewards holds NaN or Inf, or sums to +-Inf, in ",
             bad.sum().item<int64_t>(), " row(s): outcome estimators sum whole rows, masked positions included");
  return scores;
}

// Group ids as contiguous 0..G-1 plus per-group sums; every grouped estimator is built from these.
struct Groups {
  torch::Tensor original;  // (G,) the distinct ids of `index`, sorted
  torch::Tensor id;        // (bs,) int64 in [0, G)
  torch::Tensor count;     // (G,) compute dtype
  int64_t size = 0;

  torch::Tensor sum(const torch::Tensor& x) const {
    return torch::zeros({size}, x.options()).index_add_(0, id, x);
  }
  torch::Tensor per_row(const torch::Tensor& per_group) const { return per_group.index_select(0, id); }
};

Groups make_groups(const char* who, const torch::Tensor& index, const Batch& b) {
  VERL_CHECK(index.defined(), who, ": index (group ids) is undefined");
  VERL_CHECK(index.dim() == 1 && index.size(0) == b.bs, who, ": index must have shape [", b.bs,
             "] (one group id per row), got ", index.sizes());
  VERL_CHECK(!index.is_floating_point() && !index.is_complex() && index.scalar_type() != torch::kBool, who,
             ": index must hold integer group ids, got ", index.scalar_type());
  Groups g;
  torch::Tensor counts;
  std::tie(g.original, g.id, counts) =
      torch::_unique2(index.to(b.rewards.device(), torch::kLong), /*sorted=*/true, /*return_inverse=*/true,
                      /*return_counts=*/true);
  g.size = g.original.size(0);
  g.count = counts.to(b.rewards.scalar_type());
  return g;
}

// Per-group mean and unbiased std of scores (bs,), as (G,) tensors. Singleton groups get mean 0,
// std 1 (verl's convention in every grouped estimator).
std::pair<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores, const Groups& g) {
  auto [mean, std] = kernels::group_mean_std(scores, g.id, g.count);
  return {mean, std};
}

// Per-row scalar (bs,) broadcast over the row and masked, as verl's `scalar.unsqueeze(-1) * mask`.
AdvantageResult outcome_result(const Batch& b, const torch::Tensor& scalar) {
  const bool kernel = !b.response_mask.is_complex() &&
                      (scalar.scalar_type() == torch::kFloat || scalar.scalar_type() == torch::kDouble);
  const torch::Tensor adv =
      b.out(kernel ? kernels::scale_rows_by_mask(scalar, b.response_mask) : scalar.unsqueeze(-1) * b.response_mask);
  return {adv, adv};
}

// (bs, T) -> (T, bs) contiguous, so the reverse-time loops read and write whole contiguous rows.
torch::Tensor time_major(const torch::Tensor& t) { return t.t().contiguous(); }

// The result dtype of rewards combined with a second floating operand (values, reward_baselines).
torch::ScalarType promoted(const char* who, const torch::Tensor& rewards, const torch::Tensor& other,
                           const char* other_name) {
  VERL_CHECK(rewards.defined(), who, ": token_level_rewards is undefined");
  VERL_CHECK(other.defined(), who, ": ", other_name, " is undefined");
  VERL_CHECK(rewards.is_floating_point() && other.is_floating_point(), who, ": token_level_rewards and ",
             other_name, " must be floating point, got ", rewards.scalar_type(), " and ", other.scalar_type());
  return torch::promote_types(rewards.scalar_type(), other.scalar_type());
}

// A second operand (values, reward_baselines) on the rewards' device in the compute dtype, checked
// finite (inside mask_for_check when given).
torch::Tensor prepare_operand(const torch::Tensor& t, const char* name, const Batch& b,
                              const torch::Tensor& mask_for_check) {
  const torch::Tensor on_device = t.to(b.rewards.device());
  check_finite(on_device, name, mask_for_check);
  return on_device.to(b.rewards.scalar_type());
}

}  // namespace

torch::Tensor group_ids(const std::vector<std::string>& uids) {
  std::unordered_map<std::string, int64_t> seen;
  seen.reserve(uids.size());
  std::vector<int64_t> ids;
  ids.reserve(uids.size());
  for (const std::string& uid : uids) {
    ids.push_back(seen.emplace(uid, static_cast<int64_t>(seen.size())).first->second);
  }
  return torch::tensor(ids, torch::kLong);
}

AdvantageResult compute_gae_advantage_return(const torch::Tensor& token_level_rewards, const torch::Tensor& values,
                                             const torch::Tensor& response_mask, double gamma, double lam) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_gae_advantage_return";
  const torch::ScalarType out_dtype = promoted(who, token_level_rewards, values, "values");
  const Batch b = prepare(who, token_level_rewards, response_mask, out_dtype);
  check_same_shape(token_level_rewards, "token_level_rewards", values, "values");
  const torch::Tensor v = values.to(b.rewards.device()).to(b.rewards.scalar_type());
  const auto [advantages, returns] = kernels::gae_advantage_return(b.rewards, v, b.response_mask, gamma, lam);
  return {b.out(advantages), b.out(returns)};
}

AdvantageResult compute_grpo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                               const torch::Tensor& response_mask, const torch::Tensor& index,
                                               double epsilon, bool norm_adv_by_std_in_grpo) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_grpo_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  const auto [mean, std] = group_mean_std(scores, g);
  const torch::Tensor centered = scores - g.per_row(mean);
  return outcome_result(b, norm_adv_by_std_in_grpo ? centered / (g.per_row(std) + epsilon) : centered);
}

AdvantageResult compute_grpo_vectorized_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                          const torch::Tensor& response_mask,
                                                          const torch::Tensor& index, double epsilon,
                                                          bool norm_adv_by_std_in_grpo) {
  // verl's loop and vectorized GRPO differ only in how they group; ours groups by scatter already.
  // (verl's vectorized one also casts the group statistics to float32; we keep the input precision.)
  return compute_grpo_outcome_advantage(token_level_rewards, response_mask, index, epsilon,
                                        norm_adv_by_std_in_grpo);
}

AdvantageResult compute_grpo_passk_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                     const torch::Tensor& response_mask, const torch::Tensor& index,
                                                     double epsilon, bool norm_adv_by_std_in_grpo) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_grpo_passk_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  if (g.count.min().item<double>() < 2) {
    const int64_t smallest = g.count.argmin().item<int64_t>();
    VERL_FAIL(InvalidArgument, who, ": Pass@k requires at least 2 samples per group. Got ",
              g.count[smallest].item<int64_t>(), " for group ", g.original[smallest].item<int64_t>(), ".");
  }

  const torch::Tensor scores = row_scores(b);
  const double neg_inf = -std::numeric_limits<double>::infinity();
  const torch::Tensor r_max = torch::full({g.size}, neg_inf, scores.options())
                                  .scatter_reduce(0, g.id, scores, "amax", /*include_self=*/true);
  // One winner per group: the first row holding the maximum. On a tie the advantage is
  // r_max - r_second_max = 0, so which tied row verl's topk picks does not matter.
  const torch::Tensor rows = torch::arange(b.bs, g.id.options());
  const torch::Tensor candidate = torch::where(scores == g.per_row(r_max), rows, b.bs);
  const torch::Tensor first = torch::full({g.size}, b.bs, g.id.options())
                                  .scatter_reduce(0, g.id, candidate, "amin", /*include_self=*/true);
  const torch::Tensor winner = rows == g.per_row(first);
  const torch::Tensor r_second = torch::full({g.size}, neg_inf, scores.options())
                                     .scatter_reduce(0, g.id, scores.masked_fill(winner, neg_inf), "amax",
                                                     /*include_self=*/true);
  torch::Tensor gap = r_max - r_second;
  if (norm_adv_by_std_in_grpo) gap = gap / (group_mean_std(scores, g).second + epsilon);
  return outcome_result(b, torch::where(winner, g.per_row(gap), torch::zeros({}, gap.options())));
}

AdvantageResult compute_rloo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                               const torch::Tensor& response_mask, const torch::Tensor& index) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_rloo_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  const torch::Tensor mean = g.per_row(group_mean_std(scores, g).first);
  const torch::Tensor n = g.per_row(g.count);
  const torch::Tensor n_minus_1 = (n - 1).clamp_min(1);
  // verl's operation order: s * n / (n - 1) - mean * n / (n - 1). A singleton keeps its score.
  const torch::Tensor loo = scores * n / n_minus_1 - mean * n / n_minus_1;
  return outcome_result(b, torch::where(n > 1, loo, scores));
}

AdvantageResult compute_rloo_vectorized_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                          const torch::Tensor& response_mask,
                                                          const torch::Tensor& index) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_rloo_vectorized_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  const torch::Tensor c = g.per_row(g.count);
  // verl: ((c * s - group_sum) / max(c - 1, 1)) * (c > 1): singletons get 0, unlike the loop version.
  const torch::Tensor adv = (c * scores - g.per_row(g.sum(scores))) / (c - 1).clamp_min(1) * (c > 1);
  return outcome_result(b, adv);
}

AdvantageResult compute_opo_outcome_advantage(const torch::Tensor& token_level_rewards,
                                              const torch::Tensor& response_mask, const torch::Tensor& index) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_opo_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  const torch::Tensor length = token_mask(b, /*check_rewards=*/false).mask.sum(-1);
  const torch::Tensor total_length = g.sum(length);
  // A group whose responses are all empty has 0/0 as baseline in verl (NaN in every masked-out
  // position of its rows); we use 0 there, so those rows come out as zeros.
  const torch::Tensor use_baseline = (g.count > 1) & (total_length > 0);
  const torch::Tensor baseline = torch::where(use_baseline, g.sum(length * scores) / total_length.clamp_min(1),
                                              torch::zeros({}, scores.options()));
  return outcome_result(b, scores - g.per_row(baseline));
}

AdvantageResult compute_reinforce_plus_plus_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                              const torch::Tensor& response_mask, double gamma) {
  torch::NoGradGuard no_grad;
  const Batch b = prepare("compute_reinforce_plus_plus_outcome_advantage", token_level_rewards, response_mask);
  const TokenMask m = token_mask(b);
  const torch::Tensor r_t = time_major(b.rewards), valid_t = time_major(m.valid);
  torch::Tensor returns_t = torch::empty_like(r_t);
  torch::Tensor running = torch::zeros({b.bs}, r_t.options());
  const torch::Tensor zero = torch::zeros({}, r_t.options());
  for (int64_t t = r_t.size(0) - 1; t >= 0; --t) {
    const torch::Tensor step = r_t[t] + gamma * running;
    // Observation tokens (mask 0) get return 0 and pass the running return through unchanged.
    returns_t[t].copy_(torch::where(valid_t[t], step, zero));
    running = torch::where(valid_t[t], step, running);
  }
  const torch::Tensor returns = returns_t.t();
  return {b.out(masked_whiten(returns, m.mask) * m.mask), b.out(returns)};
}

AdvantageResult compute_reinforce_plus_plus_baseline_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                                       const torch::Tensor& response_mask,
                                                                       const torch::Tensor& index) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_reinforce_plus_plus_baseline_outcome_advantage";
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  const torch::Tensor mask = token_mask(b, /*check_rewards=*/false).mask;
  const torch::Tensor centered = (scores - g.per_row(group_mean_std(scores, g).first)).unsqueeze(-1) * mask;
  const torch::Tensor adv = b.out(masked_whiten(centered, mask) * mask);
  return {adv, adv};
}

AdvantageResult compute_remax_outcome_advantage(const torch::Tensor& token_level_rewards,
                                                const torch::Tensor& reward_baselines,
                                                const torch::Tensor& response_mask) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_remax_outcome_advantage";
  const torch::ScalarType out_dtype = promoted(who, token_level_rewards, reward_baselines, "reward_baselines");
  const Batch b = prepare(who, token_level_rewards, response_mask, out_dtype);
  VERL_CHECK(reward_baselines.dim() == 1 && reward_baselines.size(0) == b.bs, who,
             ": reward_baselines must have shape [", b.bs, "] (one per row), got ", reward_baselines.sizes());
  const torch::Tensor baselines = prepare_operand(reward_baselines, "reward_baselines", b, {});
  const TokenMask m = token_mask(b);
  const torch::Tensor masked = torch::where(m.valid, b.rewards, torch::zeros({}, b.rewards.options()));
  const torch::Tensor returns = masked.flip({-1}).cumsum(-1).flip({-1});
  return {b.out(returns - baselines.unsqueeze(-1) * m.mask), b.out(returns)};
}

AdvantageResult compute_gpg_outcome_advantage(const torch::Tensor& token_level_rewards,
                                              const torch::Tensor& response_mask, const torch::Tensor& index,
                                              double f_norm) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_gpg_outcome_advantage";
  VERL_CHECK(f_norm != 0, who, ": f_norm must be nonzero");
  const Batch b = prepare(who, token_level_rewards, response_mask);
  const Groups g = make_groups(who, index, b);
  const torch::Tensor scores = row_scores(b);
  // alpha = bs / (number of nonzero scores in the batch), kept on the device. verl evaluates it as
  // reciprocal(count) * bs in float32 whatever the rewards' dtype; we divide in the compute dtype.
  const torch::Tensor nonzero = torch::count_nonzero(scores).clamp_min(1).to(scores.scalar_type());
  const torch::Tensor alpha = torch::full({}, static_cast<double>(b.bs), scores.options()) / nonzero;
  return outcome_result(b, alpha * (scores - g.per_row(group_mean_std(scores, g).first)) / f_norm);
}

// ---- registry -----------------------------------------------------------------------------------
namespace {

const torch::Tensor& need(const torch::Tensor& t, const char* input, const char* estimator) {
  VERL_CHECK(t.defined(), "advantage estimator '", estimator, "' needs the input '", input,
             "', which the batch does not have");
  return t;
}

AdvantageResult gae_entry(const AdvantageInputs& in, const AdvantageConfig& c) {
  return compute_gae_advantage_return(need(in.token_level_rewards, "token_level_rewards", "gae"),
                                      need(in.values, "values", "gae"), need(in.response_mask, "response_mask", "gae"),
                                      c.gamma, c.lam);
}

// The (rewards, mask, index) triple the grouped estimators read.
struct Grouped {
  const torch::Tensor& rewards;
  const torch::Tensor& mask;
  const torch::Tensor& index;
};

Grouped grouped(const AdvantageInputs& in, const char* estimator) {
  return {need(in.token_level_rewards, "token_level_rewards", estimator),
          need(in.response_mask, "response_mask", estimator), need(in.index, "index", estimator)};
}

AdvantageResult grpo_entry(const AdvantageInputs& in, const AdvantageConfig& c) {
  const Grouped g = grouped(in, "grpo");
  return compute_grpo_outcome_advantage(g.rewards, g.mask, g.index, c.epsilon, c.norm_adv_by_std_in_grpo);
}

AdvantageResult grpo_vectorized_entry(const AdvantageInputs& in, const AdvantageConfig& c) {
  const Grouped g = grouped(in, "grpo_vectorized");
  return compute_grpo_vectorized_outcome_advantage(g.rewards, g.mask, g.index, c.epsilon,
                                                   c.norm_adv_by_std_in_grpo);
}

AdvantageResult grpo_passk_entry(const AdvantageInputs& in, const AdvantageConfig& c) {
  const Grouped g = grouped(in, "grpo_passk");
  return compute_grpo_passk_outcome_advantage(g.rewards, g.mask, g.index, c.epsilon, c.norm_adv_by_std_in_grpo);
}

AdvantageResult rloo_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const Grouped g = grouped(in, "rloo");
  return compute_rloo_outcome_advantage(g.rewards, g.mask, g.index);
}

AdvantageResult rloo_vectorized_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const Grouped g = grouped(in, "rloo_vectorized");
  return compute_rloo_vectorized_outcome_advantage(g.rewards, g.mask, g.index);
}

AdvantageResult opo_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const Grouped g = grouped(in, "opo");
  return compute_opo_outcome_advantage(g.rewards, g.mask, g.index);
}

AdvantageResult reinforce_plus_plus_baseline_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const Grouped g = grouped(in, "reinforce_plus_plus_baseline");
  return compute_reinforce_plus_plus_baseline_outcome_advantage(g.rewards, g.mask, g.index);
}

AdvantageResult gpg_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const Grouped g = grouped(in, "gpg");
  return compute_gpg_outcome_advantage(g.rewards, g.mask, g.index);
}

AdvantageResult reinforce_plus_plus_entry(const AdvantageInputs& in, const AdvantageConfig& c) {
  const char* name = "reinforce_plus_plus";
  return compute_reinforce_plus_plus_outcome_advantage(need(in.token_level_rewards, "token_level_rewards", name),
                                                       need(in.response_mask, "response_mask", name), c.gamma);
}

AdvantageResult remax_entry(const AdvantageInputs& in, const AdvantageConfig&) {
  const char* name = "remax";
  return compute_remax_outcome_advantage(need(in.token_level_rewards, "token_level_rewards", name),
                                         need(in.reward_baselines, "reward_baselines", name),
                                         need(in.response_mask, "response_mask", name));
}

using EntryFn = AdvantageResult (*)(const AdvantageInputs&, const AdvantageConfig&);

void add_builtin(Registry<AdvantageFn>& registry, const char* name, EntryFn fn) {
  registry.add(name, fn, reinterpret_cast<const void*>(fn));
}

}  // namespace

Registry<AdvantageFn>& adv_estimator_registry() {
  static Registry<AdvantageFn>* registry = [] {
    auto* r = new Registry<AdvantageFn>("advantage estimator");  // never destroyed: usable at exit
    add_builtin(*r, "gae", gae_entry);
    add_builtin(*r, "grpo", grpo_entry);
    add_builtin(*r, "grpo_vectorized", grpo_vectorized_entry);
    add_builtin(*r, "grpo_passk", grpo_passk_entry);
    add_builtin(*r, "rloo", rloo_entry);
    add_builtin(*r, "rloo_vectorized", rloo_vectorized_entry);
    add_builtin(*r, "opo", opo_entry);
    add_builtin(*r, "reinforce_plus_plus", reinforce_plus_plus_entry);
    add_builtin(*r, "reinforce_plus_plus_baseline", reinforce_plus_plus_baseline_entry);
    add_builtin(*r, "remax", remax_entry);
    add_builtin(*r, "gpg", gpg_entry);
    add_builtin(*r, "gdpo", detail::gdpo_entry);
    add_builtin(*r, "sppo", detail::sppo_entry);
    add_builtin(*r, "optimal_token_baseline", detail::optimal_token_baseline_entry);
    add_builtin(*r, "tir_optimal_token_baseline", detail::tir_optimal_token_baseline_entry);
    return r;
  }();
  return *registry;
}

void register_adv_est(const std::string& name, AdvantageFn fn, const void* identity) {
  adv_estimator_registry().add(name, std::move(fn), identity);
}

AdvantageFn get_adv_estimator_fn(const std::string& name) { return adv_estimator_registry().get(name); }

}  // namespace verl::algo
