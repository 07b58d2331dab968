// Optimal Token Baseline estimators (see optimal_token_baseline.h). The elementwise and cumulative
// steps are verl's expressions op for op. The per-group sums use the same reduction as verl's
// per-group `.sum(dim=0)`: the rows of all groups of one size are gathered into (groups, size, T)
// and summed over the middle dim, which torch reduces exactly as it reduces each (size, T) group
// alone (its cascade summation depends on the row count, not on the layout), so the baselines are
// bitwise verl's while one reduction serves every group of that size.
#include "verl/algo/optimal_token_baseline.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

void check_input(const char* who, const torch::Tensor& t, const char* name, const torch::Tensor& rewards) {
  VERL_CHECK(t.defined(), who, ": ", name, " is undefined");
  VERL_CHECK(t.is_floating_point(), who, ": ", name, " must be floating point, got ", t.scalar_type());
  check_same_shape(rewards, "token_level_rewards", t, name);
  VERL_CHECK(t.device() == rewards.device(), who, ": ", name, " is on ", t.device(),
             " but token_level_rewards is on ", rewards.device());
  // Whole rows: the cumulative sums carry a NaN anywhere in a row into every later (or earlier) step.
  check_finite(t, name);
}

void validate(const char* who, const torch::Tensor& rewards, const torch::Tensor& mask, const torch::Tensor& index,
              const torch::Tensor& old_log_probs, const torch::Tensor& sum_pi_squared,
              const torch::Tensor& rollout_is_weights) {
  VERL_CHECK(rewards.defined(), who, ": token_level_rewards is undefined");
  VERL_CHECK(rewards.dim() == 2, who, ": token_level_rewards must be (bs, response_length), got shape ",
             rewards.sizes());
  VERL_CHECK(rewards.numel() > 0, who, ": empty batch (token_level_rewards has shape ", rewards.sizes(), ")");
  check_input(who, rewards, "token_level_rewards", rewards);
  VERL_CHECK(mask.defined(), who, ": response_mask is undefined");
  VERL_CHECK(!mask.is_complex(), who, ": response_mask must be bool, integer or floating, got ", mask.scalar_type());
  check_same_shape(rewards, "token_level_rewards", mask, "response_mask");
  VERL_CHECK(mask.device() == rewards.device(), who, ": response_mask is on ", mask.device(),
             " but token_level_rewards is on ", rewards.device());
  check_input(who, old_log_probs, "old_log_probs", rewards);
  // exp(+inf) = inf would reach w; -inf (probability 0) is a valid log-probability.
  VERL_CHECK(!old_log_probs.isnan().any().item<bool>(), who, ": old_log_probs holds NaN");
  check_input(who, sum_pi_squared, "sum_pi_squared", rewards);
  if (rollout_is_weights.defined()) check_input(who, rollout_is_weights, "rollout_is_weights", rewards);
  VERL_CHECK(index.defined(), who, ": index (group ids) is undefined");
  VERL_CHECK(index.dim() == 1 && index.size(0) == rewards.size(0), who, ": index must have shape [",
             rewards.size(0), "] (one group id per row), got ", index.sizes());
  VERL_CHECK(!index.is_floating_point() && !index.is_complex() && index.scalar_type() != torch::kBool, who,
             ": index must hold integer group ids, got ", index.scalar_type());
}

// The returns (reward-to-go) and the cumulative path-variance proxy W, as verl computes them.
struct PathVariance {
  torch::Tensor returns, w_cumulative;
};

PathVariance path_variance(const torch::Tensor& rewards, const torch::Tensor& mask, const torch::Tensor& old_log_probs,
                           const torch::Tensor& sum_pi_squared, const torch::Tensor& rollout_is_weights) {
  PathVariance p;
  p.returns = (rewards * mask).flip({-1}).cumsum(-1).flip({-1});
  const torch::Tensor pi_t = torch::exp(old_log_probs);
  torch::Tensor w = 1 - 2 * pi_t + sum_pi_squared;
  if (rollout_is_weights.defined()) w = w * rollout_is_weights.pow(2);
  p.w_cumulative = (w * mask).cumsum(-1);
  return p;
}

// Rows grouped by id in order of first appearance, each group's rows ascending (verl's
// defaultdict(list) over the batch). Rows with include[i] == false are left out.
std::vector<std::vector<int64_t>> prompt_groups(const torch::Tensor& index, const std::vector<bool>& include) {
  const torch::Tensor ids = index.to(torch::kCPU, torch::kLong).contiguous();
  const int64_t* id = ids.data_ptr<int64_t>();
  std::unordered_map<int64_t, size_t> slot;
  std::vector<std::vector<int64_t>> groups;
  for (int64_t i = 0; i < ids.numel(); ++i) {
    if (!include[static_cast<size_t>(i)]) continue;
    auto [it, fresh] = slot.emplace(id[i], groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

// baselines[rows of g] = sum_g(numerator) / (sum_g(denominator) + epsilon) for every group of >= 2
// rows (singletons keep baseline 0), cast to the baselines' dtype as verl's indexed assignment does.
void assign_group_baselines(torch::Tensor& baselines, const torch::Tensor& numerator, const torch::Tensor& denominator,
                            const std::vector<std::vector<int64_t>>& groups, double epsilon) {
  std::map<size_t, std::vector<int64_t>> rows_by_size;  // group size -> rows, group after group
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    auto& rows = rows_by_size[g.size()];
    rows.insert(rows.end(), g.begin(), g.end());
  }
  const int64_t T = baselines.size(1);
  for (const auto& [size, rows] : rows_by_size) {
    const auto n = static_cast<int64_t>(size);
    const int64_t num_groups = static_cast<int64_t>(rows.size()) / n;
    const torch::Tensor idx = torch::tensor(rows, torch::kLong).to(baselines.device());
    const torch::Tensor num = numerator.index_select(0, idx).view({num_groups, n, T}).sum(1);
    const torch::Tensor den = denominator.index_select(0, idx).view({num_groups, n, T}).sum(1) + epsilon;
    const torch::Tensor per_step = num / den;  // (num_groups, T)
    baselines.index_copy_(0, idx,
                          per_step.unsqueeze(1).expand({num_groups, n, T}).reshape({num_groups * n, T})
                              .to(baselines.scalar_type()));
  }
}

// handle_zero_tail: the row that is strictly the longest of its group gets baseline 0 from the
// second-longest length on. lengths as verl reads them (then truncated to integers by int()).
void zero_tails(torch::Tensor& baselines, const std::vector<double>& lengths,
                const std::vector<std::vector<int64_t>>& groups) {
  const int64_t T = baselines.size(1);
  std::vector<int64_t> cut(lengths.size(), T);
  bool any = false;
  for (const auto& g : groups) {
    if (g.size() < 2) continue;
    std::vector<double> sorted;
    for (int64_t r : g) sorted.push_back(lengths[static_cast<size_t>(r)]);
    std::sort(sorted.begin(), sorted.end());
    const double max_length = std::trunc(sorted.back());
    const double second_max_length = std::trunc(sorted[sorted.size() - 2]);
    int64_t at_max = 0, longest = -1;
    for (int64_t r : g) {
      if (lengths[static_cast<size_t>(r)] == max_length) {
        ++at_max;
        longest = r;
      }
    }
    if (at_max == 1 && max_length > second_max_length) {
      cut[static_cast<size_t>(longest)] = static_cast<int64_t>(second_max_length);
      any = true;
    }
  }
  if (!any) return;
  const torch::Tensor cut_t = torch::tensor(cut, torch::kLong).to(baselines.device());
  const torch::Tensor tail = torch::arange(T, cut_t.options()).unsqueeze(0) >= cut_t.unsqueeze(1);
  baselines.masked_fill_(tail, 0.0);
}

std::vector<double> host_values(const torch::Tensor& t) {
  const torch::Tensor c = t.to(torch::kCPU, torch::kDouble).contiguous();
  return {c.data_ptr<double>(), c.data_ptr<double>() + c.numel()};
}

}  // namespace

AdvantageResult compute_optimal_token_baseline_advantage(const torch::Tensor& token_level_rewards,
                                                         const torch::Tensor& response_mask,
                                                         const torch::Tensor& index,
                                                         const torch::Tensor& old_log_probs,
                                                         const torch::Tensor& sum_pi_squared,
                                                         const torch::Tensor& rollout_is_weights,
                                                         bool handle_zero_tail, double epsilon) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_optimal_token_baseline_advantage";
  validate(who, token_level_rewards, response_mask, index, old_log_probs, sum_pi_squared, rollout_is_weights);
  const torch::Tensor& mask = response_mask;
  const PathVariance p = path_variance(token_level_rewards, mask, old_log_probs, sum_pi_squared, rollout_is_weights);
  const auto groups = prompt_groups(index, std::vector<bool>(static_cast<size_t>(mask.size(0)), true));
  torch::Tensor baselines = torch::zeros_like(p.returns);
  assign_group_baselines(baselines, p.returns * p.w_cumulative * mask, p.w_cumulative * mask, groups, epsilon);
  if (handle_zero_tail) zero_tails(baselines, host_values(mask.sum(-1)), groups);
  return {(p.returns - baselines) * mask, p.returns};
}

AdvantageResult compute_multi_turn_optimal_token_baseline_advantage(const torch::Tensor& token_level_rewards,
                                                                    const torch::Tensor& response_mask,
                                                                    const torch::Tensor& index,
                                                                    const torch::Tensor& old_log_probs,
                                                                    const torch::Tensor& sum_pi_squared,
                                                                    const torch::Tensor& rollout_is_weights,
                                                                    bool handle_zero_tail, double epsilon) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_multi_turn_optimal_token_baseline_advantage";
  validate(who, token_level_rewards, response_mask, index, old_log_probs, sum_pi_squared, rollout_is_weights);
  const torch::Tensor& mask = response_mask;
  const PathVariance p = path_variance(token_level_rewards, mask, old_log_probs, sum_pi_squared, rollout_is_weights);

  // Squeeze each row's response tokens to the left: position t of a squeezed row is its t-th token.
  const torch::Tensor valid = mask.to(torch::kBool);
  const torch::Tensor lengths = mask.sum(-1).to(torch::kLong);
  VERL_CHECK(torch::equal(lengths, valid.sum(-1)), who,
             ": response_mask must hold 0/1 values (its row sums count the response tokens)");
  const std::vector<double> host_lengths = host_values(lengths);
  const int64_t bs = mask.size(0);
  const int64_t max_length =
      static_cast<int64_t>(*std::max_element(host_lengths.begin(), host_lengths.end()));
  const torch::Tensor rows_cols = valid.nonzero();  // (tokens, 2), row-major: each row's tokens in order
  const torch::Tensor rows = rows_cols.select(1, 0), cols = rows_cols.select(1, 1);
  const torch::Tensor slots = (valid.cumsum(-1) - 1).index({rows, cols});  // squeezed position of each token
  torch::Tensor all_w = p.w_cumulative.new_zeros({bs, max_length});
  torch::Tensor all_returns = torch::zeros_like(all_w);
  all_w.index_put_({rows, slots}, p.w_cumulative.index({rows, cols}));
  all_returns.index_put_({rows, slots}, p.returns.index({rows, cols}).to(all_returns.scalar_type()));

  std::vector<bool> has_tokens(static_cast<size_t>(bs));
  for (int64_t i = 0; i < bs; ++i) has_tokens[static_cast<size_t>(i)] = host_lengths[static_cast<size_t>(i)] > 0;
  const auto groups = prompt_groups(index, has_tokens);
  torch::Tensor baselines = torch::zeros_like(all_returns);
  assign_group_baselines(baselines, all_returns * all_w, all_w, groups, epsilon);
  if (handle_zero_tail) zero_tails(baselines, host_lengths, groups);
  const torch::Tensor all_advantages = all_returns - baselines;

  torch::Tensor advantages = torch::zeros_like(p.returns);
  advantages.index_put_({rows, cols}, all_advantages.index({rows, slots}).to(advantages.scalar_type()));
  return {advantages * mask, p.returns};
}

}  // namespace verl::algo
