// verl::softmax_row_stats on CUDA (kernels/ops.h): softmax_row_stats.cu, one launch reading the logits once in
// their own dtype.
#include <torch/library.h>
#include <torch/torch.h>

#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> softmax_row_stats(const torch::Tensor& logits_in,
                                                                          const torch::Tensor& labels_in, bool mean) {
  VERL_CHECK(logits_in.dim() == 2 && logits_in.is_floating_point(),
             "softmax_row_stats: logits must be (rows, vocab) floating, got ", logits_in.sizes(), " ",
             logits_in.scalar_type());
  const int64_t rows = logits_in.size(0), vocab = logits_in.size(1);
  VERL_CHECK(vocab > 0, "softmax_row_stats: logits need a non-empty vocab dimension, got ", logits_in.sizes());
  const bool with_labels = labels_in.numel() != 0;
  VERL_CHECK(!with_labels || labels_in.sizes() == torch::IntArrayRef({rows, 1}),
             "softmax_row_stats: labels must be (rows, 1) or empty, got ", labels_in.sizes());
  VERL_CHECK(!with_labels || labels_in.device() == logits_in.device(),
             "softmax_row_stats: logits and labels must be on one device");
  const c10::DeviceGuard guard(logits_in.device());
  const torch::Tensor logits = logits_in.contiguous();
  const torch::Tensor labels = with_labels ? labels_in.to(torch::kLong).contiguous() : labels_in;
  const auto opts = logits.options().dtype(logits.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat);
  torch::Tensor lse = torch::empty({rows, 1}, opts);
  torch::Tensor picked = torch::empty({with_labels ? rows : 0, 1}, opts);
  torch::Tensor mean_x = torch::empty({mean ? rows : 0, 1}, opts);
  check_launch(launch_softmax_row_stats(logits.const_data_ptr(), rows, vocab,
                                        with_labels ? labels.const_data_ptr<int64_t>() : nullptr, mean,
                                        lse.data_ptr(), picked.data_ptr(), mean_x.data_ptr(),
                                        launcher_dtype(logits.scalar_type(), "softmax_row_stats"), stream_of(logits)),
               "softmax_row_stats");
  return {lse, picked, mean_x};
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("softmax_row_stats", TORCH_FN(softmax_row_stats)); }

}  // namespace verl::kernels::cuda
