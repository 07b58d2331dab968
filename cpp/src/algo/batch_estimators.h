// The built-in advantage estimators that read more of the batch than the rewards, the mask and the groups -- GDPO
// (the reward function's components), SPPO (algorithm.sppo_eta) and the optimal token baselines (the old policy's
// log-probs and sum of pi^2) -- as registry entries over AdvantageInputs' optional fields (verl/algo/advantage.h).
// Private to libverl; advantage.cpp registers them.
#pragma once

#include "verl/algo/advantage.h"

namespace verl::algo::detail {

AdvantageResult gdpo_entry(const AdvantageInputs& in, const AdvantageConfig& config);
AdvantageResult sppo_entry(const AdvantageInputs& in, const AdvantageConfig& config);
AdvantageResult optimal_token_baseline_entry(const AdvantageInputs& in, const AdvantageConfig& config);
AdvantageResult tir_optimal_token_baseline_entry(const AdvantageInputs& in, const AdvantageConfig& config);

}  // namespace verl::algo::detail
