// verl's _balance_batch (trainer/balance_batch.h): equal-size partitions of balanced attention workload, one per
// rank, each ordered with its lighter rows at both ends.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "trainer/balance_batch.h"
#include "verl/workers/micro_batch.h"

using verl::trainer::detail::balance_batch;

namespace {

// Left-padded attention masks of the given lengths.
torch::Tensor masks(const std::vector<int64_t>& lengths, int64_t seq) {
  const torch::Tensor lens = torch::tensor(lengths, torch::kLong);
  return (torch::arange(seq).unsqueeze(0) >= (seq - lens).unsqueeze(1)).to(torch::kLong);
}

}  // namespace

TEST_CASE("balance_batch on one rank: rows by workload, the lighter ones at both ends (verl's order)", "[trainer]") {
  // Sorted by length: rows 4 0 2 5 3 6 1 7; the even places ascending, then the odd places descending.
  const auto out = balance_batch(masks({2, 7, 3, 5, 1, 4, 6, 8}, 8), 1);
  CHECK(out.order == std::vector<int64_t>{4, 2, 3, 1, 7, 6, 5, 0});
  CHECK(out.metrics.at("global_seqlen/mean") == 36);
  CHECK(out.metrics.at("global_seqlen/minmax_diff") == 0);
}

TEST_CASE("balance_batch over ranks: equal-size partitions of balanced workload", "[trainer]") {
  const std::vector<int64_t> lengths = {2, 7, 3, 5, 1, 4, 6, 8, 9, 2, 11, 3};
  for (int64_t world : {2, 3, 4}) {
    INFO("world " << world);
    const auto out = balance_batch(masks(lengths, 12), world);
    std::vector<int64_t> sorted = out.order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(lengths.size());
    std::iota(all.begin(), all.end(), 0);
    REQUIRE(sorted == all);  // a permutation of the rows
    const size_t per_rank = lengths.size() / static_cast<size_t>(world);
    std::vector<int64_t> loads;
    for (int64_t r = 0; r < world; ++r) {
      std::vector<int64_t> w;
      for (size_t i = 0; i < per_rank; ++i)
        w.push_back(verl::workers::attention_workload(lengths[static_cast<size_t>(out.order[r * per_rank + i])]));
      // Light at both ends: the first is the partition's lightest, the heaviest sits in the middle.
      CHECK(w.front() == *std::min_element(w.begin(), w.end()));
      const auto heaviest = std::max_element(w.begin(), w.end()) - w.begin();
      CHECK((heaviest == static_cast<long>(per_rank / 2) || heaviest == static_cast<long>(per_rank / 2) - 1));
      loads.push_back(std::accumulate(w.begin(), w.end(), int64_t{0}));
    }
    // Balanced: the spread is below the heaviest single row's workload.
    const int64_t heaviest_row = verl::workers::attention_workload(11);
    CHECK(*std::max_element(loads.begin(), loads.end()) - *std::min_element(loads.begin(), loads.end()) <= heaviest_row);
  }
}
