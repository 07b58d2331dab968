// DPO / IPO / hinge preference losses (see dpo_loss.h).
#include "verl/algo/dpo_loss.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::algo {

const std::vector<std::string>& dpo_loss_types() {
  static const std::vector<std::string> types = {"sigmoid", "ipo", "hinge"};
  return types;
}

void check_dpo_loss_config(double beta, double label_smoothing, const std::string& loss_type,
                           const std::string& prefix) {
  const auto& types = dpo_loss_types();
  VERL_CHECK_AS(ConfigError, std::find(types.begin(), types.end(), loss_type) != types.end(), "config key '", prefix,
                ".loss_type' must be one of sigmoid, ipo, hinge, got '", loss_type, "'");
  VERL_CHECK_AS(ConfigError, beta > 0 && std::isfinite(beta), "config key '", prefix, ".beta' must be > 0, got ",
                beta);
  if (loss_type == "sigmoid") {
    VERL_CHECK_AS(ConfigError, label_smoothing >= 0 && label_smoothing <= 0.5, "config key '", prefix,
                  ".label_smoothing' must lie in [0, 0.5] (the probability that a preference label is flipped), got ",
                  label_smoothing);
  } else {
    VERL_CHECK_AS(ConfigError, label_smoothing == 0, "config key '", prefix, ".label_smoothing' applies to ",
                  prefix, ".loss_type=sigmoid only; ", loss_type, " has no smoothing term (got ", label_smoothing,
                  ")");
  }
}

DPOLossOutput dpo_loss(const torch::Tensor& policy_chosen_logps, const torch::Tensor& policy_rejected_logps,
                       const torch::Tensor& ref_chosen_logps, const torch::Tensor& ref_rejected_logps,
                       const torch::Tensor& chosen_lengths, const torch::Tensor& rejected_lengths, double beta,
                       double label_smoothing, const std::string& loss_type) {
  check_dpo_loss_config(beta, label_smoothing, loss_type);
  VERL_CHECK(policy_chosen_logps.defined() && policy_chosen_logps.dim() == 1 &&
                 torch::isFloatingType(policy_chosen_logps.scalar_type()),
             "dpo_loss: policy_chosen_logps must be floating (num_pairs,)");
  const auto n = policy_chosen_logps.sizes();
  for (const auto& [t, name] : {std::pair{&policy_rejected_logps, "policy_rejected_logps"},
                                {&ref_chosen_logps, "ref_chosen_logps"},
                                {&ref_rejected_logps, "ref_rejected_logps"},
                                {&chosen_lengths, "chosen_lengths"},
                                {&rejected_lengths, "rejected_lengths"}}) {
    VERL_CHECK(t->defined() && t->sizes() == n, "dpo_loss: ", name, " must have the shape of policy_chosen_logps ",
               n, ", got ", t->defined() ? t->sizes() : torch::IntArrayRef{});
  }
  const torch::Tensor chosen_logratios = policy_chosen_logps - ref_chosen_logps.detach();
  const torch::Tensor rejected_logratios = policy_rejected_logps - ref_rejected_logps.detach();
  DPOLossOutput out;
  if (loss_type == "ipo") {
    const auto dtype = chosen_logratios.scalar_type();
    const torch::Tensor delta = chosen_logratios / chosen_lengths.to(dtype).clamp_min(1.0) -
                                rejected_logratios / rejected_lengths.to(dtype).clamp_min(1.0);
    out.losses = (delta - 1.0 / (2.0 * beta)).square();
  } else {
    const torch::Tensor scaled = beta * (chosen_logratios - rejected_logratios);
    if (loss_type == "sigmoid") {
      out.losses =
          -torch::log_sigmoid(scaled) * (1.0 - label_smoothing) - torch::log_sigmoid(-scaled) * label_smoothing;
    } else {  // hinge
      out.losses = torch::relu(1.0 - scaled);
    }
  }
  out.chosen_rewards = beta * chosen_logratios.detach();
  out.rejected_rewards = beta * rejected_logratios.detach();
  return out;
}

}  // namespace verl::algo
