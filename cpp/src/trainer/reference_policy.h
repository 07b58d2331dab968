// The frozen reference policy of the PPO (KL) and DPO trainers: the policy's current weights in a separate module.
// Private to libverl.
#pragma once

#include <memory>

#include "verl/model/transformer.h"

namespace verl::trainer::detail {

// A copy of `policy`'s weights (LM head, same device and dtype) whose parameters do not require gradients; its LoRA
// adapters copied as adapters, or with `merge_adapters` folded into a plain model (CausalLM::merged_state).
std::shared_ptr<model::CausalLM> copy_as_reference(const model::CausalLM& policy, bool merge_adapters = false);

}  // namespace verl::trainer::detail
