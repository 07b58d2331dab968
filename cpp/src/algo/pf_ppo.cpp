// PF-PPO resampling weights and draws (see pf_ppo.h), verl's compute_weights and multinomial call.
#include "verl/algo/pf_ppo.h"

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {

torch::Tensor pf_ppo_weights(const torch::Tensor& scores, const std::string& reweight_method, double weight_pow) {
  torch::NoGradGuard no_grad;
  VERL_CHECK(scores.defined() && scores.dim() == 1 && scores.numel() > 0,
             "pf_ppo_weights: scores must be a non-empty (bs,) tensor");
  torch::Tensor weights;
  if (reweight_method == "pow") {
    weights = torch::pow(torch::abs(scores), weight_pow);
  } else if (reweight_method == "max_min") {
    const torch::Tensor extreme = (scores == torch::max(scores)) | (scores == torch::min(scores));
    weights = torch::where(extreme, 1.0, 0.0);
  } else if (reweight_method == "max_random") {
    weights = torch::where(scores == torch::max(scores), 0.4, 0.1);
  } else {
    VERL_FAIL(InvalidArgument, "Unsupported reweight_method: ", reweight_method,
              " (pf_ppo.reweight_method is one of pow, max_min, max_random)");
  }
  return torch::clamp(weights + 1e-8, 1e-8);
}

torch::Tensor pf_ppo_sample_indices(const torch::Tensor& token_level_scores, const std::string& reweight_method,
                                    double weight_pow, std::optional<at::Generator> generator) {
  torch::NoGradGuard no_grad;
  const char* who = "compute_pf_ppo_reweight_data";
  VERL_CHECK(token_level_scores.defined() && token_level_scores.dim() == 2 && token_level_scores.numel() > 0, who,
             ": token_level_scores must be a non-empty (bs, response_length) tensor, got ",
             token_level_scores.defined() ? token_level_scores.sizes() : torch::IntArrayRef{});
  VERL_CHECK(token_level_scores.is_floating_point(), who, ": token_level_scores must be floating point, got ",
             token_level_scores.scalar_type());
  check_finite(token_level_scores, "token_level_scores");
  const torch::Tensor scores = token_level_scores.sum(-1);
  const torch::Tensor weights = pf_ppo_weights(scores, reweight_method, weight_pow);
  VERL_CHECK(torch::isfinite(weights).all().item<bool>(), who, ": pf_ppo weights |score|^", weight_pow,
             " overflow (Inf); lower pf_ppo.weight_pow");
  return torch::multinomial(weights, scores.size(0), /*replacement=*/true, generator);
}

}  // namespace verl::algo
