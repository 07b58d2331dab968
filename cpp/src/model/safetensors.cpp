// safetensors reader (mmap + validation), writer (HF byte layout, atomic rename), sharded dirs.
#include "verl/model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/untrusted.h"
#include "json_file.h"
#include "verl/core/error.h"
#include "verl/core/json.h"

namespace verl::model {

static_assert(std::endian::native == std::endian::little, "safetensors stores little-endian data; big-endian hosts would need byte swaps");

namespace fs = std::filesystem;

namespace {

// HF safetensors refuses headers above 100 MB (MAX_HEADER_SIZE); so do we, before allocating.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;
// No real tensor has more dimensions (PyTorch's TensorIterator handles at most 25); a header
// claiming thousands of 1-sized dimensions would only make every later shape walk slow.
constexpr size_t kMaxRank = 64;
// The longest file name Linux accepts (NAME_MAX): a longer shard name can never be opened.
constexpr size_t kMaxFileNameBytes = 255;

struct DtypeEntry {
  const char* name;
  torch::ScalarType type;
  size_t itemsize;
  int rank;  // position in HF's Dtype enum: save order is rank descending, so large items come first
};

constexpr DtypeEntry kDtypes[] = {
    {"BOOL", torch::kBool, 1, 0},           {"U8", torch::kByte, 1, 4},
    {"I8", torch::kChar, 1, 5},             {"F8_E5M2", torch::kFloat8_e5m2, 1, 6},
    {"F8_E4M3", torch::kFloat8_e4m3fn, 1, 7}, {"I16", torch::kShort, 2, 9},
    {"U16", torch::kUInt16, 2, 10},         {"F16", torch::kHalf, 2, 11},
    {"BF16", torch::kBFloat16, 2, 12},      {"I32", torch::kInt, 4, 13},
    {"U32", torch::kUInt32, 4, 14},         {"F32", torch::kFloat, 4, 15},
    {"F64", torch::kDouble, 8, 17},         {"I64", torch::kLong, 8, 18},
    {"U64", torch::kUInt64, 8, 19},
};

const DtypeEntry* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return &d;
  return nullptr;
}

const DtypeEntry& find_dtype(torch::ScalarType type) {
  for (const auto& d : kDtypes)
    if (type == d.type) return d;
  VERL_FAIL(InvalidArgument, "safetensors cannot store dtype ", c10::toString(type));
}

std::string where(const fs::path& path) { return "safetensors file '" + display_path(path) + "'"; }

// A header value as it appears in a message. Numbers and small flat arrays of numbers are shown
// as the file spells them ("[0,4]"); anything else (strings, containers nested 100,000 deep, a
// million-element array) is quoted bounded and escaped, never dumped whole.
std::string shown(const Json& v) {
  if (v.is_number() || v.is_boolean() || v.is_null()) return v.dump();
  if (v.is_array() && v.size() <= kMaxRank &&
      std::all_of(v.begin(), v.end(), [](const Json& e) { return e.is_number(); }))
    return v.dump();
  return untrusted::quote(v);
}

// "'name'" with the name escaped: tensor names and keys come from the file.
std::string quoted_name(const std::string& name) { return "'" + untrusted::escape(name) + "'"; }

// Why `name` cannot be a shard of the checkpoint directory, or nullptr if it can. weight_map comes
// from a (downloaded) index file: a name that is a path ("../x", "/etc/passwd", "sub/x", "..")
// would make the loader read files outside the checkpoint directory, so only plain file names
// are accepted. The file itself may be a symlink (the Hugging Face hub cache links every file of
// a snapshot to ../../blobs/<hash>): whoever created the directory chose the link; the index,
// which only names files, cannot redirect the loader anywhere else.
const char* bad_shard_name(const std::string& name) {
  if (name.empty()) return "is empty";
  if (name == "." || name == "..") return "is not a file name";
  if (name.find('/') != std::string::npos) return "is a path (it contains '/')";
  if (name.find('\0') != std::string::npos) return "contains a NUL byte";
  if (name.size() > kMaxFileNameBytes) return "is longer than 255 bytes, the longest file name there is";
  return nullptr;
}

std::string errno_text() { return std::strerror(errno); }

// Writes bytes to a temporary sibling, fsyncs it and renames it over `path`: a crash or a
// concurrent reader sees the old file or the new one, never a torn one.
template <typename WriteBody>
void write_atomic(const fs::path& path, WriteBody&& body) {
  static std::atomic<uint64_t> counter{0};
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  FILE* f = std::fopen(tmp.c_str(), "wb");
  VERL_CHECK_AS(CheckpointError, f != nullptr, "cannot write '", display_path(path), "': ", errno_text());
  bool ok = false;
  try {
    body([&](const void* data, size_t n) {
      if (n != 0 && std::fwrite(data, 1, n, f) != n)
        VERL_FAIL(CheckpointError, "cannot write '", display_path(path), "': ", errno_text());
    });
    ok = std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  const int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(ok ? errno : saved);
    std::remove(tmp.c_str());
    VERL_FAIL(CheckpointError, "cannot write '", display_path(path), "': ", why);
  }
}

}  // namespace

torch::ScalarType scalar_type_from_safetensors(const std::string& dtype) {
  const DtypeEntry* d = find_dtype(dtype);
  VERL_CHECK_AS(CheckpointError, d != nullptr, "unknown safetensors dtype '", untrusted::escape(dtype, 64), "'");
  return d->type;
}

std::string safetensors_dtype(torch::ScalarType type) { return find_dtype(type).name; }

// ---- reader --------------------------------------------------------------------------------

struct SafeTensorsFile::Mapping {
  uint8_t* data = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (data != nullptr) ::munmap(data, size);
  }
};

SafeTensorsFile::SafeTensorsFile(const fs::path& path) : path_(path), mapping_(std::make_shared<Mapping>()) {
  const std::string w = where(path);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VERL_CHECK_AS(CheckpointError, fd >= 0, "cannot open ", w, ": ", errno_text());
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    VERL_FAIL(CheckpointError, "cannot read ", w, ": not a regular file");
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    VERL_FAIL(CheckpointError, w, " is too short (", file_size, " bytes): no 8-byte header length");
  }
  // Private (copy-on-write) and writable: views handed out may be written to without faulting,
  // and such writes never reach the file. Untouched pages stay shared with the page cache.
  void* addr = ::mmap(nullptr, file_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  VERL_CHECK_AS(CheckpointError, addr != MAP_FAILED, "cannot mmap ", w, ": ", std::strerror(map_errno));
  mapping_->data = static_cast<uint8_t*>(addr);
  mapping_->size = file_size;

  uint64_t header_len = 0;
  std::memcpy(&header_len, mapping_->data, 8);
  VERL_CHECK_AS(CheckpointError, header_len <= kMaxHeaderBytes, w, ": header length ", header_len,
                " is absurd (more than ", kMaxHeaderBytes, " bytes)");
  VERL_CHECK_AS(CheckpointError, header_len <= file_size - 8, w, ": header length ", header_len,
                " runs past the end of the file (", file_size, " bytes)");
  data_start_ = 8 + header_len;
  const uint64_t data_size = file_size - data_start_;

  const char* header_begin = reinterpret_cast<const char*>(mapping_->data + 8);
  // HF requires the header to start with '{' (no leading whitespace); so do we.
  VERL_CHECK_AS(CheckpointError, header_len > 0 && header_begin[0] == '{', w,
                ": header is not a JSON object (it must start with '{')");
  // Depth-limited: a shape nested 100,000 deep must fail here, not overflow the stack later.
  const Json header = untrusted::parse_json<CheckpointError>(std::string_view(header_begin, header_len), w, "header");
  VERL_CHECK_AS(CheckpointError, header.is_object(), w, ": header is not a JSON object");

  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      VERL_CHECK_AS(CheckpointError, entry.is_object(), w, ": __metadata__ is not an object of strings");
      for (const auto& [k, v] : entry.items()) {
        VERL_CHECK_AS(CheckpointError, v.is_string(), w, ": __metadata__[", quoted_name(k), "] is not a string");
        metadata_[k] = v.get<std::string>();
      }
      has_metadata_ = true;
      continue;
    }
    const std::string t = w + ": tensor " + quoted_name(name);
    VERL_CHECK_AS(CheckpointError, entry.is_object(), t, ": entry is not an object");
    for (const char* field : {"dtype", "shape", "data_offsets"})
      VERL_CHECK_AS(CheckpointError, entry.contains(field), t, ": entry is missing '", field, "'");
    const Json& dtype = entry["dtype"];
    VERL_CHECK_AS(CheckpointError, dtype.is_string(), t, ": dtype is not a string");
    const DtypeEntry* d = find_dtype(dtype.get<std::string>());
    VERL_CHECK_AS(CheckpointError, d != nullptr, t, ": unknown dtype '",
                  untrusted::escape(dtype.get_ref<const std::string&>(), 64), "'");

    TensorInfo info;
    info.dtype = d->name;
    info.scalar_type = d->type;
    const Json& shape = entry["shape"];
    VERL_CHECK_AS(CheckpointError, shape.is_array(), t, ": shape is not an array");
    VERL_CHECK_AS(CheckpointError, shape.size() <= kMaxRank, t, ": shape has ", shape.size(),
                  " dimensions, more than ", kMaxRank);
    uint64_t numel = 1;
    bool overflow = false;
    for (const Json& dim : shape) {
      VERL_CHECK_AS(CheckpointError, !dim.is_number_integer() || dim.is_number_unsigned(), t,
                    ": shape has a negative dimension ", shown(dim));
      VERL_CHECK_AS(CheckpointError, dim.is_number_unsigned(), t, ": shape has a non-integer dimension ",
                    shown(dim));
      const uint64_t n = dim.get<uint64_t>();
      VERL_CHECK_AS(CheckpointError, n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()), t,
                    ": shape dimension ", n, " is too large");
      overflow = overflow || __builtin_mul_overflow(numel, n, &numel);
      info.shape.push_back(static_cast<int64_t>(n));
    }
    uint64_t nbytes = 0;
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(d->itemsize), &nbytes);
    VERL_CHECK_AS(CheckpointError, !overflow, t, ": shape ", shown(shape), " overflows");

    const Json& offsets = entry["data_offsets"];
    VERL_CHECK_AS(CheckpointError,
                  offsets.is_array() && offsets.size() == 2 && offsets[0].is_number_unsigned() &&
                      offsets[1].is_number_unsigned(),
                  t, ": data_offsets ", shown(offsets), " is not a pair of non-negative integers");
    info.begin = offsets[0].get<uint64_t>();
    info.end = offsets[1].get<uint64_t>();
    VERL_CHECK_AS(CheckpointError, info.end >= info.begin, t, ": data_offsets ", shown(offsets),
                  " end before begin");
    VERL_CHECK_AS(CheckpointError, info.end <= data_size, t, ": data_offsets ", shown(offsets),
                  " lie outside the data section (", data_size, " bytes)");
    VERL_CHECK_AS(CheckpointError, info.end - info.begin == nbytes, t, ": ", d->name, " with shape ", shown(shape),
                  " needs ", nbytes, " bytes but data_offsets ", shown(offsets), " hold ", info.end - info.begin);
    infos_.emplace(name, std::move(info));
  }

  // As HF does: the tensors, sorted by offsets, must tile the data section exactly (no overlap,
  // no gap, no trailing bytes), so every byte of the file is accounted for.
  std::vector<const std::pair<const std::string, TensorInfo>*> by_offset;
  for (const auto& kv : infos_) by_offset.push_back(&kv);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return std::tie(a->second.begin, a->second.end, a->first) < std::tie(b->second.begin, b->second.end, b->first);
  });
  uint64_t cursor = 0;
  const std::string* previous = nullptr;
  for (const auto* kv : by_offset) {
    const TensorInfo& info = kv->second;
    VERL_CHECK_AS(CheckpointError, info.begin >= cursor, w, ": tensor ", quoted_name(kv->first), " overlaps tensor ",
                  quoted_name(*previous), " (data_offsets [", info.begin, ", ", info.end, "] start before byte ",
                  cursor, ")");
    VERL_CHECK_AS(CheckpointError, info.begin == cursor, w, ": bytes [", cursor, ", ", info.begin,
                  ") of the data section before tensor ", quoted_name(kv->first),
                  " belong to no tensor (HF: metadata incomplete buffer)");
    cursor = info.end;
    previous = &kv->first;
  }
  VERL_CHECK_AS(CheckpointError, cursor == data_size, w, ": bytes [", cursor, ", ", data_size,
                ") at the end of the data section belong to no tensor (HF: metadata incomplete buffer)");
}

std::vector<std::string> SafeTensorsFile::keys() const {
  std::vector<std::string> out;
  out.reserve(infos_.size());
  for (const auto& kv : infos_) out.push_back(kv.first);
  return out;
}

const TensorInfo& SafeTensorsFile::info(const std::string& name) const {
  auto it = infos_.find(name);
  VERL_CHECK_AS(CheckpointError, it != infos_.end(), where(path_), " has no tensor ", quoted_name(name));
  return it->second;
}

const uint8_t* SafeTensorsFile::data_of(const TensorInfo& info) const {
  return mapping_->data + data_start_ + info.begin;
}

bool SafeTensorsFile::is_zero_copy(const std::string& name) const {
  const TensorInfo& i = info(name);
  return reinterpret_cast<uintptr_t>(data_of(i)) % find_dtype(i.scalar_type).itemsize == 0;
}

torch::Tensor SafeTensorsFile::get(const std::string& name) const {
  const TensorInfo& i = info(name);
  const auto options = torch::TensorOptions().dtype(i.scalar_type).device(torch::kCPU);
  auto* bytes = const_cast<uint8_t*>(data_of(i));  // the mapping is writable (private copy-on-write)
  if (is_zero_copy(name)) {
    // The deleter owns a reference to the mapping: the file stays mapped while any view lives,
    // even after this SafeTensorsFile is gone.
    std::shared_ptr<Mapping> keep = mapping_;
    return torch::from_blob(bytes, i.shape, [keep](void*) mutable { keep.reset(); }, options);
  }
  // A misaligned element pointer is undefined behaviour for typed kernels: copy into fresh storage.
  torch::Tensor out = torch::empty(i.shape, options);
  if (i.end > i.begin) std::memcpy(out.data_ptr(), bytes, i.end - i.begin);
  return out;
}

std::map<std::string, torch::Tensor> SafeTensorsFile::load_all() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& kv : infos_) out.emplace(kv.first, get(kv.first));
  return out;
}

const uint8_t* SafeTensorsFile::mapping_begin() const { return mapping_->data; }
size_t SafeTensorsFile::mapping_size() const { return mapping_->size; }

std::map<std::string, torch::Tensor> load_file(const fs::path& path) { return SafeTensorsFile(path).load_all(); }

// ---- writer --------------------------------------------------------------------------------

void save_file(const fs::path& path, const NamedTensors& tensors, const Metadata& metadata) {
  struct Item {
    std::string name;
    torch::Tensor data;
    const DtypeEntry* dtype;
  };
  std::vector<Item> items;
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    const std::string cannot = "cannot save '" + display_path(path) + "': ";
    VERL_CHECK(name != "__metadata__", cannot, "'__metadata__' is reserved, not a tensor name");
    VERL_CHECK(seen.insert(name).second, cannot, "tensor ", quoted_name(name), " given twice");
    VERL_CHECK(tensor.defined(), cannot, "tensor ", quoted_name(name), " is undefined");
    VERL_CHECK(tensor.layout() == torch::kStrided, cannot, "tensor ", quoted_name(name), " is not dense");
    const DtypeEntry& d = find_dtype(tensor.scalar_type());
    items.push_back({name, tensor.detach().to(torch::kCPU).contiguous(), &d});
  }
  // HF's order: larger dtypes first, then by name. With the 8-byte padded header every tensor
  // then starts aligned for its dtype, so readers can map it without copying.
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.dtype->rank != b.dtype->rank ? a.dtype->rank > b.dtype->rank : a.name < b.name;
  });

  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta[k] = v;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const Item& item : items) {
    const uint64_t n = item.data.nbytes();
    header[item.name] = Json{{"dtype", item.dtype->name},
                             {"shape", item.data.sizes().vec()},
                             {"data_offsets", Json::array({offset, offset + n})}};
    offset += n;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const uint64_t header_len = text.size();

  write_atomic(path, [&](auto&& write) {
    write(&header_len, 8);
    write(text.data(), text.size());
    for (const Item& item : items) write(item.data.data_ptr(), item.data.nbytes());
  });
}

void save_file(const fs::path& path, const std::map<std::string, torch::Tensor>& tensors, const Metadata& metadata) {
  save_file(path, NamedTensors(tensors.begin(), tensors.end()), metadata);
}

// ---- sharded checkpoints -------------------------------------------------------------------

SafeTensorsDir::SafeTensorsDir(const fs::path& dir) {
  // Non-throwing status calls throughout: a symlink loop or an over-long path must end in a
  // CheckpointError naming it, not a std::filesystem_error.
  std::error_code ec;
  const fs::path single = dir / kSafeWeightsName;
  const fs::path index_path = dir / kSafeWeightsIndexName;
  const bool single_is_file = fs::is_regular_file(fs::status(single, ec));
  const bool index_is_file = fs::is_regular_file(fs::status(index_path, ec));
  // model.safetensors wins, as in transformers. An entry that exists but is not a regular file (a
  // dangling link, a symlink loop, a directory) is still opened when nothing better is there, so
  // the error says what is wrong with it rather than that it is absent.
  if (single_is_file || (!index_is_file && fs::exists(fs::symlink_status(single, ec)))) {
    weights_path_ = single;
    auto file = std::make_shared<const SafeTensorsFile>(single);
    for (const std::string& name : file->keys()) files_.emplace(name, file);
    return;
  }
  VERL_CHECK_AS(CheckpointError, index_is_file || fs::exists(fs::symlink_status(index_path, ec)),
                "checkpoint directory '", display_path(dir), "' has neither ", kSafeWeightsName, " nor ",
                kSafeWeightsIndexName);
  weights_path_ = index_path;
  const std::string w = "index '" + display_path(index_path) + "'";
  const Json index = read_json_file<CheckpointError>(index_path, "index");
  const auto weight_map = index.is_object() ? index.find("weight_map") : index.end();
  VERL_CHECK_AS(CheckpointError, index.is_object() && weight_map != index.end() && weight_map->is_object(), w,
                " has no weight_map object");
  std::map<std::string, std::vector<std::string>> by_shard;  // shard file name -> tensor names
  for (const auto& [name, shard] : weight_map->items()) {
    VERL_CHECK_AS(CheckpointError, shard.is_string(), w, ": weight_map[", quoted_name(name),
                  "] is not a file name but ", untrusted::type_name(shard), " ", untrusted::quote(shard));
    const std::string& file_name = shard.get_ref<const std::string&>();
    const char* why = bad_shard_name(file_name);
    VERL_CHECK_AS(CheckpointError, why == nullptr, w, ": weight_map[", quoted_name(name), "] names shard ",
                  untrusted::quote(shard), ", which ", why ? why : "",
                  ": shards must be plain file names inside the checkpoint directory");
    by_shard[file_name].push_back(name);
  }
  for (const auto& [shard, names] : by_shard) {
    // A plain file name joined to dir: the path names an entry of dir itself, nothing above it.
    const fs::path shard_path = dir / shard;
    VERL_CHECK_AS(CheckpointError, fs::status(shard_path, ec).type() != fs::file_type::not_found, w,
                  " lists shard ", quoted_name(shard), " (for tensor ", quoted_name(names.front()), "), but '",
                  display_path(shard_path), "' does not exist");
    auto file = std::make_shared<const SafeTensorsFile>(shard_path);
    for (const std::string& name : names) {
      VERL_CHECK_AS(CheckpointError, file->contains(name), w, " puts tensor ", quoted_name(name), " in shard ",
                    quoted_name(shard), ", which does not contain it");
      files_.emplace(name, file);
    }
  }
}

std::vector<std::string> SafeTensorsDir::keys() const {
  std::vector<std::string> out;
  out.reserve(files_.size());
  for (const auto& kv : files_) out.push_back(kv.first);
  return out;
}

const SafeTensorsFile& SafeTensorsDir::file(const std::string& name) const {
  auto it = files_.find(name);
  VERL_CHECK_AS(CheckpointError, it != files_.end(), "checkpoint '", display_path(weights_path_), "' has no tensor ",
                quoted_name(name));
  return *it->second;
}

const TensorInfo& SafeTensorsDir::info(const std::string& name) const { return file(name).info(name); }

torch::Tensor SafeTensorsDir::get(const std::string& name) const { return file(name).get(name); }

std::map<std::string, torch::Tensor> SafeTensorsDir::load_all() const {
  std::map<std::string, torch::Tensor> out;
  for (const auto& [name, file] : files_) out.emplace(name, file->get(name));
  return out;
}

std::map<std::string, torch::Tensor> load_checkpoint_dir(const fs::path& dir) { return SafeTensorsDir(dir).load_all(); }

std::vector<fs::path> save_sharded(const fs::path& dir, const NamedTensors& tensors, int64_t max_shard_bytes) {
  VERL_CHECK(max_shard_bytes > 0, "save_sharded: max_shard_bytes must be positive, got ", max_shard_bytes);
  std::error_code ec;
  fs::create_directories(dir, ec);
  VERL_CHECK_AS(CheckpointError, !ec, "cannot create checkpoint directory '", display_path(dir), "': ", ec.message());

  // huggingface_hub's split_state_dict_into_shards_factory, step for step.
  std::vector<NamedTensors> shards;
  NamedTensors current;
  int64_t current_size = 0;
  int64_t total_size = 0;
  int64_t total_parameters = 0;
  for (const auto& [name, tensor] : tensors) {
    const int64_t size = static_cast<int64_t>(tensor.nbytes());
    total_size += size;
    total_parameters += tensor.numel();
    if (size > max_shard_bytes) {  // too big for any shard: a shard of its own
      shards.push_back({{name, tensor}});
      continue;
    }
    if (current_size + size > max_shard_bytes) {
      shards.push_back(std::move(current));
      current.clear();
      current_size = 0;
    }
    current.emplace_back(name, tensor);
    current_size += size;
  }
  if (!current.empty()) shards.push_back(std::move(current));

  const Metadata format{{"format", "pt"}};
  const fs::path single = dir / kSafeWeightsName;
  const fs::path index_path = dir / kSafeWeightsIndexName;
  // Files of an earlier save that this one does not overwrite would be read instead of (or mixed
  // with) the new weights: remove stale shards, and the single file or index of the other layout.
  auto remove_stale = [&](const std::set<std::string>& keep) {
    std::error_code ec;
    fs::directory_iterator it(dir, ec), end;
    for (; !ec && it != end; it.increment(ec)) {
      const std::string f = it->path().filename().string();
      const bool shard_like = f.size() == std::strlen("model-00001-of-00002.safetensors") &&
                              f.rfind("model-", 0) == 0 && f.substr(11, 4) == "-of-" &&
                              f.ends_with(".safetensors");
      std::error_code remove_ec;
      if ((shard_like || f == kSafeWeightsName || f == kSafeWeightsIndexName) && !keep.count(f))
        fs::remove(it->path(), remove_ec);
      VERL_CHECK_AS(CheckpointError, !remove_ec, "cannot remove stale '", display_path(it->path()),
                    "': ", remove_ec.message());
    }
    VERL_CHECK_AS(CheckpointError, !ec, "cannot list '", display_path(dir), "': ", ec.message());
  };
  if (shards.size() <= 1) {
    save_file(single, shards.empty() ? NamedTensors{} : shards.front(), format);
    remove_stale({kSafeWeightsName});
    return {single};
  }

  std::vector<fs::path> written;
  std::set<std::string> keep{kSafeWeightsIndexName};
  nlohmann::json weight_map = nlohmann::json::object();  // std::map-backed: sorted keys, as sort_keys=True
  char buf[64];
  for (size_t i = 0; i < shards.size(); ++i) {
    std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    const fs::path shard_path = dir / buf;
    save_file(shard_path, shards[i], format);
    for (const auto& kv : shards[i]) weight_map[kv.first] = buf;
    keep.insert(buf);
    written.push_back(shard_path);
  }
  nlohmann::json index = {{"metadata", {{"total_parameters", total_parameters}, {"total_size", total_size}}},
                          {"weight_map", std::move(weight_map)}};
  // json.dumps(index, indent=2, sort_keys=True) + "\n", byte for byte (ensure_ascii as Python).
  const std::string text = index.dump(2, ' ', true) + "\n";
  write_atomic(index_path, [&](auto&& write) { write(text.data(), text.size()); });
  written.push_back(index_path);
  remove_stale(keep);
  return written;
}

}  // namespace verl::model
