// The pairwise preference losses of Direct Preference Optimization, on sequence log-probs of the policy and a
// frozen reference: DPO (`sigmoid`, with conservative-DPO label smoothing), IPO (`ipo`) and SLiC's `hinge`, with
// TRL's names (DPOConfig.loss_type, beta, label_smoothing) and formulas. Used by trainer/dpo_trainer.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::algo {

// TRL's DPOConfig.loss_type values verl-cpp implements.
VERL_API const std::vector<std::string>& dpo_loss_types();

// ConfigError (naming `prefix`.beta / .label_smoothing / .loss_type) unless beta > 0, loss_type is one of
// dpo_loss_types(), label_smoothing lies in [0, 0.5] for `sigmoid`, and label_smoothing is 0 for `ipo` and `hinge`
// (their formulas have no smoothing term; a value there would be accepted and ignored).
VERL_API void check_dpo_loss_config(double beta, double label_smoothing, const std::string& loss_type,
                                    const std::string& prefix = "dpo");

struct VERL_API DPOLossOutput {
  torch::Tensor losses;            // (num_pairs,) per-pair loss, differentiable in the policy log-probs
  torch::Tensor chosen_rewards;    // (num_pairs,) beta * (policy - reference) log-prob of the chosen sequence, detached
  torch::Tensor rejected_rewards;  // (num_pairs,) the same for the rejected sequence, detached
};

// All inputs (num_pairs,), floating: the summed log-probs of each pair's completion tokens under the policy
// (differentiable) and the reference, and the number of completion tokens (used by `ipo` only). With
//   chosen_logratio = policy_chosen - ref_chosen, rejected_logratio = policy_rejected - ref_rejected,
//   delta = chosen_logratio - rejected_logratio:
//   sigmoid: -(1 - ls) * log sigmoid(beta * delta) - ls * log sigmoid(-beta * delta)   (DPO; ls > 0: cDPO)
//   hinge:   relu(1 - beta * delta)                                                    (SLiC)
//   ipo:     (chosen_logratio / max(chosen_len, 1) - rejected_logratio / max(rejected_len, 1) - 1 / (2 beta))^2
//            (IPO's eq. 17 on length-averaged log-ratios, as TRL computes it)
// Rewards are beta * logratio (summed, for every loss type: TRL's rewards/* metrics). InvalidArgument for
// mismatched shapes; check_dpo_loss_config's ConfigError for bad parameters.
VERL_API DPOLossOutput dpo_loss(const torch::Tensor& policy_chosen_logps, const torch::Tensor& policy_rejected_logps,
                                const torch::Tensor& ref_chosen_logps, const torch::Tensor& ref_rejected_logps,
                                const torch::Tensor& chosen_lengths, const torch::Tensor& rejected_lengths,
                                double beta, double label_smoothing, const std::string& loss_type);

}  // namespace verl::algo
