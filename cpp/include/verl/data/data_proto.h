// DataProto: the batch that flows between every stage of a step (rollout -> reward -> log-prob ->
// advantage -> update), with verl's names and semantics. Used by workers, trainer and bindings.
//
// A DataProto holds
//   batch            named tensors sharing the first (batch) dimension, e.g.
//                    input_ids (bs, seq_len) int64, responses (bs, response_length) int64
//   non_tensor_batch named columns of JSON values, one per row (uid strings, data_source, ...)
//   meta_info        a JSON object for the whole batch (temperature, metrics, ...)
// Operations never copy tensor storage unless they must reorder rows (select_idxs, repeat, ...):
// slice, split, chunk and select return views of the same storage.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"
#include "verl/core/json.h"

namespace verl {

class VERL_API DataProto {
 public:
  using TensorMap = std::map<std::string, torch::Tensor>;
  using Column = std::vector<Json>;
  using ColumnMap = std::map<std::string, Column>;

  // meta_info key that turns on auto-padding for chunk() (verl's DataProtoConfig.auto_padding_key).
  static constexpr const char* kAutoPaddingKey = "_verl_auto_padding";

  DataProto() = default;
  // Checks consistency (every tensor and column has the same number of rows, tensors have at
  // least one dimension, meta_info is an object). Throws DataError naming the offending key.
  explicit DataProto(TensorMap batch, ColumnMap non_tensor_batch = {}, Json meta_info = Json::object());

  // verl's DataProto.from_dict; auto_padding sets meta_info[kAutoPaddingKey] = true.
  static DataProto from_dict(TensorMap tensors, ColumnMap non_tensors = {}, Json meta_info = Json::object(),
                             bool auto_padding = false);

  // Number of rows (0 for an empty DataProto).
  int64_t size() const;
  const TensorMap& batch() const { return batch_; }
  const ColumnMap& non_tensor_batch() const { return non_tensor_batch_; }
  const Json& meta_info() const { return meta_info_; }
  Json& meta_info() { return meta_info_; }

  // Tensor / column access; throws DataError naming the missing key and the keys present.
  const torch::Tensor& tensor(const std::string& key) const;
  const Column& column(const std::string& key) const;
  bool has_tensor(const std::string& key) const { return batch_.count(key) != 0; }
  bool has_column(const std::string& key) const { return non_tensor_batch_.count(key) != 0; }
  // Adds or replaces a tensor / column; its row count must match size() unless the DataProto is empty.
  void set_tensor(const std::string& key, torch::Tensor value);
  void set_column(const std::string& key, Column value);

  // Throws DataError if rows disagree or meta_info is not an object.
  void check_consistency() const;

  // Keys not given are kept whole; deepcopy clones tensors and columns.
  DataProto select(const std::optional<std::vector<std::string>>& batch_keys = std::nullopt,
                   const std::optional<std::vector<std::string>>& non_tensor_batch_keys = std::nullopt,
                   const std::optional<std::vector<std::string>>& meta_info_keys = std::nullopt,
                   bool deepcopy = false) const;
  // Rows by index tensor (int, negatives allowed) or bool mask; see row_plan::selection_rows.
  DataProto select_idxs(const torch::Tensor& idxs) const;
  // Python slice semantics, views of the same storage.
  DataProto slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                  std::optional<int64_t> step = std::nullopt) const;
  // Moves the named entries out of this DataProto into a new one.
  DataProto pop(const std::vector<std::string>& batch_keys, const std::vector<std::string>& non_tensor_batch_keys = {},
                const std::vector<std::string>& meta_info_keys = {});
  // Renames tensors of the batch (verl renames only tensors); returns *this.
  DataProto& rename(const std::vector<std::string>& old_keys, const std::vector<std::string>& new_keys);
  // Adds other's entries; a key present in both must hold equal values (tensors: same shape and
  // values, NaN equal to NaN; columns and meta_info: equal JSON), else DataError. Returns *this.
  DataProto& union_with(const DataProto& other);
  // Rows of all parts in order; meta_info merged (equal values required), "metrics" gathered
  // into a dict of lists as verl does. Every part must have the same tensor and column keys.
  static DataProto concat(const std::vector<DataProto>& parts);
  // `chunks` pieces along the rows; uneven sizes only when auto-padding is enabled.
  std::vector<DataProto> chunk(int64_t chunks) const;
  // Pieces of split_size rows (the last may be shorter).
  std::vector<DataProto> split(int64_t split_size) const;
  // repeat(2, interleave=true): rows a,b -> a,a,b,b; interleave=false: a,b,a,b.
  DataProto repeat(int64_t repeat_times = 2, bool interleave = true) const;
  // Reorders rows in place by a permutation of indices (verl's reorder is in-place too).
  void reorder(const torch::Tensor& indices);
  // Mini-batches for ppo_epochs x mini-batch loops; see row_plan::iterator_rows. Each carries
  // meta_info. shuffle defaults to "a seed was given" (a seed asks for a seeded shuffle).
  std::vector<DataProto> make_iterator(int64_t mini_batch_size, int64_t epochs,
                                       std::optional<uint64_t> seed = std::nullopt,
                                       std::optional<bool> shuffle = std::nullopt) const;
  // Moves every tensor to `device` (non_blocking copies when possible).
  DataProto to(const torch::Device& device) const;
  // Whether chunk() may split unevenly: meta_info[kAutoPaddingKey] or env VERL_AUTO_PADDING=1|true.
  bool is_padding_enabled() const;

  // One file, readable by load_from_disk and by torch.load(path, weights_only=False): a pickled dict
  // {format, tensors, non_tensor_batch (JSON), meta_info (JSON)}. Tensors are saved from the CPU.
  // Written to a temporary file and renamed, so a crash never leaves a half-written file.
  // Throws CheckpointError naming the file: for a file that cannot be written, a non-tensor value holding a
  // string that is not UTF-8 (JSON cannot hold it), and on load for any damage (not a pickled dict, fields of
  // the wrong type, JSON nested deeper than 128 levels, columns of different lengths).
  void save_to_disk(const std::string& path) const;
  static DataProto load_from_disk(const std::string& path);

 private:
  DataProto take_rows(const torch::Tensor& rows) const;  // rows: int64 CPU indices

  TensorMap batch_;
  ColumnMap non_tensor_batch_;
  Json meta_info_ = Json::object();
};

// verl's pad_dataproto_to_divisor: returns the padded DataProto and how many rows were added.
VERL_API std::pair<DataProto, int64_t> pad_dataproto_to_divisor(const DataProto& data, int64_t size_divisor);
// verl's unpad_dataproto: drops the last pad_size rows.
VERL_API DataProto unpad_dataproto(const DataProto& data, int64_t pad_size);

}  // namespace verl
