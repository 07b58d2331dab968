// verl::DataProto: verl's operations and invariants.
#include <catch2/catch.hpp>
#include <torch/serialize.h>
#include <torch/torch.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/remove_tree.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"

using verl::DataProto;
using verl::Json;

namespace {

// 6 rows: obs = 0..5 as a (6, 2) tensor [[0,1],[2,3],...], labels "a".."f", meta {"info": "x"}.
DataProto sample(int64_t rows = 6) {
  DataProto::Column labels;
  for (int64_t i = 0; i < rows; ++i) labels.push_back(std::string(1, static_cast<char>('a' + i)));
  return DataProto::from_dict({{"obs", torch::arange(rows * 2).reshape({rows, 2})}, {"ids", torch::arange(rows)}},
                              {{"labels", labels}}, Json{{"info", "x"}});
}

std::vector<int64_t> ids(const DataProto& d) {
  torch::Tensor t = d.tensor("ids").contiguous();
  return {t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel()};
}

std::vector<std::string> labels(const DataProto& d) {
  std::vector<std::string> out;
  for (const auto& v : d.column("labels")) out.push_back(v.get<std::string>());
  return out;
}

}  // namespace

TEST_CASE("DataProto: construction checks that every entry has the same rows") {
  CHECK(sample().size() == 6);
  CHECK(DataProto().size() == 0);
  CHECK_THROWS_AS(DataProto::from_dict({{"a", torch::zeros({3})}, {"b", torch::zeros({4})}}), verl::DataError);
  CHECK_THROWS_AS(DataProto::from_dict({{"a", torch::zeros({3})}}, {{"c", {1, 2}}}), verl::DataError);
  CHECK_THROWS_AS(DataProto::from_dict({{"scalar", torch::tensor(1.0)}}), verl::DataError);
  CHECK_THROWS_WITH(DataProto::from_dict({{"a", torch::zeros({3})}, {"b", torch::zeros({4})}}),
                    Catch::Contains("'a' has 3 rows") && Catch::Contains("'b' has 4"));
}

TEST_CASE("DataProto: repeat interleave keeps copies together, tile repeats the batch") {
  DataProto d = sample(2);
  DataProto inter = d.repeat(3, true);
  CHECK(ids(inter) == std::vector<int64_t>{0, 0, 0, 1, 1, 1});
  CHECK(labels(inter) == std::vector<std::string>{"a", "a", "a", "b", "b", "b"});
  DataProto tile = d.repeat(3, false);
  CHECK(ids(tile) == std::vector<int64_t>{0, 1, 0, 1, 0, 1});
  CHECK(labels(tile) == std::vector<std::string>{"a", "b", "a", "b", "a", "b"});
  CHECK(torch::equal(tile.tensor("obs")[2], d.tensor("obs")[0]));
  CHECK(inter.meta_info() == d.meta_info());
}

TEST_CASE("DataProto: chunk(5) on 6 rows raises unless auto-padding is on") {
  DataProto d = sample();
  CHECK_THROWS_AS(d.chunk(5), verl::DataError);
  auto parts = d.chunk(3);
  REQUIRE(parts.size() == 3);
  CHECK(ids(parts[1]) == std::vector<int64_t>{2, 3});
  CHECK(labels(parts[2]) == std::vector<std::string>{"e", "f"});
  CHECK(parts[0].tensor("obs").data_ptr() == d.tensor("obs").data_ptr());  // a view, not a copy
  d.meta_info()[DataProto::kAutoPaddingKey] = true;
  auto uneven = d.chunk(4);
  REQUIRE(uneven.size() == 4);
  CHECK(uneven[0].size() == 2);
  CHECK(uneven[3].size() == 1);
}

TEST_CASE("DataProto: split gives pieces of split_size, the last shorter") {
  auto parts = sample(5).split(2);
  REQUIRE(parts.size() == 3);
  CHECK(ids(parts[2]) == std::vector<int64_t>{4});
}

TEST_CASE("DataProto: select, select_idxs, slice") {
  DataProto d = sample();
  DataProto only_obs = d.select(std::vector<std::string>{"obs"}, std::vector<std::string>{}, std::nullopt);
  CHECK(only_obs.batch().size() == 1);
  CHECK(only_obs.non_tensor_batch().empty());
  CHECK(only_obs.meta_info() == d.meta_info());
  CHECK_THROWS_AS(d.select(std::vector<std::string>{"nope"}), verl::DataError);
  DataProto deep = d.select(std::nullopt, std::nullopt, std::nullopt, true);
  CHECK(deep.tensor("obs").data_ptr() != d.tensor("obs").data_ptr());

  DataProto picked = d.select_idxs(torch::tensor({5, 0, -2}));
  CHECK(ids(picked) == std::vector<int64_t>{5, 0, 4});
  CHECK(labels(picked) == std::vector<std::string>{"f", "a", "e"});
  DataProto masked = d.select_idxs(torch::tensor({true, false, true, false, false, true}));
  CHECK(ids(masked) == std::vector<int64_t>{0, 2, 5});
  CHECK_THROWS_AS(d.select_idxs(torch::tensor({6})), verl::DataError);

  DataProto sliced = d.slice(1, 6, 2);
  CHECK(ids(sliced) == std::vector<int64_t>{1, 3, 5});
  CHECK(labels(sliced) == std::vector<std::string>{"b", "d", "f"});
}

TEST_CASE("DataProto: pop moves entries out, and a bad key changes nothing") {
  DataProto d = sample();
  CHECK_THROWS_AS(d.pop({"obs", "missing"}), verl::DataError);
  CHECK(d.has_tensor("obs"));
  DataProto popped = d.pop({"obs"}, {"labels"}, {"info"});
  CHECK(popped.has_tensor("obs"));
  CHECK(popped.has_column("labels"));
  CHECK(popped.meta_info()["info"] == "x");
  CHECK_FALSE(d.has_tensor("obs"));
  CHECK_FALSE(d.has_column("labels"));
  CHECK_FALSE(d.meta_info().contains("info"));
  CHECK(d.size() == 6);
}

TEST_CASE("DataProto: rename renames tensors and refuses clashes") {
  DataProto d = sample();
  d.rename({"obs"}, {"observations"});
  CHECK(d.has_tensor("observations"));
  CHECK_FALSE(d.has_tensor("obs"));
  CHECK_THROWS_AS(d.rename({"observations"}, {"ids"}), verl::DataError);
  CHECK_THROWS_AS(d.rename({"a", "b"}, {"c"}), verl::InvalidArgument);
}

TEST_CASE("DataProto: union merges equal keys and rejects conflicting values") {
  DataProto a = sample();
  DataProto b = DataProto::from_dict({{"obs", a.tensor("obs").clone()}, {"extra", torch::ones({6})}}, {},
                                     Json{{"step", 1}});
  a.union_with(b);
  CHECK(a.has_tensor("extra"));
  CHECK(a.meta_info()["step"] == 1);

  DataProto conflicting = DataProto::from_dict({{"obs", torch::zeros({6, 2}, torch::kLong)}});
  CHECK_THROWS_AS(sample().union_with(conflicting), verl::DataError);
  DataProto other_meta = DataProto::from_dict({}, {}, Json{{"info", "y"}});
  CHECK_THROWS_AS(sample().union_with(other_meta), verl::DataError);
  DataProto other_size = DataProto::from_dict({{"z", torch::zeros({2})}});
  CHECK_THROWS_AS(sample().union_with(other_size), verl::DataError);

  // NaN equals NaN: a batch unions with a copy of itself.
  DataProto nan = DataProto::from_dict({{"v", torch::tensor({1.0, std::nan("")})}});
  DataProto nan_copy = DataProto::from_dict({{"v", torch::tensor({1.0, std::nan("")})}});
  CHECK_NOTHROW(nan.union_with(nan_copy));
}

TEST_CASE("DataProto: concat joins rows, merges meta_info and gathers metrics") {
  DataProto a = sample(2), b = sample(3);
  a.meta_info()["metrics"] = Json{{"loss", 1.0}};
  b.meta_info()["metrics"] = Json{{"loss", 2.0}};
  DataProto c = DataProto::concat({a, b});
  CHECK(c.size() == 5);
  CHECK(ids(c) == std::vector<int64_t>{0, 1, 0, 1, 2});
  CHECK(labels(c) == std::vector<std::string>{"a", "b", "a", "b", "c"});
  CHECK(c.meta_info()["metrics"]["loss"] == Json::array({1.0, 2.0}));
  CHECK(c.meta_info()["info"] == "x");
  DataProto d = sample(2);
  d.meta_info()["info"] = "other";
  CHECK_THROWS_AS(DataProto::concat({a, d}), verl::DataError);
  CHECK_THROWS_AS(DataProto::concat({}), verl::DataError);
  CHECK_THROWS_AS(DataProto::concat({a, DataProto::from_dict({{"obs", torch::zeros({1, 2})}})}), verl::DataError);
}

TEST_CASE("DataProto: reorder permutes rows in place") {
  DataProto d = sample(3);
  d.reorder(torch::tensor({2, 0, 1}));
  CHECK(ids(d) == std::vector<int64_t>{2, 0, 1});
  CHECK(labels(d) == std::vector<std::string>{"c", "a", "b"});
  CHECK_THROWS_AS(d.reorder(torch::tensor({0, 1})), verl::DataError);
}

TEST_CASE("DataProto: pad to divisor and unpad round trip") {
  DataProto d = sample(5);
  auto [padded, pad] = verl::pad_dataproto_to_divisor(d, 4);
  CHECK(pad == 3);
  CHECK(ids(padded) == std::vector<int64_t>{0, 1, 2, 3, 4, 0, 1, 2});
  DataProto back = verl::unpad_dataproto(padded, pad);
  CHECK(ids(back) == ids(d));
  CHECK(labels(back) == labels(d));
  auto [same, zero] = verl::pad_dataproto_to_divisor(d, 5);
  CHECK(zero == 0);
  CHECK(same.size() == 5);
}

TEST_CASE("DataProto: make_iterator is deterministic for a seed and differs across seeds") {
  DataProto d = sample(8);
  auto order = [&](std::optional<uint64_t> seed) {
    std::vector<int64_t> all;
    for (const auto& mb : d.make_iterator(4, 2, seed)) {
      auto v = ids(mb);
      CHECK(mb.meta_info() == d.meta_info());
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  CHECK(order(1).size() == 16);
  CHECK(order(1) == order(1));
  CHECK(order(1) != order(2));
  CHECK(ids(d.make_iterator(4, 1)[0]) == std::vector<int64_t>{0, 1, 2, 3});  // no seed: in order
  CHECK_THROWS_AS(d.make_iterator(3, 1), verl::DataError);
}

TEST_CASE("DataProto: save_to_disk / load_from_disk round trip, and a bad file is a CheckpointError") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "verl_test_data_proto";
  fs::create_directories(dir);
  DataProto d = sample();
  d.set_column("extra", {Json{{"k", 1}}, nullptr, 2.5, true, Json::array({1, 2}), "s"});
  d.save_to_disk((dir / "batch.pt").string());
  CHECK_FALSE(fs::exists(dir / "batch.pt.tmp"));
  DataProto back = DataProto::load_from_disk((dir / "batch.pt").string());
  CHECK(torch::equal(back.tensor("obs"), d.tensor("obs")));
  CHECK(back.column("extra") == d.column("extra"));
  CHECK(back.meta_info() == d.meta_info());

  std::ofstream((dir / "garbage.pt").string()) << "not a pickle";
  CHECK_THROWS_AS(DataProto::load_from_disk((dir / "garbage.pt").string()), verl::CheckpointError);
  CHECK_THROWS_WITH(DataProto::load_from_disk((dir / "missing.pt").string()), Catch::Contains("missing.pt"));
  verl::remove_tree(dir);
}

namespace {

// The fields of a DataProto file as save_to_disk writes them, for damaging one at a time.
c10::impl::GenericDict file_fields() {
  c10::Dict<std::string, torch::Tensor> tensors;
  tensors.insert("ids", torch::arange(2));
  c10::impl::GenericDict payload(c10::StringType::get(), c10::AnyType::get());
  payload.insert("format", std::string("verl-cpp.DataProto/1"));
  payload.insert("tensors", tensors);
  payload.insert("non_tensor_batch", std::string(R"({"labels": ["a", "b"]})"));
  payload.insert("meta_info", std::string(R"({"info": "x"})"));
  return payload;
}

std::string write_fields(const std::filesystem::path& path, const c10::impl::GenericDict& payload) {
  const std::vector<char> bytes = torch::pickle_save(c10::IValue(payload));
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path.string();
}

}  // namespace

// Issue 21: a damaged or hand-made DataProto file is a CheckpointError naming the file and the field, never a
// c10 or JSON library exception, nor a stack overflow on deeply nested JSON.
TEST_CASE("DataProto: load_from_disk checks every field of an untrusted file") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "verl_test_data_proto_untrusted";
  fs::create_directories(dir);
  const std::string good = write_fields(dir / "good.pt", file_fields());
  DataProto loaded = DataProto::load_from_disk(good);
  CHECK(loaded.size() == 2);
  CHECK(loaded.column("labels")[1] == "b");

  auto damaged = [&](const std::string& field, c10::IValue value, const std::string& expected) {
    c10::impl::GenericDict payload = file_fields();
    payload.insert_or_assign(field, std::move(value));
    const std::string path = write_fields(dir / "damaged.pt", payload);
    CHECK_THROWS_AS(DataProto::load_from_disk(path), verl::CheckpointError);
    CHECK_THROWS_WITH(DataProto::load_from_disk(path), Catch::Contains(path) && Catch::Contains(expected));
  };
  damaged("non_tensor_batch", c10::IValue(int64_t{3}), "DataProto field 'non_tensor_batch' is not a string");
  damaged("meta_info", c10::IValue(std::string("[1, 2]")), "field 'meta_info' must hold a JSON object, got array");
  damaged("meta_info", c10::IValue(std::string(100000, '[') + std::string(100000, ']')), "deeper than 128");
  damaged("non_tensor_batch", c10::IValue(std::string(R"({"labels": )")),
          "DataProto field 'non_tensor_batch' is not valid JSON");
  damaged("non_tensor_batch", c10::IValue(std::string(R"({"labels": 1})")),
          "non-tensor column 'labels' must be a JSON array, got integer");
  damaged("non_tensor_batch", c10::IValue(std::string(R"({"labels": ["a", "b", "c"]})")), "inconsistent DataProto");
  damaged("tensors", c10::IValue(std::string("x")), "DataProto field 'tensors' is not a dict");
  c10::impl::GenericDict not_tensors(c10::StringType::get(), c10::AnyType::get());
  not_tensors.insert("ids", int64_t{1});
  damaged("tensors", c10::IValue(not_tensors), "must map names to tensors");
  c10::Dict<std::string, torch::Tensor> odd_name;
  odd_name.insert("ids\xff", torch::arange(2));
  damaged("tensors", c10::IValue(odd_name), "tensor name 'ids\\xff' is not valid UTF-8");
  verl::remove_tree(dir);
}

TEST_CASE("DataProto: messages quote values instead of dumping them; unsavable strings are CheckpointErrors") {
  // a string that is not UTF-8 (possible from C++) made dump() throw a JSON type_error inside the message
  DataProto a = DataProto::from_dict({{"ids", torch::arange(2)}}, {}, Json{{"k", "\xff"}});
  DataProto b = DataProto::from_dict({{"ids", torch::arange(2)}}, {}, Json{{"k", "ok"}});
  CHECK_THROWS_WITH(DataProto::concat({a, b}),
                    Catch::Contains("meta_info key 'k' has conflicting values \"\\xff\" and \"ok\""));
  DataProto metrics = DataProto::from_dict({{"ids", torch::arange(2)}}, {}, Json{{"metrics", Json::array({"\xfe"})}});
  CHECK_THROWS_WITH(DataProto::concat({metrics, metrics}),
                    Catch::Contains("meta_info metrics must be dicts, got \"\\xfe\""));

  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "verl_test_data_proto_unsavable";
  fs::create_directories(dir);
  DataProto column = DataProto::from_dict({{"ids", torch::arange(1)}}, {{"text", {Json("\xff")}}});
  const std::string path = (dir / "batch.pt").string();
  CHECK_THROWS_AS(column.save_to_disk(path), verl::CheckpointError);
  CHECK_THROWS_WITH(column.save_to_disk(path), Catch::Contains("cannot save DataProto to '" + path + "'"));
  verl::remove_tree(dir);
}

TEST_CASE("DataProto: to(device) keeps values; set_tensor checks rows") {
  DataProto d = sample();
  DataProto moved = d.to(torch::kCPU);
  CHECK(torch::equal(moved.tensor("obs"), d.tensor("obs")));
  CHECK_THROWS_AS(d.set_tensor("bad", torch::zeros({5})), verl::DataError);
  d.set_tensor("good", torch::zeros({6, 3}));
  CHECK(d.has_tensor("good"));
  CHECK_THROWS_AS(d.tensor("nope"), verl::DataError);
}
