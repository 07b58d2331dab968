// Row plans: the row order and sizes of every DataProto operation.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "verl/core/error.h"
#include "verl/data/row_plan.h"

using namespace verl;

static std::vector<int64_t> as_vec(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return {c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel()};
}

TEST_CASE("row_plan: repeat interleave groups copies, tile cycles the batch") {
  CHECK(as_vec(row_plan::repeat_rows(3, 2, true)) == std::vector<int64_t>{0, 0, 1, 1, 2, 2});
  CHECK(as_vec(row_plan::repeat_rows(3, 2, false)) == std::vector<int64_t>{0, 1, 2, 0, 1, 2});
  CHECK_THROWS_AS(row_plan::repeat_rows(3, 0, true), InvalidArgument);
}

TEST_CASE("row_plan: chunk sizes are equal or it is an error, unless uneven is allowed") {
  CHECK(row_plan::chunk_sizes(6, 3, false) == std::vector<int64_t>{2, 2, 2});
  CHECK_THROWS_AS(row_plan::chunk_sizes(6, 5, false), DataError);
  CHECK(row_plan::chunk_sizes(6, 4, true) == std::vector<int64_t>{2, 2, 1, 1});
  CHECK(row_plan::chunk_sizes(2, 4, true) == std::vector<int64_t>{1, 1, 0, 0});
}

TEST_CASE("row_plan: split bounds cover the batch, last piece shorter") {
  using B = std::vector<std::pair<int64_t, int64_t>>;
  CHECK(row_plan::split_bounds(5, 2) == B{{0, 2}, {2, 4}, {4, 5}});
  CHECK(row_plan::split_bounds(0, 2).empty());
}

TEST_CASE("row_plan: padding cycles through the first rows") {
  CHECK(as_vec(row_plan::pad_rows(3, 4)) == std::vector<int64_t>{0});
  CHECK(as_vec(row_plan::pad_rows(2, 7)) == std::vector<int64_t>{0, 1, 0, 1, 0});
  CHECK(row_plan::pad_rows(4, 2).numel() == 0);
  CHECK(row_plan::pad_rows(0, 3).numel() == 0);  // nothing to pad, as verl
}

TEST_CASE("row_plan: slices follow Python semantics") {
  auto s = row_plan::normalize_slice(10, -3, std::nullopt, std::nullopt);
  CHECK(s.start == 7);
  CHECK(s.stop == 10);
  CHECK(s.count() == 3);
  s = row_plan::normalize_slice(10, 2, 100, 3);
  CHECK(s.count() == 3);  // 2, 5, 8
  s = row_plan::normalize_slice(10, 8, 2, std::nullopt);
  CHECK(s.count() == 0);
  CHECK_THROWS_AS(row_plan::normalize_slice(10, 0, 5, -1), InvalidArgument);
}

TEST_CASE("row_plan: selections accept negatives and masks, reject out-of-range") {
  CHECK(as_vec(row_plan::selection_rows(4, torch::tensor({-1, 0}))) == std::vector<int64_t>{3, 0});
  CHECK(as_vec(row_plan::selection_rows(3, torch::tensor({true, false, true}))) == std::vector<int64_t>{0, 2});
  CHECK_THROWS_AS(row_plan::selection_rows(3, torch::tensor({3})), DataError);
  CHECK_THROWS_AS(row_plan::selection_rows(3, torch::tensor({true, false})), DataError);
  CHECK_THROWS_AS(row_plan::selection_rows(3, torch::tensor({0.5})), DataError);
}

TEST_CASE("row_plan: iterator order is seeded, fresh each epoch, and covers every row once per epoch") {
  auto a = row_plan::iterator_rows(8, 4, 2, 42, true);
  auto b = row_plan::iterator_rows(8, 4, 2, 42, true);
  auto c = row_plan::iterator_rows(8, 4, 2, 43, true);
  REQUIRE(a.size() == 4);
  bool same_as_b = true, same_as_c = true;
  for (size_t i = 0; i < a.size(); ++i) {
    same_as_b &= torch::equal(a[i], b[i]);
    same_as_c &= torch::equal(a[i], c[i]);
  }
  CHECK(same_as_b);
  CHECK_FALSE(same_as_c);
  torch::Tensor epoch0 = std::get<0>(torch::cat({a[0], a[1]}).sort());
  CHECK(torch::equal(epoch0, torch::arange(8)));
  CHECK_FALSE(torch::equal(torch::cat({a[0], a[1]}), torch::cat({a[2], a[3]})));
  auto plain = row_plan::iterator_rows(4, 2, 1, std::nullopt, false);
  CHECK(as_vec(plain[0]) == std::vector<int64_t>{0, 1});
  CHECK_THROWS_AS(row_plan::iterator_rows(6, 4, 1, 1, true), DataError);
}
