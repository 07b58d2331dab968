// Per-rank checkpoint files of a ZeRO-3 model, as verl's FSDP checkpoint manager writes them: over N ranks, each rank
// writes its own shard of the model's master weights and of the AdamW state, and nothing ever gathers the whole model
// to save it. A model's directory (global_step_K/actor/, .../critic/) then holds
//   config.json, generation_config.json, tokenizer files    rank 0 (what a Hugging Face directory has, less weights)
//   model_world_size_N_rank_r.safetensors                   rank r's flat master weights ("weights"); its metadata
//                                                           holds the layout (workers/shard_layout.h: the parameters'
//                                                           names and shapes, N, the rollout's TP size t)
//   optim_world_size_N_rank_r.safetensors                   rank r's AdamW moments ("exp_avg", "exp_avg_sq" and, with
//                                                           amsgrad, "max_exp_avg_sq") and the step counts
// safetensors rather than verl's pickled .pt files: loading a checkpoint never runs code from it.
// Loading at the same N and t reads only the rank's own files (bit-identical resume); at any other layout -- another
// N, another t, one process -- every rank joins the files into the whole tensors and keeps its own slice.
// `python -m verl.model_merger merge --backend fsdp --local_dir .../actor --target_dir hf/` joins them into a Hugging
// Face checkpoint (load_sharded_pretrained).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "verl/core/export.h"
#include "verl/model/transformer.h"

namespace verl::workers {

// "model_world_size_<N>_rank_<r>.safetensors", "optim_world_size_<N>_rank_<r>.safetensors".
VERL_API std::string model_shard_file_name(int64_t world_size, int64_t rank);
VERL_API std::string optim_shard_file_name(int64_t world_size, int64_t rank);

// Whether `dir` holds per-rank shard files (a rank-0 model file).
VERL_API bool is_sharded_checkpoint(const std::filesystem::path& dir);

// The whole weights of a sharded checkpoint directory by HF name, in the dtype they were saved in (the master dtype),
// joined from every rank's file. CheckpointError naming the file when one is missing, malformed or inconsistent with
// the others.
VERL_API std::map<std::string, torch::Tensor> load_sharded_weights(const std::filesystem::path& dir);

// The model a sharded checkpoint directory holds: config.json and the joined weights, as model::load_pretrained
// reads a Hugging Face directory (dtype: nullopt = the saved one; the same strict name and shape checks).
VERL_API std::shared_ptr<model::CausalLM> load_sharded_pretrained(const std::filesystem::path& dir,
                                                                  std::optional<torch::Dtype> dtype = {},
                                                                  torch::Device device = torch::kCPU,
                                                                  model::HeadKind head = model::HeadKind::kLanguageModel);

}  // namespace verl::workers
