// Row plans: which rows of a batch each DataProto operation takes, and in what order.
// The single source of these semantics for the C++ DataProto and the Python one
// (python/verl/protocol.py applies the same plans to its numpy columns).
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include <torch/types.h>

#include "verl/core/export.h"

namespace verl::row_plan {

// Python slice semantics on n rows: None bounds are std::nullopt, negative bounds count from the
// end, bounds are clamped. step must be positive (torch cannot take negative-step views).
// Returns {start, stop, step} with 0 <= start <= stop <= n. Throws InvalidArgument on step <= 0.
struct VERL_API Slice {
  int64_t start, stop, step;
  int64_t count() const { return start >= stop ? 0 : (stop - start + step - 1) / step; }
};
VERL_API Slice normalize_slice(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                               std::optional<int64_t> step);

// Row index for an integer position; negative counts from the end. Throws DataError when out of range.
VERL_API int64_t normalize_index(int64_t n, int64_t index);

// Turns a selection (int64/int32 row indices, negative allowed, or a bool mask of length n) into
// int64 row indices on the CPU, checking range. Throws DataError naming the offending value.
VERL_API torch::Tensor selection_rows(int64_t n, const torch::Tensor& selection);

// Rows of repeat(times, interleave): interleave -> 0,0,1,1,..; tile -> 0,1,..,0,1,..  (n*times,)
VERL_API torch::Tensor repeat_rows(int64_t n, int64_t times, bool interleave);

// Sizes of chunk(chunks): equal sizes; when n % chunks != 0 it throws DataError unless
// allow_uneven, in which case the first n % chunks chunks get one extra row (numpy array_split).
VERL_API std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks, bool allow_uneven);

// [start, stop) bounds of split(split_size): consecutive pieces, the last may be shorter.
VERL_API std::vector<std::pair<int64_t, int64_t>> split_bounds(int64_t n, int64_t split_size);

// Rows appended by pad_dataproto_to_divisor: the first rows again, cycling, until n is a multiple
// of divisor (0 rows if it already is). (pad_size,)
VERL_API torch::Tensor pad_rows(int64_t n, int64_t divisor);

// Row indices of every mini-batch of make_iterator, epoch after epoch: epochs * n / mini_batch_size
// tensors of mini_batch_size rows. With shuffle, each epoch is a fresh permutation drawn from a
// generator seeded with `seed` (so the same seed gives the same order, another seed another);
// without shuffle the order is 0..n-1 every epoch. Throws DataError unless n % mini_batch_size == 0.
VERL_API std::vector<torch::Tensor> iterator_rows(int64_t n, int64_t mini_batch_size, int64_t epochs,
                                                  std::optional<uint64_t> seed, bool shuffle);

}  // namespace verl::row_plan
