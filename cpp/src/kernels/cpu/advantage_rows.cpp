// The CPU kernels of the advantage estimators' per-row passes (kernels/ops.h): verl::row_sums,
// verl::group_mean_std and verl::scale_rows_by_mask.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace verl::kernels::cpu {
namespace {

// The sum of n values in double. Eight independent accumulators: one running sum is a single chain
// of dependent adds (latency-bound, ~4 cycles an element, 30 % of a GRPO call on 1024 x 1024);
// eight chains overlap and vectorise. In double the order hardly matters: the float result is
// the correctly rounded sum in all but contrived cases.
template <typename T>
double sum_in_double(const T* in, int64_t n) {
  constexpr int kLanes = 8;
  double lane[kLanes] = {};
  int64_t t = 0;
  for (; t + kLanes <= n; t += kLanes) {
    for (int j = 0; j < kLanes; ++j) lane[j] += static_cast<double>(in[t + j]);
  }
  double total = 0;
  for (; t < n; ++t) total += static_cast<double>(in[t]);
  for (int j = 0; j < kLanes; ++j) total += lane[j];
  return total;
}

// Each row's sum, (bs,), taken on the calling thread (accumulated in double, rounded once): ATen's
// sum(-1) is an OpenMP region, and on a machine whose cores are shared the idle-spinning second
// thread it leaves behind slowed the rest of these ~2 ms of work down several times over.
torch::Tensor row_sums(const torch::Tensor& rewards) {
  const torch::Tensor r = rewards.contiguous();
  torch::Tensor sums = torch::empty({r.size(0)}, r.options());
  const int64_t length = r.size(1);
  AT_DISPATCH_FLOATING_TYPES(r.scalar_type(), "row_sums", [&] {
    const scalar_t* in = r.data_ptr<scalar_t>();
    scalar_t* out = sums.data_ptr<scalar_t>();
    for (int64_t i = 0; i < r.size(0); ++i) out[i] = static_cast<scalar_t>(sum_in_double(in + i * length, length));
  });
  return sums;
}

// group_mean_std on the CPU: the same sums in the same order as index_add_ (one serial pass per
// statistic, accumulated in the scores' dtype), so the results are bitwise those of the ATen path. Why
// not ATen: at::sqrt of even a (G,) tensor goes to MKL's vector math, whose OpenMP threads made this
// ~1 ms estimator take 4-8 ms whenever another process held the second core.
std::tuple<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores_in, const torch::Tensor& id_in,
                                                        const torch::Tensor& count_in) {
  const torch::Tensor scores = scores_in.contiguous(), id = id_in.contiguous(), count = count_in.contiguous();
  const int64_t groups = count.size(0);
  torch::Tensor mean = torch::zeros({groups}, scores.options());
  torch::Tensor std = torch::zeros({groups}, scores.options());
  AT_DISPATCH_FLOATING_TYPES(scores.scalar_type(), "group_mean_std", [&] {
    const scalar_t* s = scores.data_ptr<scalar_t>();
    const scalar_t* n = count.data_ptr<scalar_t>();
    const int64_t* group = id.data_ptr<int64_t>();
    scalar_t* m = mean.data_ptr<scalar_t>();
    scalar_t* sd = std.data_ptr<scalar_t>();
    const int64_t rows = scores.size(0);
    for (int64_t i = 0; i < rows; ++i) m[group[i]] += s[i];
    for (int64_t j = 0; j < groups; ++j) m[j] /= n[j];
    for (int64_t i = 0; i < rows; ++i) {
      const scalar_t centered = s[i] - m[group[i]];
      sd[group[i]] += centered * centered;
    }
    for (int64_t j = 0; j < groups; ++j) {
      if (n[j] <= 1) {
        m[j] = 0;
        sd[j] = 1;
      } else {
        sd[j] = std::sqrt(sd[j] / (n[j] - 1));
      }
    }
  });
  return {mean, std};
}

// scalar[i] * mask[i][t] in one pass over the mask as given: ATen would first convert an int64 mask
// into a float copy, then multiply. The products are those of the ATen expression.
torch::Tensor scale_rows_by_mask(const torch::Tensor& scalar_in, const torch::Tensor& mask_in) {
  const torch::Tensor scalar = scalar_in.contiguous(), mask = mask_in.contiguous();
  torch::Tensor out = torch::empty(mask.sizes(), scalar.options());
  const int64_t length = mask.size(1);
  AT_DISPATCH_FLOATING_TYPES(scalar.scalar_type(), "outcome_result", [&] {
    using value_t = scalar_t;
    const value_t* s = scalar.data_ptr<value_t>();
    value_t* o = out.data_ptr<value_t>();
    AT_DISPATCH_ALL_TYPES_AND3(torch::kBool, torch::kHalf, torch::kBFloat16, mask.scalar_type(), "outcome_mask", [&] {
      const scalar_t* m = mask.data_ptr<scalar_t>();
      // A memory-bound pass of ~1 ms: below ~2M elements one thread is as fast and is not slowed down
      // by waiting for a second thread that the OS has descheduled (shared machines).
      at::parallel_for(0, mask.size(0), std::max<int64_t>(1, (int64_t{1} << 21) / std::max<int64_t>(length, 1)),
                       [&](int64_t begin, int64_t end) {
                         for (int64_t i = begin; i < end; ++i) {
                           const value_t row = s[i];
                           if constexpr (std::is_same_v<scalar_t, int64_t>) {
                             // Masks hold 0/1. Converting through int32 lets the loop vectorise
                             // (there is no packed int64 -> float before AVX-512, and the scalar
                             // cvtsi2ss chains every iteration to the previous one); a row holding
                             // any other value is redone with the exact conversion.
                             uint64_t not_01 = 0;
                             for (int64_t t = i * length, stop = t + length; t < stop; ++t) {
                               not_01 |= static_cast<uint64_t>(m[t]) & ~uint64_t{1};
                               o[t] = row * static_cast<value_t>(static_cast<int32_t>(m[t]));
                             }
                             if (not_01 != 0) {
                               for (int64_t t = i * length, stop = t + length; t < stop; ++t) {
                                 o[t] = row * static_cast<value_t>(m[t]);
                               }
                             }
                           } else if constexpr (std::is_integral_v<scalar_t> && sizeof(scalar_t) <= 2) {
                             // bool and small integers widen to int32 exactly, and then vectorise.
                             for (int64_t t = i * length, stop = t + length; t < stop; ++t) {
                               o[t] = row * static_cast<value_t>(static_cast<int32_t>(m[t]));
                             }
                           } else {
                             for (int64_t t = i * length, stop = t + length; t < stop; ++t) {
                               o[t] = row * static_cast<value_t>(m[t]);
                             }
                           }
                         }
                       });
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) {
  m.impl("row_sums", TORCH_FN(row_sums));
  m.impl("group_mean_std", TORCH_FN(group_mean_std));
  m.impl("scale_rows_by_mask", TORCH_FN(scale_rows_by_mask));
}

}  // namespace verl::kernels::cpu
