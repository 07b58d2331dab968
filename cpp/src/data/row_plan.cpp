// Row plans shared by the C++ and Python DataProto (see verl/data/row_plan.h).
#include "verl/data/row_plan.h"

#include <torch/torch.h>

#include <random>

#include "verl/core/error.h"

namespace verl::row_plan {

Slice normalize_slice(int64_t n, std::optional<int64_t> start, std::optional<int64_t> stop,
                      std::optional<int64_t> step) {
  const int64_t s = step.value_or(1);
  VERL_CHECK(s > 0, "slice step must be positive, got ", s);
  auto clamp = [n](int64_t i) {
    if (i < 0) i += n;
    return std::clamp<int64_t>(i, 0, n);
  };
  const int64_t b = start ? clamp(*start) : 0;
  const int64_t e = stop ? clamp(*stop) : n;
  return {b, std::max(b, e), s};
}

int64_t normalize_index(int64_t n, int64_t index) {
  const int64_t i = index < 0 ? index + n : index;
  VERL_CHECK_AS(DataError, i >= 0 && i < n, "index ", index, " is out of range for a DataProto of ", n, " rows");
  return i;
}

torch::Tensor selection_rows(int64_t n, const torch::Tensor& selection) {
  VERL_CHECK_AS(DataError, selection.dim() == 1, "row selection must be 1-D, got shape ", selection.sizes());
  torch::Tensor sel = selection.to(torch::kCPU);
  if (sel.scalar_type() == torch::kBool) {
    VERL_CHECK_AS(DataError, sel.size(0) == n, "boolean row mask has ", sel.size(0),
                  " entries but the DataProto has ", n, " rows");
    return sel.nonzero().flatten();
  }
  VERL_CHECK_AS(DataError, !sel.is_floating_point() && !sel.is_complex(),
                "row selection must hold integers or booleans, got ", sel.scalar_type());
  sel = sel.to(torch::kLong);
  if (sel.numel() == 0) return sel;
  const int64_t lo = sel.min().item<int64_t>();
  const int64_t hi = sel.max().item<int64_t>();
  VERL_CHECK_AS(DataError, lo >= -n && hi < n, "row index ", (lo < -n ? lo : hi),
                " is out of range for a DataProto of ", n, " rows");
  return torch::where(sel < 0, sel + n, sel);
}

torch::Tensor repeat_rows(int64_t n, int64_t times, bool interleave) {
  VERL_CHECK(times >= 1, "repeat_times must be >= 1, got ", times);
  torch::Tensor rows = torch::arange(n, torch::kLong);
  return interleave ? rows.repeat_interleave(times) : rows.repeat({times});
}

std::vector<int64_t> chunk_sizes(int64_t n, int64_t chunks, bool allow_uneven) {
  VERL_CHECK(chunks >= 1, "chunks must be >= 1, got ", chunks);
  VERL_CHECK_AS(DataError, allow_uneven || n % chunks == 0, "only support equal chunk. Got size of DataProto ", n,
                " and chunk ", chunks, " (enable auto-padding to allow uneven chunks)");
  std::vector<int64_t> sizes(chunks, n / chunks);
  for (int64_t i = 0; i < n % chunks; ++i) ++sizes[i];
  return sizes;
}

std::vector<std::pair<int64_t, int64_t>> split_bounds(int64_t n, int64_t split_size) {
  VERL_CHECK(split_size >= 1, "split_size must be >= 1, got ", split_size);
  std::vector<std::pair<int64_t, int64_t>> bounds;
  for (int64_t b = 0; b < n; b += split_size) bounds.emplace_back(b, std::min(n, b + split_size));
  return bounds;
}

torch::Tensor pad_rows(int64_t n, int64_t divisor) {
  VERL_CHECK(divisor >= 1, "size_divisor must be >= 1, got ", divisor);
  const int64_t pad = n % divisor == 0 ? 0 : divisor - n % divisor;
  VERL_CHECK_AS(DataError, pad == 0 || n > 0, "cannot pad an empty DataProto to a multiple of ", divisor);
  return pad == 0 ? torch::empty({0}, torch::kLong) : torch::arange(pad, torch::kLong).remainder(n);
}

std::vector<torch::Tensor> iterator_rows(int64_t n, int64_t mini_batch_size, int64_t epochs,
                                         std::optional<uint64_t> seed, bool shuffle) {
  VERL_CHECK(mini_batch_size >= 1, "mini_batch_size must be >= 1, got ", mini_batch_size);
  VERL_CHECK(epochs >= 0, "epochs must be >= 0, got ", epochs);
  VERL_CHECK_AS(DataError, n % mini_batch_size == 0, "make_iterator needs the batch size to be divisible by ",
                "mini_batch_size: ", n, " % ", mini_batch_size, " != 0");
  std::optional<torch::Generator> gen;
  if (shuffle) {
    gen = at::make_generator<at::CPUGeneratorImpl>(seed ? *seed : std::random_device{}());
  }
  std::vector<torch::Tensor> out;
  for (int64_t e = 0; e < epochs; ++e) {
    torch::Tensor order = shuffle ? torch::randperm(n, *gen, torch::kLong) : torch::arange(n, torch::kLong);
    for (const torch::Tensor& part : order.split(mini_batch_size)) out.push_back(part);
  }
  return out;
}

}  // namespace verl::row_plan
