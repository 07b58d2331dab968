// The frozen reference policy (see reference_policy.h).
#include "trainer/reference_policy.h"

#include <torch/torch.h>

namespace verl::trainer::detail {

std::shared_ptr<model::CausalLM> copy_as_reference(const model::CausalLM& policy, bool merge_adapters) {
  auto ref = std::make_shared<model::CausalLM>(policy.config(), model::HeadKind::kLanguageModel);
  ref->to(policy.device(), policy.dtype());
  const bool adapters = policy.lora() && !merge_adapters;
  if (adapters) ref->add_adapters(*policy.lora(), /*seed=*/0);  // the policy's values are copied in below
  torch::NoGradGuard no_grad;
  ref->load_state_dict(policy.lora() && !adapters ? policy.merged_state() : policy.named_state(), /*strict=*/true);
  for (auto& p : ref->parameters()) p.set_requires_grad(false);
  return ref;
}

}  // namespace verl::trainer::detail
