// Safe-RLHF (arXiv 2310.12773, PPO-Lagrangian): the Lagrange multiplier's update and the combined advantage of the
// reward and the cost. Used by the PPO trainer (algorithm.safe_rlhf.*) and the bindings.
//
// The constrained problem max E[reward] s.t. E[cost] <= cost_limit becomes min over lambda >= 0 of
// max over pi of E[reward] - lambda * (E[cost] - cost_limit): the policy ascends the combined advantage, lambda
// ascends the constraint violation (projected gradient ascent).
#pragma once

#include <optional>

#include <torch/types.h>

#include "verl/core/config.h"
#include "verl/core/export.h"

namespace verl::algo {

// algorithm.safe_rlhf.*: the constraint and the multiplier's schedule.
struct VERL_API SafeRlhfConfig {
  bool enable = false;
  double cost_limit = 0.0;
  double lambda_init = 1.0;
  double lambda_lr = 0.1;
  std::optional<double> lambda_max;  // null: no upper bound
};

// algorithm.safe_rlhf.* from a verl config, ConfigError naming the key for a bad value -- and for an
// algorithm.adv_estimator with no cost form (estimator_needs(name).cost_form: the cost's advantage is the reward's
// estimator applied to the cost).
VERL_API SafeRlhfConfig safe_rlhf_config(const Config& config);

// lambda <- clamp(lambda + lambda_lr * (mean_cost - cost_limit), 0, lambda_max); no upper bound when lambda_max is
// nullopt. InvalidArgument for non-finite inputs, lambda < 0, lambda_lr < 0 or lambda_max < 0.
VERL_API double update_lagrange_multiplier(double lambda, double mean_cost, double cost_limit, double lambda_lr,
                                           std::optional<double> lambda_max);

// (reward_advantages - lambda * cost_advantages) / (1 + lambda), both (bs, response_length) of one shape and
// dtype; the division keeps the combined advantage on the reward's scale whatever lambda is. lambda >= 0 and
// finite (InvalidArgument otherwise).
VERL_API torch::Tensor safe_rlhf_advantages(const torch::Tensor& reward_advantages,
                                            const torch::Tensor& cost_advantages, double lambda);

}  // namespace verl::algo
