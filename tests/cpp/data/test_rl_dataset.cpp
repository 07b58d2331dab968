// verl::data::RLHFDataset against verl's Python RLHFDataset + collate_fn on the arith demo tokenizer (ids and
// layout computed once with python/verl/utils/dataset/rl_dataset.py), verl's truncation modes on known ids,
// row validation errors naming the row, and JSONL / JSON file reading.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/remove_tree.h"
#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/rl_dataset.h"
#include "verl/tokenizer/tokenizer.h"

using namespace verl;
using verl::data::RLHFDataset;
using verl::data::RLHFDatasetOptions;
using verl::data::Truncation;
using Ids = std::vector<std::int32_t>;

namespace {

const tokenizer::Tokenizer& arith_tokenizer() {
  static const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(VERL_SOURCE_DIR "/examples/arith/tokenizer");
  return tok;
}

Json arith_row(const std::string& question, const std::string& answer, int64_t index) {
  return Json{{"data_source", "arith"},
              {"prompt", Json::array({Json{{"role", "user"}, {"content", question}}})},
              {"ability", "math"},
              {"reward_model", Json{{"style", "rule"}, {"ground_truth", answer}}},
              {"extra_info", Json{{"split", "train"}, {"index", index}}}};
}

RLHFDatasetOptions options(int64_t max_prompt_length, Truncation truncation = Truncation::kError) {
  RLHFDatasetOptions o;
  o.max_prompt_length = max_prompt_length;
  o.truncation = truncation;
  return o;
}

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    path = std::filesystem::temp_directory_path() / ("verl_rl_dataset_test_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() { verl::remove_tree(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name) << text;
    return (path / name).string();
  }
};

}  // namespace

TEST_CASE("rl_dataset: left-padded prompt batch with verl's columns, as the Python RLHFDataset", "[data]") {
  RLHFDataset ds({arith_row("Compute 37+48.", "85", 0), arith_row("Compute 5-9.", "-4", 1)}, arith_tokenizer(),
                 options(24));
  REQUIRE(ds.size() == 2);
  CHECK(ds.pad_token_id() == 0);  // tokenizer_config.json's pad_token <|endoftext|>
  // The rendered ChatML prompt, encoded without special tokens (verl's RLHFDataset gives the same ids).
  const Ids expected0 = {1, 275, 201, 286, 223, 21, 25, 13, 22, 26, 16, 2, 201, 1, 272, 201};
  const Ids expected1 = {1, 275, 201, 286, 223, 23, 15, 27, 16, 2, 201, 1, 272, 201};
  CHECK(ds.prompt_ids(0) == expected0);
  CHECK(ds.prompt_ids(1) == expected1);
  CHECK(arith_tokenizer().decode(expected0) ==
        "<|im_start|>user\nCompute 37+48.<|im_end|>\n<|im_start|>assistant\n");

  DataProto b = ds.batch({1, 0});
  REQUIRE(b.size() == 2);
  const torch::Tensor ids = b.tensor("input_ids"), mask = b.tensor("attention_mask"), pos = b.tensor("position_ids");
  REQUIRE(ids.sizes() == torch::IntArrayRef({2, 24}));
  CHECK(ids.scalar_type() == torch::kLong);
  // verl's collate_fn([ds[1], ds[0]]) with max_prompt_length=24:
  const torch::Tensor want_ids = torch::tensor(
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 275, 201, 286, 223, 23, 15, 27, 16, 2,  201, 1,   272, 201,
       0, 0, 0, 0, 0, 0, 0, 0, 1, 275, 201, 286, 223, 21, 25, 13, 22, 26, 16, 2, 201, 1, 272, 201}, torch::kLong);
  const torch::Tensor want_pos = torch::tensor(
      {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8,  9,  10, 11, 12, 13,
       0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, torch::kLong);
  CHECK(torch::equal(ids, want_ids.view({2, 24})));
  CHECK(torch::equal(mask, (want_ids.view({2, 24}) != 0).to(torch::kLong)));  // pad id 0 never occurs in a prompt
  CHECK(torch::equal(pos, want_pos.view({2, 24})));

  CHECK(b.column("data_source") == DataProto::Column{"arith", "arith"});
  CHECK(b.column("reward_model")[0]["ground_truth"] == "-4");
  CHECK(b.column("ability")[1] == "math");
  CHECK(b.column("extra_info")[0] == Json{{"split", "train"}, {"index", 1}});
  CHECK(b.column("index") == DataProto::Column{1, 0});
  CHECK(b.column("tools_kwargs")[0] == Json::object());
  CHECK(b.column("interaction_kwargs")[1] == Json::object());
  CHECK(b.column("raw_prompt_ids")[1] == Json(expected0));
  CHECK(b.column("raw_prompt")[0] == arith_row("Compute 5-9.", "-4", 1)["prompt"]);  // return_raw_chat (verl: true)
  CHECK(!b.has_column("prompt"));
  CHECK(!b.has_column("full_prompts"));
  CHECK(b.batch().size() == 3);

  CHECK_THROWS_AS(ds.batch({2}), DataError);
  CHECK_THROWS_AS(ds.batch({}), DataError);
  CHECK(torch::equal(ds.batch({-1}).tensor("input_ids"), ds.batch({1}).tensor("input_ids")));
}

TEST_CASE("rl_dataset: truncation modes keep verl's tokens", "[data]") {
  const Ids ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  CHECK(data::truncate_prompt(ids, 4, Truncation::kLeft) == Ids{7, 8, 9, 10});
  CHECK(data::truncate_prompt(ids, 4, Truncation::kRight) == Ids{1, 2, 3, 4});
  CHECK(data::truncate_prompt(ids, 4, Truncation::kMiddle) == Ids{1, 2, 9, 10});
  CHECK(data::truncate_prompt(ids, 5, Truncation::kMiddle) == Ids{1, 2, 8, 9, 10});  // max//2 from the start
  CHECK(data::truncate_prompt(ids, 1, Truncation::kMiddle) == Ids{10});
  CHECK(data::truncate_prompt(ids, 10, Truncation::kError) == ids);  // fits: unchanged
  CHECK_THROWS_AS(data::truncate_prompt(ids, 9, Truncation::kError), DataError);
  CHECK_THROWS_WITH(data::truncate_prompt(ids, 9, Truncation::kError, "train.jsonl:3"),
                    Catch::Contains("train.jsonl:3") && Catch::Contains("prompt length 10") &&
                        Catch::Contains("data.max_prompt_length=9"));
  CHECK_THROWS_AS(data::truncate_prompt(ids, 0, Truncation::kLeft), ConfigError);

  CHECK(data::parse_truncation("error") == Truncation::kError);
  CHECK(data::parse_truncation("left") == Truncation::kLeft);
  CHECK(data::parse_truncation("right") == Truncation::kRight);
  CHECK(data::parse_truncation("middle") == Truncation::kMiddle);
  CHECK_THROWS_WITH(data::parse_truncation("both"), Catch::Contains("data.truncation") && Catch::Contains("both"));
  CHECK_THROWS_AS(data::parse_truncation("both"), ConfigError);
}

TEST_CASE("rl_dataset: over-long prompts follow data.truncation and filter_overlong_prompts", "[data]") {
  std::vector<Json> rows = {arith_row("Compute 1+2.", "3", 0),
                            arith_row("Compute 1+2+3+4+5+6+7+8+9+10+11+12+13+14+15.", "120", 1)};
  const RLHFDataset untruncated(rows, arith_tokenizer(), options(512));
  const Ids full = untruncated.prompt_ids(1);
  const auto long_length = static_cast<int64_t>(full.size());
  const int64_t limit = static_cast<int64_t>(untruncated.prompt_ids(0).size()) + 2;
  REQUIRE(long_length > limit);

  CHECK_THROWS_WITH(RLHFDataset(rows, arith_tokenizer(), options(limit)),
                    Catch::Contains("row 1") && Catch::Contains("prompt length " + std::to_string(long_length)));
  CHECK_THROWS_AS(RLHFDataset(rows, arith_tokenizer(), options(limit)), DataError);

  RLHFDataset left(rows, arith_tokenizer(), options(limit, Truncation::kLeft));
  CHECK(left.prompt_ids(1) == Ids(full.end() - limit, full.end()));
  CHECK(left.batch({1}).tensor("attention_mask").sum().item<int64_t>() == limit);  // no padding left

  RLHFDatasetOptions filter = options(limit);
  filter.filter_overlong_prompts = true;
  RLHFDataset filtered(rows, arith_tokenizer(), filter);
  REQUIRE(filtered.size() == 1);
  CHECK(filtered.row(0)["reward_model"]["ground_truth"] == "3");
  CHECK(filtered.origin(0) == "row 0");
}

TEST_CASE("rl_dataset: bad rows are DataErrors naming the row", "[data]") {
  auto fails = [](Json row, const std::string& what) {
    std::vector<Json> rows = {arith_row("Compute 1+2.", "3", 0), std::move(row)};
    CHECK_THROWS_WITH(RLHFDataset(rows, arith_tokenizer(), options(64), {"a.jsonl:1", "a.jsonl:2"}),
                      Catch::Contains("a.jsonl:2") && Catch::Contains(what));
    CHECK_THROWS_AS(RLHFDataset(rows, arith_tokenizer(), options(64)), DataError);
  };
  fails(Json::array({1, 2}), "must be a JSON object");
  Json no_prompt = arith_row("x", "1", 0);
  no_prompt.erase("prompt");
  fails(no_prompt, "no 'prompt'");
  Json empty_prompt = arith_row("x", "1", 0);
  empty_prompt["prompt"] = Json::array();
  fails(empty_prompt, "non-empty list");
  Json bad_message = arith_row("x", "1", 0);
  bad_message["prompt"][0].erase("role");
  fails(bad_message, "non-empty list");
  Json no_truth = arith_row("x", "1", 0);
  no_truth["reward_model"].erase("ground_truth");
  fails(no_truth, "reward_model.ground_truth");
  Json bad_extra = arith_row("x", "1", 0);
  bad_extra["extra_info"] = "s";
  fails(bad_extra, "'extra_info' must be an object");

  // verl's collate_fn: a column must be in every row of a batch; extra_info defaults to {} instead.
  Json plain = arith_row("Compute 2+2.", "4", 7);
  plain.erase("ability");
  plain.erase("extra_info");
  RLHFDataset ds({arith_row("Compute 1+2.", "3", 0), plain}, arith_tokenizer(), options(64));
  CHECK_THROWS_WITH(ds.batch({0, 1}), Catch::Contains("'ability'") && Catch::Contains("row 1"));
  DataProto one = ds.batch({1});
  CHECK(one.column("extra_info")[0] == Json::object());
  CHECK(one.column("index")[0] == 0);
  CHECK(!one.has_column("ability"));

  RLHFDatasetOptions zero = options(0);
  CHECK_THROWS_AS(RLHFDataset({}, arith_tokenizer(), zero), ConfigError);
}

TEST_CASE("rl_dataset: options from the config, a custom renderer and pad id", "[data]") {
  Config c = Config::load("", {"data.max_prompt_length=16", "data.truncation=middle", "data.return_raw_chat=false",
                               "data.return_full_prompt=true", "data.filter_overlong_prompts=true"});
  RLHFDatasetOptions o = RLHFDatasetOptions::from_config(c);
  CHECK(o.max_prompt_length == 16);
  CHECK(o.truncation == Truncation::kMiddle);
  CHECK(o.filter_overlong_prompts);
  CHECK(!o.return_raw_chat);
  CHECK(o.return_full_prompt);
  CHECK(o.prompt_key == "prompt");
  CHECK_THROWS_AS(RLHFDatasetOptions::from_config(Config::load("", {"data.truncation=both"})), ConfigError);

  o.filter_overlong_prompts = false;
  o.pad_token_id = 5;
  o.render_prompt = [](const std::vector<tokenizer::ChatMessage>& messages) { return messages.front().content; };
  RLHFDataset ds({arith_row("Compute 1+2.", "3", 0)}, arith_tokenizer(), o);
  CHECK(ds.prompt_ids(0) == arith_tokenizer().encode("Compute 1+2.", false));
  DataProto b = ds.batch({0});
  CHECK(b.column("full_prompts")[0] == "Compute 1+2.");
  CHECK(!b.has_column("raw_prompt"));
  CHECK(b.tensor("input_ids")[0][0].item<int64_t>() == 5);
}

TEST_CASE("rl_dataset: JSONL and JSON files", "[data]") {
  TempDir tmp;
  const std::string line0 = arith_row("Compute 1+2.", "3", 0).dump(), line1 = arith_row("Compute 4+4.", "8", 1).dump();
  const std::string jsonl = tmp.write("train.jsonl", line0 + "\n\n" + line1 + "\n");
  RLHFDataset ds = RLHFDataset::from_file(jsonl, arith_tokenizer(), options(32));
  REQUIRE(ds.size() == 2);
  CHECK(ds.origin(1) == jsonl + ":3");  // the blank line counts
  CHECK(ds.row(1)["reward_model"]["ground_truth"] == "8");

  const std::string array = tmp.write("rows.json", "[" + line0 + ",\n" + line1 + "]");
  RLHFDataset from_array = RLHFDataset::from_file(array, arith_tokenizer(), options(32));
  CHECK(from_array.size() == 2);
  CHECK(from_array.prompt_ids(1) == ds.prompt_ids(1));
  CHECK(from_array.origin(0) == array + ":1");

  const std::string broken = tmp.write("broken.jsonl", line0 + "\n{\"prompt\": \n");
  CHECK_THROWS_WITH(RLHFDataset::from_file(broken, arith_tokenizer(), options(32)),
                    Catch::Contains(broken + ":2") && Catch::Contains("invalid JSON"));
  const std::string not_row = tmp.write("bad.jsonl", line0 + "\n[1]\n");
  CHECK_THROWS_WITH(RLHFDataset::from_file(not_row, arith_tokenizer(), options(32)), Catch::Contains(not_row + ":2"));
  CHECK_THROWS_WITH(RLHFDataset::from_file((tmp.path / "missing.jsonl").string(), arith_tokenizer(), options(32)),
                    Catch::Contains("not found") && Catch::Contains("missing.jsonl"));
  CHECK_THROWS_AS(RLHFDataset::from_file(tmp.write("x.parquet", "PAR1"), arith_tokenizer(), options(32)), DataError);
}

// Issue 21 (fuzzing): hostile data files end in a DataError naming file:line, with a message that is valid
// UTF-8 and bounded, never a crash, a library exception or a recursive dump of the row.
TEST_CASE("rl_dataset: hostile files are DataErrors naming file:line", "[data]") {
  TempDir tmp;
  const std::string line0 = arith_row("Compute 1+2.", "3", 0).dump();

  // bytes that are not UTF-8, in a message (the fuzzer flipped one byte to 0xff)
  std::string flipped = arith_row("Compute 4+4.", "8", 1).dump();
  const size_t at = flipped.find('+');
  flipped[at] = '\xff';
  const std::string not_utf8 = tmp.write("not_utf8.jsonl", line0 + "\n" + flipped + "\n");
  CHECK_THROWS_WITH(RLHFDataset::from_file(not_utf8, arith_tokenizer(), options(32)),
                    not_utf8 + ":2: not valid UTF-8 (byte 0xff at column " + std::to_string(at + 1) +
                        "); data files must be UTF-8 text");
  CHECK_THROWS_AS(RLHFDataset::from_file(not_utf8, arith_tokenizer(), options(32)), DataError);

  // nesting: 128 levels in all are accepted, 129 refused (untrusted::kMaxJsonDepth), and 100,000 levels end in the
  // same DataError rather than a stack overflow
  auto nested = [](size_t depth) {  // the row object and reward_model add two levels
    return "{\"prompt\": [{\"role\": \"user\", \"content\": \"hi\"}], \"reward_model\": {\"ground_truth\": " +
           std::string(depth, '[') + std::string(depth, ']') + "}}";
  };
  RLHFDataset deepest =
      RLHFDataset::from_file(tmp.write("ok.jsonl", nested(126) + "\n"), arith_tokenizer(), options(32));
  CHECK(deepest.size() == 1);
  for (size_t depth : {size_t{127}, size_t{1000}, size_t{100000}}) {
    const std::string deep = tmp.write("deep.jsonl", line0 + "\n\n" + nested(depth) + "\n");
    CHECK_THROWS_WITH(RLHFDataset::from_file(deep, arith_tokenizer(), options(32)),
                      Catch::StartsWith(deep + ":3: invalid JSON: ") && Catch::Contains("nesting deeper than 128"));
  }
  const std::string deep_array =
      tmp.write("deep.json", "[" + line0 + ",\n" + std::string(100000, '[') + std::string(100000, ']') + "]");
  CHECK_THROWS_WITH(RLHFDataset::from_file(deep_array, arith_tokenizer(), options(32)),
                    Catch::StartsWith(deep_array + ": file is not valid JSON") && Catch::Contains("deeper than 128"));

  // a lone surrogate escape is not text: refused while parsing, as the Python reader refuses it
  std::string surrogate = arith_row("Compute 4+4.", "8", 1).dump();
  surrogate.replace(surrogate.find('+'), 1, "\\ud800");
  const std::string lone = tmp.write("lone.jsonl", line0 + "\n" + surrogate + "\n");
  CHECK_THROWS_WITH(RLHFDataset::from_file(lone, arith_tokenizer(), options(32)),
                    Catch::StartsWith(lone + ":2: invalid JSON: ") && Catch::Contains("surrogate"));

  // lines split on '\n' only: U+2028 and U+0085 are allowed raw inside strings; "\r\n" endings work
  const std::string seps = tmp.write("seps.jsonl", arith_row("a\u2028b\u0085c", "1", 0).dump() + "\r\n" + line0);
  RLHFDataset split = RLHFDataset::from_file(seps, arith_tokenizer(), options(32));
  REQUIRE(split.size() == 2);
  CHECK(split.row(0)["prompt"][0]["content"] == "a\u2028b\u0085c");
  CHECK(split.origin(1) == seps + ":2");

  // a malformed prompt is quoted, bounded and escaped, not dumped whole
  Json huge = arith_row("x", "1", 0);
  huge["prompt"] = Json::array();
  for (int i = 0; i < 100000; ++i) huge["prompt"].push_back("\xff\xfe");
  try {
    RLHFDataset({huge}, arith_tokenizer(), options(32), {"big.jsonl:1"});
    FAIL("expected a DataError");
  } catch (const DataError& e) {
    const std::string message = e.what();
    CHECK(message.size() < 400);
    CHECK_THAT(message, Catch::StartsWith("big.jsonl:1: 'prompt' must be a non-empty list") &&
                            Catch::Contains("\"\\xff\\xfe\"") && Catch::Contains("(100000 items)"));
  }

  // a path that is not UTF-8 is escaped in the message
  const std::string odd_path = (tmp.path / "odd\xff.jsonl").string();
  CHECK_THROWS_WITH(RLHFDataset::from_file(odd_path, arith_tokenizer(), options(32)),
                    Catch::Contains("data file not found") && Catch::Contains("odd\\xff.jsonl"));
}
