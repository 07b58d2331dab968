// What verl-cpp does with each key of the config trees (ppo_trainer.yaml, sft_trainer.yaml): every leaf is
// honoured, refused or of no effect here, in one table. Config::validate() raises on refused keys; the Python
// package prints the table (`main_ppo --explain KEY`, docs/config.md) and its tests walk the trees against it.
//
// The three classes:
//   honoured  -- the trainer reads the key and does what verl does with it.
//   refused   -- not supported yet: a value other than the default raises ConfigError naming the key. "Other"
//                means: the stored value is not the default's (an interpolation left as written counts as the
//                default), its resolved value differs from the default's resolved value, and -- for entries
//                with `same_as` -- it differs from that key's value (dtype spellings fp32/float32, bf16/bfloat16,
//                fp16/float16 compare equal).
//   no effect -- a switch of verl's backends (Ray, vLLM, FSDP, torch.compile, Liger, ...) that has no meaning in
//                verl-cpp; any value is accepted and `reason` says why it changes nothing here.
#pragma once

#include <string>
#include <vector>

#include "verl/core/export.h"

namespace verl::config_keys {

enum class KeyClass { kHonoured, kRefused, kNoEffect };

struct KeyEntry {
  std::string key;      // a dotted path: a leaf, or a map whose leaves all share this class
  KeyClass cls;
  std::string reason;   // refused: what is not supported; no effect: why; honoured: an optional note
  std::string same_as;  // refused only: a key whose value is also accepted (critic.model.path -> the actor's)
};

// Every entry of the PPO tree (sft = false) or the SFT tree (sft = true), grouped by section. No entry lies
// inside another; each default leaf is covered by exactly one (tests/python/core/test_config_keys.py).
VERL_API const std::vector<KeyEntry>& entries(bool sft);

// The entry covering `key` (the entry itself or the map entry above it); nullptr when none does.
VERL_API const KeyEntry* find_entry(const std::string& key, bool sft);

// "honoured", "refused", "no effect".
VERL_API const char* class_name(KeyClass cls);

}  // namespace verl::config_keys
