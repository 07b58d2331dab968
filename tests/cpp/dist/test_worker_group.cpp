// verl::dist::CollectiveWorkerGroup on threads as ranks (dist/thread_group.h): verl's dispatch -- rows split in rank
// order, broadcast calls, padded splits, a failing rank named -- and what one call costs in collectives.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

#include "dist/thread_group.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/dist/worker_group.h"

using verl::DataProto;
using verl::dist::CollectiveWorkerGroup;
using verl::dist::Dispatch;

namespace {

DataProto rows(int64_t n, int64_t width) {
  DataProto d;
  d.set_tensor("x", torch::arange(n * width, torch::kLong).reshape({n, width}));
  return d;
}

// Every rank registers the same methods, each with its dispatch mode: "double" (x * 2, plus the rank and the row
// offset it saw) split over the ranks, "double_padded" the same after padding, "double_everywhere" broadcast;
// "fail_on_2".
void register_methods(CollectiveWorkerGroup& group) {
  const auto doubled = [&group](const DataProto& chunk) {
    DataProto out;
    out.set_tensor("y", chunk.tensor("x") * 2);
    out.set_tensor("rank", torch::full({chunk.size()}, group.rank(), torch::kLong));
    out.set_tensor("offset", torch::full({chunk.size()}, chunk.meta_info().at(verl::dist::kRowOffsetKey).get<int64_t>(),
                                         torch::kLong));
    return out;
  };
  group.register_method("double", doubled, Dispatch::kSplit);
  group.register_method("double_padded", doubled, Dispatch::kPadSplit);
  group.register_method("double_everywhere", doubled, Dispatch::kBroadcast);
  group.register_method("fail_on_2", [&group](const DataProto& chunk) {
    if (group.rank() == 2) throw verl::DataError("rank two refuses");
    return chunk;
  });
}

}  // namespace

TEST_CASE("CollectiveWorkerGroup: split, padded and broadcast calls over thread ranks; a failure names its rank", "[dist]") {
  constexpr int kWorld = 3;
  std::vector<DataProto> results;
  std::string failure;
  int64_t collectives_per_small_call = 0;
  verl::testing::on_thread_ranks(kWorld, [&](int64_t rank, std::shared_ptr<verl::dist::Communicator> comm) {
    CollectiveWorkerGroup group(comm);
    register_methods(group);
    if (rank != 0) {
      group.serve();
      return;
    }
    const int64_t before = verl::testing::collectives_started(*comm);
    results.push_back(group.call("double", rows(6, 4)));
    // A call sends each rank its message and gathers the answers: one collective each while both fit the first round.
    collectives_per_small_call = verl::testing::collectives_started(*comm) - before;
    results.push_back(group.call("double_padded", rows(7, 4)));
    results.push_back(group.call("double_everywhere", rows(2, 4)));
    // Batches far past the first round's size take a second round both ways.
    results.push_back(group.call("double", rows(3 * 4096, 8)));
    try {
      group.call("fail_on_2", rows(3, 1));
    } catch (const verl::DataError& e) {
      failure = e.what();
    }
    results.push_back(group.call("double", rows(3, 1)));  // the group still works after a failure
    group.release();
  });
  CHECK(collectives_per_small_call == 2);
  REQUIRE(results.size() == 5);
  // Split: rank r ran rows [2r, 2r + 2), with its offset; the results in rank order.
  CHECK(torch::equal(results[0].tensor("y"), rows(6, 4).tensor("x") * 2));
  CHECK(torch::equal(results[0].tensor("rank"), torch::tensor({0, 0, 1, 1, 2, 2}, torch::kLong)));
  CHECK(torch::equal(results[0].tensor("offset"), torch::tensor({0, 0, 2, 2, 4, 4}, torch::kLong)));
  // Padded: 7 rows padded to 9 (3 per rank), the padding dropped from the result.
  CHECK(torch::equal(results[1].tensor("y"), rows(7, 4).tensor("x") * 2));
  CHECK(torch::equal(results[1].tensor("rank"), torch::tensor({0, 0, 0, 1, 1, 1, 2}, torch::kLong)));
  // Broadcast: the controller's own result, on the whole batch.
  CHECK(torch::equal(results[2].tensor("y"), rows(2, 4).tensor("x") * 2));
  CHECK(torch::equal(results[2].tensor("rank"), torch::zeros({2}, torch::kLong)));
  CHECK(torch::equal(results[3].tensor("y"), rows(3 * 4096, 8).tensor("x") * 2));
  CHECK(torch::equal(results[3].tensor("offset").narrow(0, 4096, 1), torch::tensor({4096}, torch::kLong)));
  CHECK_THAT(failure, Catch::Contains("rank 2 failed in 'fail_on_2'") && Catch::Contains("rank two refuses"));
  CHECK(torch::equal(results[4].tensor("y"), rows(3, 1).tensor("x") * 2));
}
