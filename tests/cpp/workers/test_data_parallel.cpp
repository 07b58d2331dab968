// DataParallel over threads as ranks (dist/thread_group.h): token-budget micro-batches (use_dynamic_bsz) come out in
// the same number on every rank -- the most any rank needs -- since under ZeRO-3 every forward is a collective.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <vector>

#include "dist/thread_group.h"
#include "verl/workers/data_parallel.h"

using verl::workers::RowGroups;
using verl::workers::detail::DataParallel;

TEST_CASE("DataParallel::dynamic_micro_batches gives every rank the same micro-batch count", "[dist][workers]") {
  // Rank 0's rows fit one budget of 40 tokens; rank 1's need three; rank 2's two.
  const std::vector<std::vector<int64_t>> seqlens = {{5, 6, 7, 8}, {30, 30, 30, 5}, {20, 20, 10, 5}};
  std::vector<RowGroups> out(seqlens.size());
  verl::testing::on_thread_ranks(3, [&](int64_t rank, std::shared_ptr<verl::dist::Communicator> comm) {
    out[static_cast<size_t>(rank)] = DataParallel(comm).dynamic_micro_batches(seqlens[static_cast<size_t>(rank)], 40);
  });
  CHECK(verl::workers::dynamic_micro_batches(seqlens[0], 40).size() == 1);  // alone, rank 0 would cut one
  for (size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r);
    CHECK(out[r].size() == 3);
    std::vector<int64_t> rows;
    for (const auto& group : out[r]) {
      CHECK(!group.empty());
      int64_t tokens = 0;
      for (int64_t i : group) {
        tokens += seqlens[r][static_cast<size_t>(i)];
        rows.push_back(i);
      }
      CHECK(tokens <= 40);
    }
    std::sort(rows.begin(), rows.end());
    CHECK(rows == std::vector<int64_t>{0, 1, 2, 3});  // every row once
  }
  // One process: the plain count.
  CHECK(DataParallel().dynamic_micro_batches(seqlens[0], 40).size() == 1);
}
