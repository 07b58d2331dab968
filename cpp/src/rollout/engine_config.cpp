// The rollout engine's settings from verl's config keys (see verl/rollout/engine.h).
#include "verl/core/error.h"
#include "verl/rollout/engine.h"

namespace verl::rollout {

EngineConfig engine_config_from(const Config& config) {
  const std::string r = "actor_rollout_ref.rollout.";
  EngineConfig ec;
  ec.max_num_seqs = config.get_as<int64_t>(r + "max_num_seqs");
  ec.max_num_batched_tokens = config.get_as<int64_t>(r + "max_num_batched_tokens");
  const Json max_model_len = config.get(r + "max_model_len");
  ec.max_model_len = max_model_len.is_null()
                         ? config.get_as<int64_t>(r + "prompt_length") + config.get_as<int64_t>(r + "response_length")
                         : max_model_len.get<int64_t>();
  ec.seed = static_cast<uint64_t>(config.get_as<int64_t>(r + "seed"));
  ec.enable_prefix_caching = config.get_as<bool>(r + "enable_prefix_caching");
  ec.enforce_eager = config.get_as<bool>(r + "enforce_eager");
  const Json capture_sizes = config.get(r + "cudagraph_capture_sizes");
  if (!capture_sizes.is_null()) {
    VERL_CHECK_AS(ConfigError, capture_sizes.is_array(), r, "cudagraph_capture_sizes must be null or a list of "
                  "batch sizes, got ", capture_sizes.dump());
    for (const Json& s : capture_sizes) {
      VERL_CHECK_AS(ConfigError, s.is_number_integer() && s.get<int64_t>() >= 1, r,
                    "cudagraph_capture_sizes: each size must be an integer >= 1, got ", s.dump());
      ec.cudagraph_capture_sizes.push_back(s.get<int64_t>());
    }
  }
  return ec;
}

}  // namespace verl::rollout
