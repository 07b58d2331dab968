// Safe-RLHF's multiplier update and combined advantage (see safe_rlhf.h).
#include "verl/algo/safe_rlhf.h"

#include <algorithm>
#include <cmath>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {

double update_lagrange_multiplier(double lambda, double mean_cost, double cost_limit, double lambda_lr,
                                  std::optional<double> lambda_max) {
  VERL_CHECK(std::isfinite(lambda) && lambda >= 0, "safe_rlhf: lambda must be a finite number >= 0, got ", lambda);
  VERL_CHECK(std::isfinite(mean_cost), "safe_rlhf: the mean cost is not finite (", mean_cost, ")");
  VERL_CHECK(std::isfinite(cost_limit), "safe_rlhf: cost_limit must be finite, got ", cost_limit);
  VERL_CHECK(std::isfinite(lambda_lr) && lambda_lr >= 0, "safe_rlhf: lambda_lr must be a finite number >= 0, got ",
             lambda_lr);
  VERL_CHECK(!lambda_max || (std::isfinite(*lambda_max) && *lambda_max >= 0),
             "safe_rlhf: lambda_max must be null or a finite number >= 0, got ", lambda_max.value_or(0.0));
  double next = std::max(0.0, lambda + lambda_lr * (mean_cost - cost_limit));
  if (lambda_max) next = std::min(next, *lambda_max);
  return next;
}

torch::Tensor safe_rlhf_advantages(const torch::Tensor& reward_advantages, const torch::Tensor& cost_advantages,
                                   double lambda) {
  VERL_CHECK(std::isfinite(lambda) && lambda >= 0, "safe_rlhf: lambda must be a finite number >= 0, got ", lambda);
  VERL_CHECK(reward_advantages.defined() && cost_advantages.defined(),
             "safe_rlhf_advantages: both advantages are required");
  check_same_shape(reward_advantages, "reward_advantages", cost_advantages, "cost_advantages");
  VERL_CHECK(reward_advantages.scalar_type() == cost_advantages.scalar_type(), "safe_rlhf_advantages: the reward's ",
             reward_advantages.scalar_type(), " and the cost's ", cost_advantages.scalar_type(), " advantages differ");
  return (reward_advantages - lambda * cost_advantages) / (1.0 + lambda);
}

}  // namespace verl::algo
