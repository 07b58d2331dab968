// verl::workers micro-batching: partitions identical to verl 0.9.1's seqlen_balancing (expected
// values produced by verl's own karmarkar_karp / rearrange_micro_batches), token budgets respected,
// DataLoader-order mini-batches, order restoration.
#include <catch2/catch.hpp>
#include <numeric>
#include <set>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/workers/micro_batch.h"

using namespace verl::workers;

TEST_CASE("karmarkar_karp matches verl's partitions", "[workers][micro_batch]") {
  CHECK(karmarkar_karp({5, 4, 3, 2, 1, 7, 7, 3, 3}, 3, false) == RowGroups{{6, 1, 4}, {3, 5, 7}, {2, 0, 8}});
  CHECK(karmarkar_karp({8, 8, 8, 8, 1, 1}, 2, true) == RowGroups{{3, 0, 4}, {2, 1, 5}});
  CHECK(karmarkar_karp({3, 3, 3, 3, 3, 3}, 4, false) == RowGroups{{1, 2}, {0, 3}, {5}, {4}});
}

TEST_CASE("dynamic_micro_batches matches verl's rearrange_micro_batches", "[workers][micro_batch]") {
  CHECK(dynamic_micro_batches({10, 3, 7, 12, 5, 5, 9, 1, 4, 8}, 20) ==
        RowGroups{{2, 7, 9}, {1, 5, 6}, {3, 8}, {0, 4}});
  CHECK(dynamic_micro_batches({6, 6, 6, 6, 6, 6, 6, 6}, 13) == RowGroups{{1, 6}, {3, 4}, {2, 5}, {0, 7}});
}

TEST_CASE("dynamic micro-batches cover every row once within the budget", "[workers][micro_batch]") {
  torch::manual_seed(3);
  std::vector<int64_t> lens(37);
  for (auto& l : lens) l = torch::randint(1, 50, {1}).item<int64_t>();
  RowGroups groups = dynamic_micro_batches(lens, 64);
  std::set<int64_t> seen;
  for (const auto& g : groups) {
    int64_t tokens = 0;
    for (int64_t i : g) {
      tokens += lens[i];
      CHECK(seen.insert(i).second);
    }
    CHECK(tokens <= 64);
  }
  CHECK(seen.size() == lens.size());
  torch::Tensor order = restore_order(groups, 37);
  std::vector<int64_t> flat;
  for (const auto& g : groups) flat.insert(flat.end(), g.begin(), g.end());
  for (int64_t row = 0; row < 37; ++row) CHECK(flat[order[row].item<int64_t>()] == row);
  CHECK_THROWS_AS(dynamic_micro_batches({10, 70}, 64), verl::InvalidArgument);
}

TEST_CASE("mini_batch_rows: sequential, seeded shuffle, divisibility", "[workers][micro_batch]") {
  RowGroups seq = mini_batch_rows(6, 3, 2, 42, false);
  CHECK(seq == RowGroups{{0, 1, 2}, {3, 4, 5}, {0, 1, 2}, {3, 4, 5}});
  // torch.utils.data.DataLoader(arange(10), batch_size=5, shuffle=True, generator=Generator().manual_seed(42))
  RowGroups shuffled = mini_batch_rows(10, 5, 3, 42, true);
  CHECK(shuffled == RowGroups{{6, 5, 4, 0, 8}, {9, 2, 1, 3, 7}, {3, 6, 5, 8, 9},
                              {4, 2, 0, 7, 1}, {7, 4, 5, 0, 9}, {1, 3, 2, 8, 6}});
  CHECK_THROWS_AS(mini_batch_rows(10, 4, 1, 0, false), verl::DataError);
  CHECK(fixed_micro_batches(5, 2) == RowGroups{{0, 1}, {2, 3}, {4}});
}
