// The frozen reference policy of the PPO (KL) and DPO trainers: the policy's current weights in a separate module.
// Private to libverl.
#pragma once

#include <memory>

#include "verl/model/transformer.h"

namespace verl::trainer::detail {

// A copy of `policy`'s weights (LM head, same device and dtype) whose parameters do not require gradients.
std::shared_ptr<model::CausalLM> copy_as_reference(const model::CausalLM& policy);

}  // namespace verl::trainer::detail
