// libFuzzer target: the files of a checkpoint directory besides the weights. The first byte picks the file, the
// rest is its text:
//   0 mod 4: model.safetensors.index.json beside one valid shard (model-00001-of-00001.safetensors holding
//            "w", float32 [2, 2]); the directory is loaded as a sharded checkpoint;
//   2 mod 4: the ZeRO-3 shard layout in a per-rank checkpoint file's metadata (workers/shard_layout.h); a layout
//            that parses is then joined from every rank's state (what the merger and a re-sharding load do);
//   odd:     config.json, parsed as a model config (bounds checked before anything is sized by it).
#include <filesystem>

#include "fuzz_common.h"
#include "verl/model/model_config.h"
#include "verl/model/safetensors.h"
#include "workers/shard_layout.h"

namespace {

std::string checkpoint_dir() {
  static const std::string dir = [] {
    const std::string d = verl::fuzz::scratch_dir() + "/checkpoint";
    std::filesystem::create_directories(d);
    verl::model::save_file(d + "/model-00001-of-00001.safetensors",
                           std::map<std::string, torch::Tensor>{{"w", torch::arange(4, torch::kFloat32).reshape({2, 2})}});
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string_view text = verl::fuzz::as_text(data + 1, size - 1);
  if (data[0] % 4 == 2) {
    verl::fuzz::expect_typed_errors([&] {
      const auto layout = verl::workers::detail::ShardLayout::from_json(
          verl::untrusted::parse_json<verl::CheckpointError>(text, "fuzz/layout"), "fuzz/layout");
      // The files hold world_size * shard_numel elements in all, which bounds what a join allocates.
      if (layout.world_size() * layout.shard_numel() > (1 << 16)) return;
      const auto whole = layout.join([&](int64_t rank) {
        return torch::arange(layout.shard_numel(), torch::kFloat32) + static_cast<float>(rank * layout.shard_numel());
      });
      // And back: each rank's slice of the joined tensors (pack, join's inverse).
      for (size_t r = 0; r < static_cast<size_t>(layout.world_size()); ++r)
        (void)layout.slice(whole, static_cast<int64_t>(r)).sum().item<float>();
    });
  } else if (data[0] % 2 == 0) {
    const std::string dir = checkpoint_dir();
    verl::fuzz::write_scratch("checkpoint/model.safetensors.index.json", text);
    verl::fuzz::expect_typed_errors([&] {
      for (const auto& [name, tensor] : verl::model::load_checkpoint_dir(dir)) (void)tensor.sum().item<float>();
    });
  } else {
    verl::fuzz::expect_typed_errors([&] {
      const auto config = verl::model::ModelConfig::from_json_text(text, "fuzz/config.json");
      (void)config.to_json();
    });
  }
  return 0;
}
