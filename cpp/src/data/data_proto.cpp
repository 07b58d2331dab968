// DataProto operations (see verl/data/data_proto.h); row choices come from row_plan.
#include "verl/data/data_proto.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <torch/serialize.h>
#include <torch/torch.h>

#include "core/untrusted.h"
#include "data/data_proto_pickle.h"
#include "verl/core/error.h"
#include "verl/data/row_plan.h"

namespace verl {
namespace {

constexpr const char* kFileFormat = "verl-cpp.DataProto/1";

template <typename Map>
std::string key_list(const Map& map) {
  std::string out = "[";
  for (const auto& [k, v] : map) out += (out.size() > 1 ? ", " : "") + k;
  return out + "]";
}

// Tensors equal in shape, dtype and value, NaN matching NaN (verl compares with torch.equal, which
// treats NaN as unequal; a union of the same batch with itself must not fail).
bool same_tensor(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.sizes() != b.sizes() || a.scalar_type() != b.scalar_type()) return false;
  if (a.is_same(b)) return true;
  torch::Tensor bb = b.to(a.device());
  if (a.is_floating_point() || a.is_complex()) return a.isnan().equal(bb.isnan()) && torch::equal(a.nan_to_num(0), bb.nan_to_num(0));
  return torch::equal(a, bb);
}

void merge_meta(Json& into, const Json& from, const char* what) {
  for (const auto& [k, v] : from.items()) {
    auto it = into.find(k);
    VERL_CHECK_AS(DataError, it == into.end() || *it == v, what, ": meta_info key '", k,
                  "' has conflicting values ", untrusted::quote(*it), " and ", untrusted::quote(v));
    into[k] = v;
  }
}

Json::array_t take_column(const DataProto::Column& column, const torch::Tensor& rows) {
  Json::array_t out;
  out.reserve(rows.numel());
  const int64_t* r = rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < rows.numel(); ++i) out.push_back(column[r[i]]);
  return out;
}

}  // namespace

DataProto::DataProto(TensorMap batch, ColumnMap non_tensor_batch, Json meta_info)
    : batch_(std::move(batch)), non_tensor_batch_(std::move(non_tensor_batch)), meta_info_(std::move(meta_info)) {
  if (meta_info_.is_null()) meta_info_ = Json::object();
  check_consistency();
}

DataProto DataProto::from_dict(TensorMap tensors, ColumnMap non_tensors, Json meta_info, bool auto_padding) {
  if (meta_info.is_null()) meta_info = Json::object();
  if (auto_padding) meta_info[kAutoPaddingKey] = true;
  return DataProto(std::move(tensors), std::move(non_tensors), std::move(meta_info));
}

int64_t DataProto::size() const {
  if (!batch_.empty()) return batch_.begin()->second.size(0);
  if (!non_tensor_batch_.empty()) return static_cast<int64_t>(non_tensor_batch_.begin()->second.size());
  return 0;
}

void DataProto::check_consistency() const {
  VERL_CHECK_AS(DataError, meta_info_.is_object(), "meta_info must be a JSON object, got ", meta_info_.type_name());
  std::string pivot;
  int64_t rows = -1;
  for (const auto& [key, t] : batch_) {
    VERL_CHECK_AS(DataError, t.defined(), "tensor '", key, "' is undefined");
    VERL_CHECK_AS(DataError, t.dim() >= 1, "tensor '", key, "' is a scalar; batch tensors need a batch dimension");
    if (rows < 0) {
      rows = t.size(0), pivot = key;
    } else {
      VERL_CHECK_AS(DataError, t.size(0) == rows, "Not all the tensors have the same batch size: '", pivot, "' has ",
                    rows, " rows, '", key, "' has ", t.size(0));
    }
  }
  for (const auto& [key, col] : non_tensor_batch_) {
    const auto n = static_cast<int64_t>(col.size());
    if (rows < 0) {
      rows = n, pivot = key;
    } else {
      VERL_CHECK_AS(DataError, n == rows, "non-tensor column '", key, "' has ", n, " rows but '", pivot, "' has ",
                    rows);
    }
  }
}

const torch::Tensor& DataProto::tensor(const std::string& key) const {
  auto it = batch_.find(key);
  VERL_CHECK_AS(DataError, it != batch_.end(), "tensor '", key, "' not in DataProto batch; keys: ", key_list(batch_));
  return it->second;
}

const DataProto::Column& DataProto::column(const std::string& key) const {
  auto it = non_tensor_batch_.find(key);
  VERL_CHECK_AS(DataError, it != non_tensor_batch_.end(), "column '", key,
                "' not in DataProto non_tensor_batch; keys: ", key_list(non_tensor_batch_));
  return it->second;
}

void DataProto::set_tensor(const std::string& key, torch::Tensor value) {
  VERL_CHECK_AS(DataError, value.defined() && value.dim() >= 1, "tensor '", key, "' needs a batch dimension");
  const bool only_entry = batch_.size() + non_tensor_batch_.size() == (batch_.count(key) ? 1u : 0u);
  VERL_CHECK_AS(DataError, only_entry || value.size(0) == size(), "tensor '", key, "' has ", value.size(0),
                " rows but the DataProto has ", size());
  batch_[key] = std::move(value);
}

void DataProto::set_column(const std::string& key, Column value) {
  const bool only_entry = batch_.size() + non_tensor_batch_.size() == (non_tensor_batch_.count(key) ? 1u : 0u);
  VERL_CHECK_AS(DataError, only_entry || static_cast<int64_t>(value.size()) == size(), "column '", key, "' has ",
                value.size(), " rows but the DataProto has ", size());
  non_tensor_batch_[key] = std::move(value);
}

DataProto DataProto::select(const std::optional<std::vector<std::string>>& batch_keys,
                            const std::optional<std::vector<std::string>>& non_tensor_batch_keys,
                            const std::optional<std::vector<std::string>>& meta_info_keys, bool deepcopy) const {
  TensorMap tensors;
  if (batch_keys) {
    for (const auto& k : *batch_keys) tensors[k] = tensor(k);
  } else {
    tensors = batch_;
  }
  ColumnMap columns;
  if (non_tensor_batch_keys) {
    for (const auto& k : *non_tensor_batch_keys) columns[k] = column(k);
  } else {
    columns = non_tensor_batch_;
  }
  Json meta = Json::object();
  if (meta_info_keys) {
    for (const auto& k : *meta_info_keys) {
      VERL_CHECK_AS(DataError, meta_info_.contains(k), "meta_info key '", k, "' not in DataProto");
      meta[k] = meta_info_[k];
    }
  } else {
    meta = meta_info_;
  }
  if (deepcopy) {
    for (auto& [k, t] : tensors) t = t.clone();
  }
  return DataProto(std::move(tensors), std::move(columns), std::move(meta));
}

DataProto DataProto::take_rows(const torch::Tensor& rows) const {
  TensorMap tensors;
  for (const auto& [k, t] : batch_) tensors[k] = t.index_select(0, rows.to(t.device()));
  ColumnMap columns;
  for (const auto& [k, c] : non_tensor_batch_) columns[k] = take_column(c, rows);
  return DataProto(std::move(tensors), std::move(columns), meta_info_);
}

DataProto DataProto::select_idxs(const torch::Tensor& idxs) const {
  return take_rows(row_plan::selection_rows(size(), idxs));
}

DataProto DataProto::slice(std::optional<int64_t> start, std::optional<int64_t> stop,
                           std::optional<int64_t> step) const {
  const row_plan::Slice s = row_plan::normalize_slice(size(), start, stop, step);
  TensorMap tensors;
  for (const auto& [k, t] : batch_) tensors[k] = t.slice(0, s.start, s.stop, s.step);
  ColumnMap columns;
  for (const auto& [k, c] : non_tensor_batch_) {
    Column out;
    for (int64_t i = s.start; i < s.stop; i += s.step) out.push_back(c[i]);
    columns[k] = std::move(out);
  }
  return DataProto(std::move(tensors), std::move(columns), meta_info_);
}

DataProto DataProto::pop(const std::vector<std::string>& batch_keys,
                         const std::vector<std::string>& non_tensor_batch_keys,
                         const std::vector<std::string>& meta_info_keys) {
  // Check everything first so a bad key leaves *this untouched.
  for (const auto& k : batch_keys) tensor(k);
  for (const auto& k : non_tensor_batch_keys) column(k);
  for (const auto& k : meta_info_keys)
    VERL_CHECK_AS(DataError, meta_info_.contains(k), "meta_info key '", k, "' not in DataProto");
  TensorMap tensors;
  for (const auto& k : batch_keys) tensors[k] = batch_.extract(k).mapped();
  ColumnMap columns;
  for (const auto& k : non_tensor_batch_keys) columns[k] = non_tensor_batch_.extract(k).mapped();
  Json meta = Json::object();
  for (const auto& k : meta_info_keys) {
    meta[k] = meta_info_[k];
    meta_info_.erase(k);
  }
  return DataProto(std::move(tensors), std::move(columns), std::move(meta));
}

DataProto& DataProto::rename(const std::vector<std::string>& old_keys, const std::vector<std::string>& new_keys) {
  VERL_CHECK(old_keys.size() == new_keys.size(), "new_keys and old_keys must have the same length, but got ",
             new_keys.size(), " and ", old_keys.size());
  TensorMap renamed = batch_;
  for (const auto& k : old_keys) {
    tensor(k);
    renamed.erase(k);
  }
  for (size_t i = 0; i < old_keys.size(); ++i) {
    VERL_CHECK_AS(DataError, !renamed.count(new_keys[i]), "cannot rename '", old_keys[i], "' to '", new_keys[i],
                  "': the key already exists");
    renamed[new_keys[i]] = batch_.at(old_keys[i]);
  }
  batch_ = std::move(renamed);
  return *this;
}

DataProto& DataProto::union_with(const DataProto& other) {
  const bool sizes_known = !(batch_.empty() && non_tensor_batch_.empty()) &&
                           !(other.batch_.empty() && other.non_tensor_batch_.empty());
  VERL_CHECK_AS(DataError, !sizes_known || size() == other.size(),
                "union needs identical batch sizes, got ", size(), " and ", other.size());
  for (const auto& [k, t] : other.batch_) {
    auto it = batch_.find(k);
    VERL_CHECK_AS(DataError, it == batch_.end() || same_tensor(it->second, t), "union: tensor '", k,
                  "' differs between the two DataProtos");
  }
  for (const auto& [k, c] : other.non_tensor_batch_) {
    auto it = non_tensor_batch_.find(k);
    VERL_CHECK_AS(DataError, it == non_tensor_batch_.end() || it->second == c, "union: non-tensor column '", k,
                  "' differs between the two DataProtos");
  }
  Json meta = meta_info_;
  merge_meta(meta, other.meta_info_, "union");
  for (const auto& [k, t] : other.batch_) batch_.emplace(k, t);
  for (const auto& [k, c] : other.non_tensor_batch_) non_tensor_batch_.emplace(k, c);
  meta_info_ = std::move(meta);
  return *this;
}

DataProto DataProto::concat(const std::vector<DataProto>& parts) {
  VERL_CHECK_AS(DataError, !parts.empty(), "concat needs at least one DataProto");
  TensorMap tensors;
  for (const auto& [k, t] : parts[0].batch_) {
    std::vector<torch::Tensor> pieces;
    for (size_t i = 0; i < parts.size(); ++i) {
      VERL_CHECK_AS(DataError, parts[i].batch_.size() == parts[0].batch_.size() && parts[i].has_tensor(k),
                    "concat: part ", i, " has tensor keys ", key_list(parts[i].batch_), " but part 0 has ",
                    key_list(parts[0].batch_));
      pieces.push_back(parts[i].batch_.at(k));
    }
    tensors[k] = torch::cat(pieces, 0);
  }
  ColumnMap columns;
  for (const auto& [k, c] : parts[0].non_tensor_batch_) {
    Column all;
    for (size_t i = 0; i < parts.size(); ++i) {
      VERL_CHECK_AS(DataError,
                    parts[i].non_tensor_batch_.size() == parts[0].non_tensor_batch_.size() && parts[i].has_column(k),
                    "concat: part ", i, " has non-tensor keys ", key_list(parts[i].non_tensor_batch_),
                    " but part 0 has ", key_list(parts[0].non_tensor_batch_));
      const Column& piece = parts[i].non_tensor_batch_.at(k);
      all.insert(all.end(), piece.begin(), piece.end());
    }
    columns[k] = std::move(all);
  }
  // verl: "metrics" from every part are gathered (dicts -> dict of lists); other keys must agree.
  Json meta = Json::object();
  Json::array_t metrics;
  for (const auto& part : parts) {
    for (const auto& [k, v] : part.meta_info_.items()) {
      if (k == "metrics") {
        if (v.is_array()) {
          metrics.insert(metrics.end(), v.begin(), v.end());
        } else if (!v.is_null()) {
          metrics.push_back(v);
        }
      } else {
        merge_meta(meta, Json{{k, v}}, "concat");
      }
    }
  }
  if (!metrics.empty()) {
    Json gathered = Json::object();
    for (const auto& m : metrics) {
      VERL_CHECK_AS(DataError, m.is_object(), "concat: meta_info metrics must be dicts, got ",
                    untrusted::quote(m));
      for (const auto& [k, v] : m.items()) gathered[k].push_back(v);
    }
    meta["metrics"] = std::move(gathered);
  }
  return DataProto(std::move(tensors), std::move(columns), std::move(meta));
}

std::vector<DataProto> DataProto::chunk(int64_t chunks) const {
  std::vector<DataProto> out;
  int64_t begin = 0;
  for (int64_t n : row_plan::chunk_sizes(size(), chunks, is_padding_enabled())) {
    out.push_back(slice(begin, begin + n));
    begin += n;
  }
  return out;
}

std::vector<DataProto> DataProto::split(int64_t split_size) const {
  std::vector<DataProto> out;
  for (const auto& [b, e] : row_plan::split_bounds(size(), split_size)) out.push_back(slice(b, e));
  return out;
}

DataProto DataProto::repeat(int64_t repeat_times, bool interleave) const {
  return take_rows(row_plan::repeat_rows(size(), repeat_times, interleave));
}

void DataProto::reorder(const torch::Tensor& indices) {
  const torch::Tensor rows = row_plan::selection_rows(size(), indices);
  VERL_CHECK_AS(DataError, rows.numel() == size(), "reorder needs one index per row: got ", rows.numel(),
                " indices for ", size(), " rows");
  *this = take_rows(rows);
}

std::vector<DataProto> DataProto::make_iterator(int64_t mini_batch_size, int64_t epochs,
                                                std::optional<uint64_t> seed, std::optional<bool> shuffle) const {
  std::vector<DataProto> out;
  const bool shuffled = shuffle.value_or(seed.has_value());
  for (const torch::Tensor& rows : row_plan::iterator_rows(size(), mini_batch_size, epochs, seed, shuffled))
    out.push_back(take_rows(rows));
  return out;
}

DataProto DataProto::to(const torch::Device& device) const {
  TensorMap tensors;
  for (const auto& [k, t] : batch_) tensors[k] = t.to(device, /*non_blocking=*/true);
  return DataProto(std::move(tensors), non_tensor_batch_, meta_info_);
}

bool DataProto::is_padding_enabled() const {
  auto it = meta_info_.find(kAutoPaddingKey);
  if (it != meta_info_.end() && it->is_boolean() && it->get<bool>()) return true;
  const char* env = std::getenv("VERL_AUTO_PADDING");
  if (env == nullptr) return false;
  std::string v(env);
  std::transform(v.begin(), v.end(), v.begin(), ::toupper);
  return v == "TRUE" || v == "1";
}

std::vector<char> detail::pickle_data_proto(const DataProto& data, const std::string& shown) {
  c10::Dict<std::string, torch::Tensor> tensors;
  for (const auto& [k, t] : data.batch()) tensors.insert(k, t.detach().to(torch::kCPU).contiguous());
  Json columns = Json::object();
  for (const auto& [k, c] : data.non_tensor_batch()) columns[k] = c;
  c10::impl::GenericDict payload(c10::StringType::get(), c10::AnyType::get());
  payload.insert("format", std::string(kFileFormat));
  payload.insert("tensors", tensors);
  try {
    payload.insert("non_tensor_batch", columns.dump());
    payload.insert("meta_info", data.meta_info().dump());
  } catch (const Json::exception& e) {  // a string that is not UTF-8 (JSON text must be), put there from C++
    VERL_FAIL(CheckpointError, "cannot save DataProto to '", shown,
              "': a non-tensor value or meta_info cannot be written as JSON: ", untrusted::escape(e.what(), 300));
  }
  return torch::pickle_save(c10::IValue(payload));
}

void DataProto::save_to_disk(const std::string& path) const {
  const std::vector<char> bytes = detail::pickle_data_proto(*this, untrusted::escape(path, 1024));

  namespace fs = std::filesystem;
  const fs::path target(path);
  const fs::path tmp = target.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    VERL_CHECK_AS(CheckpointError, out.good(), "cannot open '", tmp.string(), "' for writing");
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    VERL_CHECK_AS(CheckpointError, out.good(), "failed writing '", tmp.string(), "'");
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot move '", tmp.string(), "' to '", path, "': ", ec.message());
}

DataProto DataProto::load_from_disk(const std::string& path) {
  const std::string shown = untrusted::escape(path, 1024);
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK_AS(CheckpointError, in.good(), "cannot open DataProto file '", shown, "'");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return detail::unpickle_data_proto(bytes, shown);
}

DataProto detail::unpickle_data_proto(const std::vector<char>& bytes, const std::string& shown) {
  // The bytes may be damaged or hand-made: every field is type-checked before use, so that nothing but a
  // CheckpointError naming the source (and the field) comes out of here.
  c10::IValue value;
  try {
    value = torch::pickle_load(bytes);
  } catch (const std::exception& e) {
    VERL_FAIL(CheckpointError, "'", shown, "' is not a DataProto file: ", untrusted::escape(e.what(), 300));
  }
  VERL_CHECK_AS(CheckpointError, value.isGenericDict(), "'", shown, "' is not a DataProto file");
  auto dict = value.toGenericDict();
  auto field = [&](const char* name) {
    VERL_CHECK_AS(CheckpointError, dict.contains(name), "'", shown, "' misses the DataProto field '", name, "'");
    return dict.at(name);
  };
  // A field holding JSON text: parsed with the depth limit; must be an object.
  auto json_field = [&](const char* name) {
    const c10::IValue text = field(name);
    VERL_CHECK_AS(CheckpointError, text.isString(), "'", shown, "': DataProto field '", name, "' is not a string");
    const std::string what = std::string("DataProto field '") + name + "'";
    Json parsed = untrusted::parse_json<CheckpointError>(text.toStringRef(), "'" + shown + "'", what.c_str());
    VERL_CHECK_AS(CheckpointError, parsed.is_object(), "'", shown, "': DataProto field '", name,
                  "' must hold a JSON object, got ", untrusted::type_name(parsed));
    return parsed;
  };
  VERL_CHECK_AS(CheckpointError, field("format").isString() && field("format").toStringRef() == kFileFormat, "'",
                shown, "' has an unknown DataProto format");
  VERL_CHECK_AS(CheckpointError, field("tensors").isGenericDict(), "'", shown,
                "': DataProto field 'tensors' is not a dict");
  DataProto::TensorMap tensors;
  for (const auto& entry : field("tensors").toGenericDict()) {
    VERL_CHECK_AS(CheckpointError, entry.key().isString() && entry.value().isTensor(), "'", shown,
                  "': DataProto field 'tensors' must map names to tensors");
    const std::string& key = entry.key().toStringRef();
    VERL_CHECK_AS(CheckpointError, untrusted::is_utf8(key), "'", shown,
                  "': tensor name '", untrusted::escape(key), "' is not valid UTF-8");
    tensors[key] = entry.value().toTensor();
  }
  DataProto::ColumnMap columns;
  const Json non_tensor = json_field("non_tensor_batch");  // must outlive items()
  for (const auto& [k, c] : non_tensor.items()) {
    VERL_CHECK_AS(CheckpointError, c.is_array(), "'", shown, "': non-tensor column '", untrusted::escape(k),
                  "' must be a JSON array, got ", untrusted::type_name(c));
    columns[k] = c.get<DataProto::Column>();
  }
  try {
    return DataProto(std::move(tensors), std::move(columns), json_field("meta_info"));
  } catch (const DataError& e) {  // columns and tensors of different lengths
    VERL_FAIL(CheckpointError, "'", shown, "' holds an inconsistent DataProto: ", e.what());
  }
}

std::pair<DataProto, int64_t> pad_dataproto_to_divisor(const DataProto& data, int64_t size_divisor) {
  const torch::Tensor rows = row_plan::pad_rows(data.size(), size_divisor);
  if (rows.numel() == 0) return {data, 0};
  return {DataProto::concat({data, data.select_idxs(rows)}), rows.numel()};
}

DataProto unpad_dataproto(const DataProto& data, int64_t pad_size) {
  VERL_CHECK(pad_size >= 0 && pad_size <= data.size(), "pad_size ", pad_size, " is out of range for ", data.size(),
             " rows");
  return pad_size == 0 ? data : data.slice(std::nullopt, data.size() - pad_size);
}

}  // namespace verl
