// verl::trainer::GroupFilter (DAPO's algorithm.filter_groups): which groups are kept (numpy's std > 0 or one
// sample), the metric read from an extra-info column or the summed scores, gathering across generation batches up to
// data.train_batch_size prompts, the max_num_gen_batches limit, the merged meta_info, the config keys.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <string>
#include <vector>

#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/trainer/group_filter.h"

using namespace verl;
using namespace verl::trainer;

namespace {

// A scored batch: one row per (uid, score); token_level_scores puts the score on the second of two response
// tokens; "acc" is the score as an extra-info column; "row" numbers the rows (to see which were kept).
DataProto scored(const std::vector<std::string>& uids, const std::vector<double>& scores, int64_t first_row,
                 double gen_seconds) {
  const int64_t bs = static_cast<int64_t>(uids.size());
  torch::Tensor tls = torch::zeros({bs, 2});
  DataProto::Column uid, acc, row;
  for (int64_t i = 0; i < bs; ++i) {
    tls[i][1] = scores[i];
    uid.push_back(uids[i]);
    acc.push_back(scores[i]);
    row.push_back(first_row + i);
  }
  Json meta = {{"temperature", 1.0},
               {"timing_s", {{"gen", gen_seconds}, {"reward", 0.5}}},
               {"step_metrics", {{"global_seqlen/min", gen_seconds}}}};
  return DataProto({{"token_level_scores", tls}}, {{"uid", uid}, {"acc", acc}, {"row", row}}, meta);
}

std::vector<int64_t> rows_of(const DataProto& batch) {
  std::vector<int64_t> rows;
  for (const Json& r : batch.column("row")) rows.push_back(r.get<int64_t>());
  return rows;
}

GroupFilterConfig config(int64_t train_batch_size, int64_t n, int64_t max_num_gen_batches = 0,
                         const std::string& metric = "acc") {
  GroupFilterConfig c;
  c.metric = metric;
  c.train_batch_size = train_batch_size;
  c.rollout_n = n;
  c.max_num_gen_batches = max_num_gen_batches;
  return c;
}

}  // namespace

TEST_CASE("group filter: groups whose metric varies, or with one sample, are kept in row order") {
  int64_t groups = -1;
  // a varies, b is constant, c has one sample, d varies (rows interleaved with the others).
  CHECK(varying_group_rows({"a", "b", "a", "b", "c", "d", "d"}, {1, 0, 0, 0, 5, 2, 3}, &groups) ==
        std::vector<int64_t>{0, 2, 4, 5, 6});
  CHECK(groups == 3);
  CHECK(varying_group_rows({}, {}, &groups).empty());
  CHECK(groups == 0);
  CHECK_THROWS_AS(varying_group_rows({"a"}, {1, 2}), InvalidArgument);
}

TEST_CASE("group filter: numpy's std decides equal non-integer values as verl does") {
  // numpy: np.std([0.1] * 3) == 1.3877787807814457e-17 (its mean misses 0.1 by an ulp), np.std([0.7] * 5) == 0.0,
  // np.std([1.0] * 4) == 0.0. verl keeps a group when np.std > 0.
  CHECK(varying_group_rows({"x", "x", "x"}, {0.1, 0.1, 0.1}) == std::vector<int64_t>{0, 1, 2});
  CHECK(varying_group_rows({"y", "y", "y", "y", "y"}, {0.7, 0.7, 0.7, 0.7, 0.7}).empty());
  CHECK(varying_group_rows({"z", "z", "z", "z"}, {1.0, 1.0, 1.0, 1.0}).empty());
  // Past 8 values numpy sums in eight partial sums: 9 x 0.1 stays constant there (np.std == 0.0).
  CHECK(varying_group_rows(std::vector<std::string>(9, "w"), std::vector<double>(9, 0.1)).empty());
}

TEST_CASE("group filter: the metric from an extra-info column or the summed token scores") {
  DataProto batch = scored({"a", "a"}, {1.5, -2.0}, 0, 1.0);
  CHECK(group_metric_values(batch, "acc") == std::vector<double>{1.5, -2.0});
  CHECK(group_metric_values(batch, "seq_reward") == std::vector<double>{1.5, -2.0});
  CHECK(group_metric_values(batch, "seq_final_reward") == std::vector<double>{1.5, -2.0});
  batch.set_column("ok", {true, false});
  CHECK(group_metric_values(batch, "ok") == std::vector<double>{1.0, 0.0});
  // A column named like a sequence reward is the column.
  batch.set_column("score", {7, 8});
  CHECK(group_metric_values(batch, "score") == std::vector<double>{7.0, 8.0});
  batch.set_column("text", {"right", "wrong"});
  CHECK_THROWS_AS(group_metric_values(batch, "text"), DataError);
  try {
    group_metric_values(batch, "accuracy");
    FAIL("no error for an unknown metric");
  } catch (const ConfigError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("accuracy") && Catch::Contains("acc, ok, row, score"));
  }
}

TEST_CASE("group filter: kept groups gather across generation batches up to train_batch_size prompts") {
  GroupFilter filter(config(/*train_batch_size=*/3, /*n=*/2));
  // Batch 1: p0 varies, p1 constant, p2 varies -> 2 prompts.
  filter.add(scored({"p0", "p0", "p1", "p1", "p2", "p2"}, {1, 0, 1, 1, 0, 1}, 0, 2.0));
  CHECK_FALSE(filter.ready());
  CHECK(filter.num_prompts() == 2);
  CHECK(filter.num_gen_batches() == 1);
  CHECK_THROWS_AS(filter.take(), InvalidArgument);
  // Batch 2: q0 constant, q1 and q2 vary -> 4 prompts gathered; the first 3 (6 rows) are the step's batch.
  filter.add(scored({"q0", "q0", "q1", "q1", "q2", "q2"}, {0, 0, 0, 1, 1, 0}, 6, 3.0));
  REQUIRE(filter.ready());
  CHECK(filter.num_prompts() == 4);
  CHECK(filter.num_gen_batches() == 2);
  DataProto batch = filter.take();
  CHECK(rows_of(batch) == std::vector<int64_t>{0, 1, 4, 5, 8, 9});
  CHECK(batch.tensor("token_level_scores").size(0) == 6);
  // Stage times add up over the generation batches, the step metrics are the latest batch's, other keys the first's.
  CHECK(batch.meta_info()["timing_s"]["gen"].get<double>() == 5.0);
  CHECK(batch.meta_info()["timing_s"]["reward"].get<double>() == 1.0);
  CHECK(batch.meta_info()["step_metrics"]["global_seqlen/min"].get<double>() == 3.0);
  CHECK(batch.meta_info()["temperature"].get<double>() == 1.0);
  // take() starts over.
  CHECK(filter.num_prompts() == 0);
  CHECK(filter.num_gen_batches() == 0);
  CHECK_FALSE(filter.ready());
}

TEST_CASE("group filter: a batch with no varying group, reset, and the max_num_gen_batches limit") {
  GroupFilter filter(config(2, 2, /*max_num_gen_batches=*/3));
  filter.add(scored({"a", "a", "b", "b"}, {1, 1, 0, 0}, 0, 1.0));
  filter.add(scored({"c", "c", "d", "d"}, {1, 0, 0, 0}, 4, 1.0));
  CHECK(filter.num_prompts() == 1);
  CHECK(filter.num_gen_batches() == 2);
  try {
    filter.add(scored({"e", "e", "f", "f"}, {1, 1, 1, 1}, 8, 1.0));
    FAIL("no error at the third batch");
  } catch (const DataError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("num_gen_batches=3 >= algorithm.filter_groups."
                                                      "max_num_gen_batches=3") &&
                                          Catch::Contains("only 1 prompts"));
  }
  filter.reset();
  CHECK(filter.num_gen_batches() == 0);
  // Reaching train_batch_size at the limit's batch is no error.
  filter.add(scored({"a", "a"}, {1, 1}, 0, 1.0));
  filter.add(scored({"b", "b"}, {1, 1}, 2, 1.0));
  filter.add(scored({"c", "c", "d", "d"}, {1, 0, 0, 1}, 4, 1.0));
  REQUIRE(filter.ready());
  CHECK(rows_of(filter.take()) == std::vector<int64_t>{4, 5, 6, 7});
  // Without a limit it goes on.
  GroupFilter endless(config(1, 2, 0));
  for (int i = 0; i < 20; ++i) endless.add(scored({"a", "a"}, {0, 0}, 0, 1.0));
  CHECK(endless.num_gen_batches() == 20);
}

TEST_CASE("group filter: config keys") {
  Config c = Config::load("", {"algorithm.filter_groups.metric=acc", "algorithm.filter_groups.max_num_gen_batches=4",
                               "data.train_batch_size=8", "actor_rollout_ref.rollout.n=5"});
  GroupFilterConfig g = GroupFilterConfig::from_config(c);
  CHECK(g.metric == "acc");
  CHECK(g.max_num_gen_batches == 4);
  CHECK(g.train_batch_size == 8);
  CHECK(g.rollout_n == 5);
  CHECK(GroupFilterConfig::from_config(Config()).metric == "reward");  // ppo_trainer.yaml's default
  Config unset = Config::load("", {"algorithm.filter_groups.metric=null"});
  CHECK_THROWS_AS(GroupFilterConfig::from_config(unset), ConfigError);
  CHECK_THROWS_AS(GroupFilter(config(0, 2)), InvalidArgument);
}
