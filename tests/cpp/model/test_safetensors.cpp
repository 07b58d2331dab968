// verl::model safetensors: round trips, zero-copy views, every header validation rule, shards.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "core/remove_tree.h"
#include "core/untrusted.h"
#include "verl/core/error.h"
#include "verl/core/json.h"
#include "verl/model/safetensors.h"

namespace fs = std::filesystem;
using verl::CheckpointError;
using verl::model::NamedTensors;
using verl::model::SafeTensorsFile;

namespace {

fs::path test_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("verl_test_safetensors_" + std::to_string(::getpid())) / name;
  verl::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

// A hand-made file: 8-byte little-endian header length (the real one unless given), header, data.
fs::path write_raw(const std::string& name, const std::string& header, size_t data_bytes = 0,
                   std::optional<uint64_t> length = std::nullopt) {
  const fs::path path = test_dir("raw") / name;
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = length.value_or(header.size());
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << std::string(data_bytes, '\0');
  return path;
}

// Asserts that opening `path` throws CheckpointError whose message names the file and `problem`.
void check_rejected(const fs::path& path, const std::string& problem) {
  INFO("file " << path << ", expected problem: " << problem);
  try {
    SafeTensorsFile file(path);
    FAIL("no CheckpointError");
  } catch (const CheckpointError& e) {
    const std::string message = e.what();
    INFO("message: " << message);
    CHECK(message.find(path.string()) != std::string::npos);
    CHECK(message.find(problem) != std::string::npos);
  }
}

bool same_bytes(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() != b.scalar_type() || a.sizes() != b.sizes()) return false;
  const auto ac = a.contiguous(), bc = b.contiguous();
  // An empty tensor may have no storage (data_ptr null): memcmp must not see it (UBSan, make test-asan).
  return ac.nbytes() == 0 || std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.nbytes()) == 0;
}

// Random bit patterns of the dtype (NaNs, infinities, subnormals included); bool stays 0/1.
torch::Tensor random_bits(torch::ScalarType type, std::vector<int64_t> shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (type == torch::kBool) return torch::randint(0, 2, shape, torch::kByte).to(torch::kBool);
  const int64_t itemsize = c10::elementSize(type);
  return torch::randint(0, 256, {numel * itemsize}, torch::kByte).view(type).reshape(shape);
}

const std::vector<torch::ScalarType> kAllTypes = {
    torch::kDouble, torch::kFloat, torch::kHalf,   torch::kBFloat16, torch::kLong,         torch::kInt,
    torch::kShort,  torch::kChar,  torch::kByte,   torch::kBool,     torch::kFloat8_e4m3fn, torch::kFloat8_e5m2,
    torch::kUInt16, torch::kUInt32, torch::kUInt64};

}  // namespace

TEST_CASE("every dtype round-trips bit-identically, with metadata", "[model][safetensors]") {
  torch::manual_seed(0);
  std::map<std::string, torch::Tensor> tensors;
  for (size_t i = 0; i < kAllTypes.size(); ++i) {
    // Appended piecewise: GCC 12 warns falsely (-Wstringop-overflow) on chained operator+ here.
    std::string name = verl::model::safetensors_dtype(kAllTypes[i]);
    name.insert(0, std::to_string(i) + "_");
    tensors[name] = random_bits(kAllTypes[i], {3, 5});
  }
  tensors["scalar"] = torch::tensor(3.5);
  tensors["empty"] = torch::zeros({0, 4});
  tensors["strided"] = torch::arange(12, torch::kFloat).reshape({3, 4}).t();  // saved contiguous
  const fs::path path = test_dir("roundtrip") / "all.safetensors";
  verl::model::save_file(path, tensors, {{"format", "pt"}, {"note", "x"}});

  SafeTensorsFile file(path);
  CHECK(file.metadata() == verl::model::Metadata{{"format", "pt"}, {"note", "x"}});
  CHECK(file.has_metadata());
  CHECK(file.keys().size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    INFO(name);
    CHECK(file.info(name).scalar_type == t.scalar_type());
    CHECK(file.info(name).shape == t.sizes().vec());
    CHECK(same_bytes(file.get(name), t));
  }
  const auto all = verl::model::load_file(path);
  CHECK(all.size() == tensors.size());
  CHECK(same_bytes(all.at("strided"), tensors["strided"]));
  CHECK_THROWS_WITH(file.get("missing"), Catch::Contains(path.string()) && Catch::Contains("no tensor 'missing'"));
}

TEST_CASE("no __metadata__ when none is given", "[model][safetensors]") {
  const fs::path path = test_dir("nometa") / "a.safetensors";
  verl::model::save_file(path, std::map<std::string, torch::Tensor>{{"a", torch::ones({2})}});
  SafeTensorsFile file(path);
  CHECK_FALSE(file.has_metadata());
  CHECK(file.metadata().empty());
}

TEST_CASE("aligned tensors are views of the mapping that outlive the file object", "[model][safetensors]") {
  torch::manual_seed(1);
  std::map<std::string, torch::Tensor> tensors;
  // Odd byte counts: only the writer's dtype-size order keeps every tensor aligned.
  for (auto type : kAllTypes) tensors[verl::model::safetensors_dtype(type)] = random_bits(type, {3});
  const fs::path path = test_dir("zerocopy") / "z.safetensors";
  verl::model::save_file(path, tensors);

  std::map<std::string, torch::Tensor> loaded;
  {
    SafeTensorsFile file(path);
    const auto* begin = file.mapping_begin();
    const auto* end = begin + file.mapping_size();
    for (const auto& name : file.keys()) {
      INFO(name);
      CHECK(file.is_zero_copy(name));
      torch::Tensor t = file.get(name);
      const auto* p = static_cast<const uint8_t*>(t.data_ptr());
      CHECK(p >= begin);
      CHECK(p + t.nbytes() <= end);
      loaded[name] = t;
    }
  }  // the SafeTensorsFile is gone; the views keep the mapping alive
  for (const auto& [name, t] : tensors) CHECK(same_bytes(loaded.at(name), t));

  // Copy-on-write: writing through a view changes neither the file nor a fresh mapping of it.
  loaded.at("F32").fill_(42.0f);
  CHECK(same_bytes(SafeTensorsFile(path).get("F32"), tensors["F32"]));
}

TEST_CASE("misaligned tensors are copied", "[model][safetensors]") {
  // Header of 128 bytes (a multiple of 8): U8 at data byte 0, F32 at data byte 1 (misaligned).
  std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[2],"data_offsets":[1,9]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  const fs::path path = test_dir("misaligned") / "m.safetensors";
  {
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = header.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out << header;
    const uint8_t a = 7;
    const float b[2] = {1.5f, -2.25f};
    out.write(reinterpret_cast<const char*>(&a), 1);
    out.write(reinterpret_cast<const char*>(b), 8);
  }
  SafeTensorsFile file(path);
  CHECK(file.is_zero_copy("a"));
  CHECK_FALSE(file.is_zero_copy("b"));
  torch::Tensor b = file.get("b");
  const auto* p = static_cast<const uint8_t*>(b.data_ptr());
  CHECK((p < file.mapping_begin() || p >= file.mapping_begin() + file.mapping_size()));
  CHECK(torch::equal(b, torch::tensor({1.5f, -2.25f})));
  CHECK(file.get("a").item<uint8_t>() == 7);
}

TEST_CASE("validation: file too short", "[model][safetensors]") {
  const fs::path dir = test_dir("short");
  std::ofstream(dir / "empty.safetensors").close();
  check_rejected(dir / "empty.safetensors", "too short (0 bytes)");
  std::ofstream(dir / "five.safetensors") << "12345";
  check_rejected(dir / "five.safetensors", "too short (5 bytes)");
  CHECK_THROWS_WITH(SafeTensorsFile(dir / "absent.safetensors"),
                    Catch::Contains("absent.safetensors") && Catch::Contains("cannot open"));
}

TEST_CASE("validation: header length past the end of the file", "[model][safetensors]") {
  check_rejected(write_raw("long.safetensors", "{}", 0, 1000), "header length 1000 runs past the end of the file");
}

TEST_CASE("validation: absurd header length", "[model][safetensors]") {
  check_rejected(write_raw("absurd.safetensors", "{}", 0, 200'000'000ULL), "header length 200000000 is absurd");
}

TEST_CASE("validation: header not JSON or not an object", "[model][safetensors]") {
  check_rejected(write_raw("badjson.safetensors", R"({"a": {)"), "header is not valid JSON");
  check_rejected(write_raw("array.safetensors", "[1, 2]"), "header is not a JSON object");
  check_rejected(write_raw("space.safetensors", " {}"), "header is not a JSON object");
  check_rejected(write_raw("meta.safetensors", R"({"__metadata__":{"k":1}})"), "__metadata__['k'] is not a string");
}

TEST_CASE("validation: entry missing dtype, shape or data_offsets", "[model][safetensors]") {
  check_rejected(write_raw("nodtype.safetensors", R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': entry is missing 'dtype'");
  check_rejected(write_raw("noshape.safetensors", R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 4),
                 "tensor 'w': entry is missing 'shape'");
  check_rejected(write_raw("nooffsets.safetensors", R"({"w":{"dtype":"F32","shape":[1]}})", 4),
                 "tensor 'w': entry is missing 'data_offsets'");
  check_rejected(write_raw("notobject.safetensors", R"({"w":3})"), "tensor 'w': entry is not an object");
}

TEST_CASE("validation: unknown dtype", "[model][safetensors]") {
  check_rejected(write_raw("dtype.safetensors", R"({"w":{"dtype":"F128","shape":[1],"data_offsets":[0,16]}})", 16),
                 "tensor 'w': unknown dtype 'F128'");
}

TEST_CASE("validation: negative or non-integer shape dimensions", "[model][safetensors]") {
  check_rejected(write_raw("neg.safetensors", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': shape has a negative dimension -1");
  check_rejected(write_raw("frac.safetensors", R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': shape has a non-integer dimension 1.5");
  check_rejected(write_raw("str.safetensors", R"({"w":{"dtype":"F32","shape":["1"],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': shape has a non-integer dimension \"1\"");
  check_rejected(write_raw("huge.safetensors",
                           R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': shape [4294967296,4294967296] overflows");
}

TEST_CASE("validation: dtype size x shape must equal the byte length", "[model][safetensors]") {
  check_rejected(write_raw("size.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4),
                 "tensor 'w': F32 with shape [2] needs 8 bytes but data_offsets [0,4] hold 4");
}

TEST_CASE("validation: offsets outside the data section or reversed", "[model][safetensors]") {
  check_rejected(write_raw("outside.safetensors", R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 4),
                 "tensor 'w': data_offsets [0,8] lie outside the data section (4 bytes)");
  check_rejected(write_raw("reversed.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[4,0]}})", 4),
                 "tensor 'w': data_offsets [4,0] end before begin");
  check_rejected(write_raw("negoff.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4),
                 "tensor 'w': data_offsets [-4,0] is not a pair of non-negative integers");
}

TEST_CASE("validation: overlapping tensors", "[model][safetensors]") {
  check_rejected(write_raw("overlap.safetensors",
                           R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           12),
                 "tensor 'b' overlaps tensor 'a'");
  // Aliasing (two names, same bytes) is an overlap too, as in HF.
  check_rejected(write_raw("alias.safetensors",
                           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                           4),
                 "tensor 'b' overlaps tensor 'a'");
}

TEST_CASE("validation: gaps and trailing bytes in the data section (as HF)", "[model][safetensors]") {
  check_rejected(write_raw("gap.safetensors",
                           R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                           12),
                 "bytes [4, 8) of the data section before tensor 'b' belong to no tensor");
  check_rejected(write_raw("trailing.safetensors", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 8),
                 "bytes [4, 8) at the end of the data section belong to no tensor");
  // Zero-sized tensors take no bytes and may sit anywhere inside the tiling.
  SafeTensorsFile ok(write_raw("zero.safetensors",
                               R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})",
                               4));
  CHECK(ok.get("e").numel() == 0);
}

TEST_CASE("the writer rejects what safetensors cannot hold", "[model][safetensors]") {
  const fs::path path = test_dir("writer") / "w.safetensors";
  CHECK_THROWS_AS(verl::model::save_file(path, NamedTensors{{"__metadata__", torch::ones(1)}}), verl::InvalidArgument);
  CHECK_THROWS_AS(verl::model::save_file(path, NamedTensors{{"a", torch::ones(1)}, {"a", torch::ones(1)}}),
                  verl::InvalidArgument);
  CHECK_THROWS_AS(verl::model::save_file(path, NamedTensors{{"c", torch::ones(1, torch::kComplexFloat)}}),
                  verl::InvalidArgument);
  CHECK_FALSE(fs::exists(path));
  CHECK(fs::is_empty(path.parent_path()));  // no temporary left behind
  CHECK_THROWS_WITH(verl::model::save_file(test_dir("writer") / "no" / "dir.safetensors", NamedTensors{}),
                    Catch::Contains("dir.safetensors") && Catch::Contains("cannot write"));
}

TEST_CASE("sharded checkpoints round-trip with transformers' split and index", "[model][safetensors]") {
  const fs::path dir = test_dir("sharded");
  NamedTensors tensors;
  // 16 bytes each, except "big" (64 bytes > max 40): it takes a shard of its own, before the
  // shard being filled is closed (huggingface_hub's order).
  for (const char* name : {"z.0", "y.1", "big", "x.2", "w.3", "v.4"})
    tensors.emplace_back(name, std::string(name) == "big" ? torch::randn({16}) : torch::randn({4}));
  tensors.emplace_back("half", torch::randn({4}).to(torch::kBFloat16));  // 8 bytes
  const auto files = verl::model::save_sharded(dir, tensors, 40);

  // Shards: [big], [z.0, y.1], [x.2, w.3], [v.4, half].
  REQUIRE(files.size() == 5);
  CHECK(files.back().filename() == "model.safetensors.index.json");
  CHECK(files.front().filename() == "model-00001-of-00004.safetensors");
  std::ifstream in(dir / "model.safetensors.index.json");
  std::stringstream text;
  text << in.rdbuf();
  const auto index = nlohmann::json::parse(text.str());
  CHECK(index["metadata"]["total_size"] == 16 * 5 + 64 + 8);
  CHECK(index["metadata"]["total_parameters"] == 4 * 6 + 16);
  CHECK(index["weight_map"]["big"] == "model-00001-of-00004.safetensors");
  CHECK(index["weight_map"]["z.0"] == "model-00002-of-00004.safetensors");
  CHECK(index["weight_map"]["y.1"] == "model-00002-of-00004.safetensors");
  CHECK(index["weight_map"]["x.2"] == "model-00003-of-00004.safetensors");
  CHECK(index["weight_map"]["half"] == "model-00004-of-00004.safetensors");
  CHECK(text.str() == index.dump(2) + "\n");
  CHECK(SafeTensorsFile(dir / "model-00004-of-00004.safetensors").metadata().at("format") == "pt");

  const auto loaded = verl::model::load_checkpoint_dir(dir);
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& [name, t] : tensors) CHECK(same_bytes(loaded.at(name), t));

  // A save in one file replaces the sharded layout: nothing stale is left to be read.
  verl::model::save_sharded(dir, {tensors[0]}, 40);
  CHECK(fs::exists(dir / "model.safetensors"));
  CHECK_FALSE(fs::exists(dir / "model.safetensors.index.json"));
  CHECK_FALSE(fs::exists(dir / "model-00001-of-00004.safetensors"));
  CHECK(verl::model::load_checkpoint_dir(dir).size() == 1);
}

TEST_CASE("sharded checkpoints: missing shard, tensor missing from its shard, no checkpoint", "[model][safetensors]") {
  const fs::path dir = test_dir("sharded_bad");
  verl::model::save_sharded(dir, NamedTensors{{"a", torch::ones(4)}, {"b", torch::ones(4)}}, 16);
  fs::remove(dir / "model-00002-of-00002.safetensors");
  CHECK_THROWS_AS(verl::model::load_checkpoint_dir(dir), CheckpointError);
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(dir),
                    Catch::Contains("model.safetensors.index.json") &&
                        Catch::Contains("lists shard 'model-00002-of-00002.safetensors' (for tensor 'b')") &&
                        Catch::Contains("does not exist"));

  verl::model::save_file(dir / "model-00002-of-00002.safetensors", NamedTensors{{"other", torch::ones(4)}});
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(dir),
                    Catch::Contains("puts tensor 'b' in shard 'model-00002-of-00002.safetensors'"));

  const fs::path empty = test_dir("no_checkpoint");
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(empty),
                    Catch::Contains(empty.string()) && Catch::Contains("has neither model.safetensors nor"));
}

// ---- issue 21: fuzzing findings (untrusted headers and indexes) ------------------------------

namespace {

// The CheckpointError message of `action` (FAILs when it throws nothing or another type).
template <typename F>
std::string checkpoint_error(F&& action) {
  try {
    action();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  FAIL("no CheckpointError");
  return "";
}

void write_text(const fs::path& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// A two-shard checkpoint ("a" in shard 1, "b" in shard 2) whose index is then rewritten by the test.
fs::path sharded_checkpoint(const std::string& name) {
  const fs::path dir = test_dir(name);
  verl::model::save_sharded(dir, NamedTensors{{"a", torch::ones(4)}, {"b", torch::full({4}, 2.0)}}, 16);
  return dir;
}

void write_index(const fs::path& dir, const verl::Json& weight_map) {
  write_text(dir / "model.safetensors.index.json", verl::Json{{"weight_map", weight_map}}.dump());
}

}  // namespace

TEST_CASE("bug 9: a shape nested 100,000 deep is refused, not dumped recursively", "[model][safetensors]") {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  check_rejected(write_raw("deep.safetensors", R"({"w":{"dtype":"F32","shape":)" + deep + R"(,"data_offsets":[0,4]}})", 4),
                 "nesting deeper than 128 levels");
  // Nested just under the parser's limit: the message quotes a bounded prefix of the value.
  const std::string nested = std::string(100, '[') + "1" + std::string(100, ']');
  const fs::path path =
      write_raw("nested.safetensors", R"({"w":{"dtype":"F32","shape":[)" + nested + R"(],"data_offsets":[0,4]}})", 4);
  const std::string message = checkpoint_error([&] { SafeTensorsFile file(path); });
  CHECK(message.find("tensor 'w': shape has a non-integer dimension [[[") != std::string::npos);
  CHECK(message.size() < 1000);
  // So are data_offsets holding something other than two numbers.
  check_rejected(write_raw("offsets.safetensors",
                           R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[[0],{"a":[4]}]}})", 4),
                 "data_offsets [[0], {\"a\": [4]}] is not a pair of non-negative integers");
  // And a rank no tensor has (100 dimensions of size 1).
  std::string ones = "1";
  for (int i = 1; i < 100; ++i) ones += ",1";
  check_rejected(write_raw("rank.safetensors", R"({"w":{"dtype":"F32","shape":[)" + ones + R"(],"data_offsets":[0,4]}})", 4),
                 "shape has 100 dimensions, more than 64");
}

TEST_CASE("bug 11: numbers out of range and invalid bytes in a header are CheckpointErrors", "[model][safetensors]") {
  check_rejected(write_raw("e400.safetensors", R"({"w":{"dtype":"F32","shape":[1e400],"data_offsets":[0,4]}})", 4),
                 "header is not valid JSON");
  const fs::path bad_utf8 = write_raw("utf8.safetensors", "{\"w\xff\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
  const std::string message = checkpoint_error([&] { SafeTensorsFile file(bad_utf8); });
  CHECK(message.find("header is not valid JSON") != std::string::npos);
  CHECK(verl::untrusted::is_utf8(message));
}

TEST_CASE("untrusted names, keys and dtypes are escaped in messages", "[model][safetensors]") {
  // JSON strings may hold any control character; the message shows them escaped.
  check_rejected(write_raw("ctrl.safetensors", R"({"w\u0001\n":{"dtype":"F32\u0000","shape":[1],"data_offsets":[0,4]}})", 4),
                 "tensor 'w\\x01\\n': unknown dtype 'F32\\x00'");
  check_rejected(write_raw("metakey.safetensors", R"({"__metadata__":{"k\u007f":1}})"), "__metadata__['k\\x7f']");
  // A file path that is not UTF-8 (Linux names are bytes) reaches the message escaped.
  const fs::path dir = test_dir("binary_name");
  const fs::path path = dir / "w\xff.safetensors";
  write_text(path, "short");
  const std::string message = checkpoint_error([&] { SafeTensorsFile file(path); });
  CHECK(message.find("w\\xff.safetensors") != std::string::npos);
  CHECK(verl::untrusted::is_utf8(message));
  SafeTensorsFile ok(write_raw("ok.safetensors", R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4));
  CHECK_THROWS_WITH(ok.get(std::string("missing\xfe")), Catch::Contains("no tensor 'missing\\xfe'"));
}

TEST_CASE("bug 13: weight_map shard names must be plain file names inside the checkpoint", "[model][safetensors]") {
  const fs::path dir = sharded_checkpoint("traversal");
  // A valid safetensors file outside the checkpoint directory: before the fix the load succeeded.
  const fs::path outside = dir.parent_path() / "outside.safetensors";
  verl::model::save_file(outside, NamedTensors{{"b", torch::full({4}, 7.0)}});
  const std::string shard1 = "model-00001-of-00002.safetensors";
  const std::string index = (dir / "model.safetensors.index.json").string();
  struct Case {
    std::string shard;
    std::string shown;  // how the message quotes it
    std::string why;
  };
  const std::vector<Case> cases = {
      {"../outside.safetensors", "\"../outside.safetensors\"", "is a path"},
      {outside.string(), "\"" + outside.string() + "\"", "is a path"},
      {"sub/model.safetensors", "\"sub/model.safetensors\"", "is a path"},
      {"./" + shard1, "\"./" + shard1 + "\"", "is a path"},
      {"", "\"\"", "is empty"},
      {".", "\".\"", "is not a file name"},
      {"..", "\"..\"", "is not a file name"},
      {std::string("a\0b", 3), "\"a\\x00b\"", "contains a NUL byte"},
  };
  for (const Case& c : cases) {
    INFO("shard name " << c.shown);
    write_index(dir, {{"a", shard1}, {"b", c.shard}});
    const std::string message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
    INFO(message);
    CHECK(message.find(index) != std::string::npos);
    CHECK(message.find("weight_map['b'] names shard " + c.shown) != std::string::npos);
    CHECK(message.find(c.why) != std::string::npos);
  }
}

TEST_CASE("bug 7: a shard name longer than 255 bytes is a CheckpointError naming the index", "[model][safetensors]") {
  const fs::path dir = sharded_checkpoint("long_name");
  write_index(dir, {{"a", "model-00001-of-00002.safetensors"}, {"b", std::string(300, 'x') + ".safetensors"}});
  const std::string message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
  CHECK(message.find((dir / "model.safetensors.index.json").string()) != std::string::npos);
  CHECK(message.find("longer than 255 bytes") != std::string::npos);
  CHECK(message.size() < 2000);
  // 255 bytes is a legal name: it is looked for (and here missing), not refused.
  write_index(dir, {{"a", "model-00001-of-00002.safetensors"}, {"b", std::string(255, 'y')}});
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(dir), Catch::Contains("does not exist"));
}

TEST_CASE("bug 11: symlink loops and other filesystem trouble are CheckpointErrors naming the path",
          "[model][safetensors]") {
  const fs::path dir = sharded_checkpoint("loops");
  const fs::path shard2 = dir / "model-00002-of-00002.safetensors";
  fs::remove(shard2);
  fs::create_symlink(shard2.filename(), shard2);  // points at itself
  std::string message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
  CHECK(message.find(shard2.string()) != std::string::npos);
  CHECK(message.find("symbolic links") != std::string::npos);
  // The index itself a loop.
  const fs::path index = dir / "model.safetensors.index.json";
  fs::remove(index);
  fs::create_symlink(index.filename(), index);
  message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
  CHECK(message.find(index.string()) != std::string::npos);
  CHECK(message.find("symbolic links") != std::string::npos);
  // model.safetensors a loop (and no index): opened, so the error says why.
  fs::remove(index);
  fs::create_symlink("model.safetensors", dir / "model.safetensors");
  message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
  CHECK(message.find((dir / "model.safetensors").string()) != std::string::npos);
  CHECK(message.find("symbolic links") != std::string::npos);
  // The index as a directory, and an index nested too deep or holding 1e400.
  fs::remove(dir / "model.safetensors");
  fs::create_directory(index);
  CHECK_THROWS_AS(verl::model::load_checkpoint_dir(dir), CheckpointError);
  fs::remove(index);
  write_text(index, R"({"weight_map": )" + std::string(100000, '[') + std::string(100000, ']') + "}");
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(dir),
                    Catch::Contains(index.string()) && Catch::Contains("nesting deeper than 128 levels"));
  write_text(index, R"({"metadata": {"total_size": 1e400}, "weight_map": {}})");
  CHECK_THROWS_WITH(verl::model::load_checkpoint_dir(dir),
                    Catch::Contains(index.string()) && Catch::Contains("not valid JSON"));
  write_index(dir, {{"a", verl::Json::array({verl::Json::array({std::string(1000, 'z')})})}});
  message = checkpoint_error([&] { verl::model::load_checkpoint_dir(dir); });
  CHECK(message.find("weight_map['a'] is not a file name but array") != std::string::npos);
  CHECK(message.size() < 1000);
}

TEST_CASE("symlinked shard files keep working (the Hugging Face hub cache layout)", "[model][safetensors]") {
  // hub/models--org--name/snapshots/<rev>/<file> -> ../../blobs/<hash>
  const fs::path root = test_dir("hub_cache");
  const fs::path blobs = root / "blobs", snapshot = root / "snapshots" / "abc123";
  fs::create_directories(snapshot);
  const fs::path staged = sharded_checkpoint("hub_cache_staging");
  fs::create_directories(blobs);
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(staged)) files.push_back(entry.path());
  REQUIRE(files.size() == 3);
  for (const fs::path& file : files) {
    const std::string hash = "blob-" + file.filename().string();
    fs::rename(file, blobs / hash);
    fs::create_symlink(fs::path("../../blobs") / hash, snapshot / file.filename());
  }
  const auto loaded = verl::model::load_checkpoint_dir(snapshot);
  REQUIRE(loaded.size() == 2);
  CHECK(torch::equal(loaded.at("b"), torch::full({4}, 2.0)));
  const verl::model::SafeTensorsDir opened(snapshot);
  CHECK(opened.weights_path() == snapshot / "model.safetensors.index.json");
  CHECK(opened.info("b").shape == std::vector<int64_t>{4});
  CHECK(opened.file("a").path() == snapshot / "model-00001-of-00002.safetensors");
}
