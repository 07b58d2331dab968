// verl::data::RLDataLoader: the batch order of verl's Python train loader (python/verl/utils/dataset/
// dataloader.py, computed once with torch 2.14.1) for a seed and for the default seed, drop_last, the epoch in
// meta_info, and the config keys it reads.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/dataloader.h"
#include "verl/data/rl_dataset.h"
#include "verl/tokenizer/tokenizer.h"

using namespace verl;
using verl::data::RLDataLoader;
using verl::data::RLHFDataset;
using Rows = std::vector<std::vector<int64_t>>;

namespace {

// n rows "Compute i+i." whose ground truth is the row number, so a batch tells which rows it holds.
RLHFDataset numbered(int64_t n) {
  static const tokenizer::Tokenizer tok = tokenizer::Tokenizer::from_file(VERL_SOURCE_DIR "/examples/arith/tokenizer");
  std::vector<Json> rows;
  for (int64_t i = 0; i < n; ++i) {
    const std::string text = "Compute " + std::to_string(i) + "+" + std::to_string(i) + ".";
    rows.push_back(Json{{"data_source", "arith"},
                        {"prompt", Json::array({Json{{"role", "user"}, {"content", text}}})},
                        {"reward_model", Json{{"ground_truth", std::to_string(i)}}}});
  }
  data::RLHFDatasetOptions o;
  o.max_prompt_length = 32;
  return RLHFDataset(rows, tok, o);
}

}  // namespace

TEST_CASE("dataloader: shuffled epochs in the Python loader's order", "[data]") {
  // ResumableDataLoader(ds of 10 rows, batch_size=4, shuffle=True, seed=7, drop_last=True): epoch 0 is
  // randperm = [5, 0, 3, 4, 1, 7, 9, 6, 8, 2], epoch 1 (after RandomSampler's extra draw) [3, 7, 6, 2, 9, 0, ...].
  RLDataLoader loader(numbered(10), 4, /*shuffle=*/true, /*seed=*/7, /*drop_last=*/true);
  CHECK(loader.size() == 2);
  CHECK(loader.next_epoch_rows() == Rows{{5, 0, 3, 4}, {1, 7, 9, 6}});
  CHECK(loader.epoch() == 1);
  CHECK(loader.next_epoch_rows() == Rows{{3, 7, 6, 2}, {9, 0, 5, 4}});

  // torch.Generator()'s default seed when data.seed is null: randperm(6) = [0, 5, 3, 4, 1, 2].
  RLDataLoader unseeded(numbered(6), 3, /*shuffle=*/true, std::nullopt, /*drop_last=*/true);
  CHECK(unseeded.next_epoch_rows() == Rows{{0, 5, 3}, {4, 1, 2}});

  RLDataLoader same(numbered(10), 4, true, 7, true), other(numbered(10), 4, true, 8, true);
  CHECK(same.next_epoch_rows() == Rows{{5, 0, 3, 4}, {1, 7, 9, 6}});
  CHECK(other.next_epoch_rows() != Rows{{5, 0, 3, 4}, {1, 7, 9, 6}});
}

TEST_CASE("dataloader: batches, epochs in meta_info, drop_last", "[data]") {
  RLHFDataset ds = numbered(5);
  RLDataLoader ordered(ds, 2, /*shuffle=*/false, std::nullopt, /*drop_last=*/false);
  CHECK(ordered.size() == 3);
  CHECK(ordered.next_epoch_rows() == Rows{{0, 1}, {2, 3}, {4}});
  std::vector<DataProto> epoch1 = ordered.next_epoch();
  REQUIRE(epoch1.size() == 3);
  CHECK(epoch1[2].size() == 1);
  CHECK(epoch1[2].column("reward_model")[0]["ground_truth"] == "4");
  CHECK(epoch1[0].meta_info()["epoch"] == 1);
  CHECK(torch::equal(epoch1[1].tensor("input_ids"), ds.batch({2, 3}).tensor("input_ids")));
  CHECK(ordered.epoch() == 2);

  RLDataLoader dropping(ds, 2, /*shuffle=*/false, std::nullopt, /*drop_last=*/true);
  CHECK(dropping.size() == 2);
  std::vector<DataProto> epoch0 = dropping.next_epoch();
  REQUIRE(epoch0.size() == 2);
  CHECK(epoch0[0].meta_info()["epoch"] == 0);

  CHECK_THROWS_AS(RLDataLoader(ds, 0), InvalidArgument);
  CHECK_THROWS_AS(RLDataLoader(ds, 6, true, 1, /*drop_last=*/true), DataError);
  CHECK(RLDataLoader(ds, 6, true, 1, /*drop_last=*/false).size() == 1);
}

TEST_CASE("dataloader: verl's train loader from the config", "[data]") {
  Config c = Config::load("", {"data.train_batch_size=4", "data.seed=7"});
  RLDataLoader loader = RLDataLoader::from_config(numbered(10), c);
  CHECK(loader.size() == 2);
  CHECK(loader.next_epoch_rows() == Rows{{5, 0, 3, 4}, {1, 7, 9, 6}});

  RLDataLoader gen =
      RLDataLoader::from_config(numbered(10), Config::load("", {"data.gen_batch_size=3", "data.shuffle=false"}));
  CHECK(gen.next_epoch_rows() == Rows{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}});  // drop_last: row 9 is dropped
  CHECK_THROWS_AS(RLDataLoader::from_config(numbered(10), Config::load("", {"data.train_batch_size=20"})), DataError);
}
