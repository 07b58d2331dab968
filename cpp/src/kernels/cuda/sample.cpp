// verl::sample on CUDA (kernels/ops.h): untruncated rows in sample.cu, one block per row; truncated
// rows (top-k / top-p / min-p) in the ATen form, as on CPU. The row split is the CPU kernel's, so a
// row takes the same path whatever it is batched with.
#include <torch/library.h>
#include <torch/torch.h>

#include <vector>

#include "core/host_arrays.h"
#include "kernels/aten/compositions.h"
#include "kernels/cuda/dtype.h"

namespace verl::kernels::cuda {
namespace {

std::tuple<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits_in, c10::ArrayRef<double> temperature,
                                                c10::ArrayRef<int64_t> top_k, c10::ArrayRef<double> top_p,
                                                c10::ArrayRef<double> min_p, c10::ArrayRef<double> uniform,
                                                bool /*allow_simd: the CPU kernel's switch*/) {
  torch::NoGradGuard no_grad;
  const SamplerRows rows = aten::sampler_rows(temperature, top_k, top_p, min_p, uniform);
  VERL_CHECK(logits_in.dim() == 2 && logits_in.size(0) == static_cast<int64_t>(rows.size()),
             "sample: logits must be (rows, vocab) with one entry per row, got ", logits_in.sizes());
  const c10::DeviceGuard guard(logits_in.device());
  const int64_t n = logits_in.size(0), vocab = logits_in.size(1);
  std::vector<int64_t> plain, truncated;
  std::vector<double> params;
  for (int64_t i = 0; i < n; ++i) {
    if (aten::truncates(rows, i, vocab)) {
      truncated.push_back(i);
    } else {
      plain.push_back(i);
      params.push_back(rows.temperature[i]);
      params.push_back(rows.uniform[i]);
    }
  }
  // The kernel reads the logits in their own dtype (a bf16 rollout's are not copied to float32 first).
  const torch::Tensor logits = logits_in.contiguous();
  const Dtype dtype = launcher_dtype(logits.scalar_type(), "sample");
  torch::Tensor tokens = torch::empty({n}, logits.options().dtype(torch::kLong));
  torch::Tensor logprobs = torch::empty({n}, logits.options().dtype(torch::kFloat));
  // The plain rows, their (temperature, uniform) pairs and the truncated rows reach the device in one copy
  // (HostArrays: no host synchronisation).
  detail::HostArrays arrays;
  const size_t plain_at = arrays.add(plain), params_at = arrays.add(params), truncated_at = arrays.add(truncated);
  const std::vector<torch::Tensor> staged = arrays.to(logits.device());
  if (!plain.empty()) {
    check_launch(launch_sample_plain(logits.const_data_ptr(), dtype, vocab, staged[plain_at].const_data_ptr<int64_t>(),
                                     staged[params_at].const_data_ptr<double>(), static_cast<int64_t>(plain.size()),
                                     tokens.data_ptr<int64_t>(), logprobs.data_ptr<float>(), stream_of(logits)),
                 "sample");
  }
  if (!truncated.empty()) {
    SamplerRows sub;
    for (int64_t i : truncated)
      sub.push(rows.temperature[i], rows.top_k[i], rows.top_p[i], rows.min_p[i], rows.uniform[i]);
    const torch::Tensor& idx = staged[truncated_at];
    const SampleResult r = aten::sample_rows(logits.index_select(0, idx).to(torch::kFloat), sub);
    tokens.index_copy_(0, idx, r.tokens);
    logprobs.index_copy_(0, idx, r.logprobs);
  }
  return {tokens, logprobs};
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CUDA, m) { m.impl("sample", TORCH_FN(sample)); }

}  // namespace verl::kernels::cuda
