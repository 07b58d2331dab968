// Hugging Face safetensors files: a memory-mapped, strictly validated reader, an atomic writer,
// and sharded checkpoint directories (index json). Used by the model loader and verl._C.model.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "verl/core/export.h"

namespace verl::model {

// One header entry. Offsets are relative to the start of the data section (after the header).
struct VERL_API TensorInfo {
  std::string dtype;            // safetensors spelling: "F32", "BF16", "I64", ...
  torch::ScalarType scalar_type;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

// Named tensors in a caller-chosen order (the order decides how save_sharded splits shards,
// as a state_dict's order does in transformers).
using NamedTensors = std::vector<std::pair<std::string, torch::Tensor>>;
using Metadata = std::map<std::string, std::string>;

// torch dtype <-> safetensors dtype string. Unknown strings / unsupported dtypes throw
// verl::CheckpointError / verl::InvalidArgument.
VERL_API torch::ScalarType scalar_type_from_safetensors(const std::string& dtype);
VERL_API std::string safetensors_dtype(torch::ScalarType type);

// A .safetensors file opened read-only and memory-mapped. The whole header is validated in the
// constructor (the same rules as HF safetensors: every byte of the data section belongs to exactly
// one tensor), so get() cannot meet a malformed entry. Any failure is a verl::CheckpointError
// naming the file (and the tensor). Thread-safe after construction.
class VERL_API SafeTensorsFile {
 public:
  explicit SafeTensorsFile(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  // Tensor names, sorted.
  std::vector<std::string> keys() const;
  bool contains(const std::string& name) const { return infos_.count(name) != 0; }
  const TensorInfo& info(const std::string& name) const;
  // The header's "__metadata__" (empty when absent; has_metadata() tells absent from empty).
  const Metadata& metadata() const { return metadata_; }
  bool has_metadata() const { return has_metadata_; }

  // The tensor on CPU. Zero-copy (a view of the mapping that keeps it alive) when its data is
  // aligned for the dtype, else a copy. The mapping is private copy-on-write: writing to a
  // returned tensor never changes the file, and never faults.
  torch::Tensor get(const std::string& name) const;
  // Whether get(name) returns a view of the mapping rather than a copy.
  bool is_zero_copy(const std::string& name) const;
  std::map<std::string, torch::Tensor> load_all() const;

  // The mapped bytes of the whole file (for tests that check where views point).
  const uint8_t* mapping_begin() const;
  size_t mapping_size() const;

 private:
  struct Mapping;
  const uint8_t* data_of(const TensorInfo& info) const;

  std::filesystem::path path_;
  std::shared_ptr<Mapping> mapping_;
  uint64_t data_start_ = 0;  // 8 + header length
  std::map<std::string, TensorInfo> infos_;
  Metadata metadata_;
  bool has_metadata_ = false;
};

// Writes the tensors (moved to CPU, made contiguous) in HF's layout: header padded with spaces to
// 8 bytes, data ordered by dtype size (largest first) then name, so every tensor is aligned and
// the bytes equal HF safetensors' save_file for the same input. Written to a temporary file in the
// same directory and renamed over `path`, so readers never see a partial file.
VERL_API void save_file(const std::filesystem::path& path, const std::map<std::string, torch::Tensor>& tensors,
                        const Metadata& metadata = {});
VERL_API void save_file(const std::filesystem::path& path, const NamedTensors& tensors, const Metadata& metadata = {});

// Convenience: SafeTensorsFile(path).load_all().
VERL_API std::map<std::string, torch::Tensor> load_file(const std::filesystem::path& path);

inline constexpr const char* kSafeWeightsName = "model.safetensors";
inline constexpr const char* kSafeWeightsIndexName = "model.safetensors.index.json";

// The weights of a Hugging Face checkpoint directory, opened but not read: model.safetensors, or
// else the shards listed by model.safetensors.index.json's weight_map (the weight_map decides
// which tensors there are). Opening maps every file and validates every header, and nothing
// else: no tensor data is touched or allocated, so callers can compare names and shapes with
// what they expect (load_pretrained: with config.json) before committing memory.
// The index is untrusted: a shard name must be a plain file name inside `dir` (not empty, ".",
// "..", a path with '/', or longer than 255 bytes); a shard FILE may be a symlink (the HF hub
// cache links snapshots to ../../blobs). Every failure (a missing shard, a tensor missing from its
// shard, a symlink loop, invalid or too deeply nested JSON) is a CheckpointError naming the file.
class VERL_API SafeTensorsDir {
 public:
  explicit SafeTensorsDir(const std::filesystem::path& dir);

  // model.safetensors, or the index json of a sharded checkpoint: the file to name in messages.
  const std::filesystem::path& weights_path() const { return weights_path_; }
  // Tensor names, sorted.
  std::vector<std::string> keys() const;
  bool contains(const std::string& name) const { return files_.count(name) != 0; }
  // The header entry of `name` (dtype, shape) and the file holding it; CheckpointError if absent.
  const TensorInfo& info(const std::string& name) const;
  const SafeTensorsFile& file(const std::string& name) const;
  // As SafeTensorsFile::get / load_all.
  torch::Tensor get(const std::string& name) const;
  std::map<std::string, torch::Tensor> load_all() const;

 private:
  std::filesystem::path weights_path_;
  std::map<std::string, std::shared_ptr<const SafeTensorsFile>> files_;  // tensor name -> its file
};

// Convenience: SafeTensorsDir(dir).load_all().
VERL_API std::map<std::string, torch::Tensor> load_checkpoint_dir(const std::filesystem::path& dir);

// Saves as transformers' save_pretrained does: shards split by huggingface_hub's rule (in the
// given order; a tensor is counted by nbytes; one larger than max_shard_bytes gets a shard of its
// own), model-00001-of-0000N.safetensors with metadata {"format": "pt"}, and the index json
// (indent 2, sorted keys, metadata.total_parameters and metadata.total_size). One shard is saved
// as model.safetensors without an index. Returns the files written (shards, then the index).
VERL_API std::vector<std::filesystem::path> save_sharded(const std::filesystem::path& dir, const NamedTensors& tensors,
                                                         int64_t max_shard_bytes);

}  // namespace verl::model
