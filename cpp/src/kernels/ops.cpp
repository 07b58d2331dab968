// The verl op library: schemas, and the typed entry points of ops.h. The kernels register
// themselves beside their code (TORCH_LIBRARY_IMPL in cpu/, cuda/, aten/); static registration
// order does not matter to the dispatcher.
#include "kernels/ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/LegacyTypeDispatch.h>
#include <torch/library.h>

namespace verl::kernels {

TORCH_LIBRARY(verl, m) {
  m.def("paged_attention(Tensor q, Tensor k_pool, Tensor v_pool, Tensor block_tables, Tensor positions, "
        "float scale, bool allow_simd=True, int sliding_window=0) -> Tensor");
  m.def("kv_cache_write(Tensor(a!) pool, Tensor slots, Tensor x) -> ()");
  m.def("sample(Tensor logits, float[] temperature, int[] top_k, float[] top_p, float[] min_p, float[] uniform, "
        "bool allow_simd=True) -> (Tensor, Tensor)");
  m.def("gae_scan(Tensor rewards, Tensor values, Tensor mask, float gamma, float lam) -> Tensor");
  m.def("gae_advantage_return(Tensor rewards, Tensor values, Tensor mask, float gamma, float lam) -> (Tensor, Tensor)");
  m.def("rotary(Tensor x, Tensor cos, Tensor sin) -> Tensor");
  m.def("rms_norm(Tensor x, Tensor weight, float eps) -> Tensor");
  m.def("softmax_row_stats(Tensor logits, Tensor labels, bool mean) -> (Tensor, Tensor, Tensor)");
  m.def("group_mean_std(Tensor scores, Tensor group_id, Tensor count) -> (Tensor, Tensor)");
  m.def("row_sums(Tensor rewards) -> Tensor");
  m.def("scale_rows_by_mask(Tensor scalar, Tensor mask) -> Tensor");
  m.def("vanilla_token_losses(Tensor old_log_prob, Tensor log_prob, Tensor advantages, Tensor response_mask, "
        "float clip_low, float clip_high, float clip_ratio_c, bool reduce) -> (Tensor, Tensor, Tensor)");
}

namespace {

// The op's typed handle, looked up once per op (the lookup takes the dispatcher's lock).
template <typename Signature>
c10::TypedOperatorHandle<Signature> op(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Signature>();
}

// Dispatch straight to the device kernel: none of these ops has a derivative, and going through
// the autograd keys would box every call (see ops.h).
using BelowAutograd = at::AutoDispatchBelowADInplaceOrView;

}  // namespace

torch::Tensor paged_attention(const torch::Tensor& q, const torch::Tensor& k_pool, const torch::Tensor& v_pool,
                              const torch::Tensor& block_tables, const torch::Tensor& positions, double scale,
                              bool allow_simd, int64_t sliding_window) {
  static const auto handle = op<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                              const torch::Tensor&, const torch::Tensor&, double, bool, int64_t)>(
      "verl::paged_attention");
  BelowAutograd guard;
  return handle.call(q, k_pool, v_pool, block_tables, positions, scale, allow_simd, sliding_window);
}

void kv_cache_write(torch::Tensor& pool, const torch::Tensor& slots, const torch::Tensor& x) {
  static const auto handle =
      op<void(torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>("verl::kv_cache_write");
  BelowAutograd guard;
  handle.call(pool, slots, x);
}

std::tuple<torch::Tensor, torch::Tensor> sample(const torch::Tensor& logits, const std::vector<double>& temperature,
                                                const std::vector<int64_t>& top_k, const std::vector<double>& top_p,
                                                const std::vector<double>& min_p, const std::vector<double>& uniform,
                                                bool allow_simd) {
  static const auto handle =
      op<std::tuple<torch::Tensor, torch::Tensor>(const torch::Tensor&, c10::ArrayRef<double>, c10::ArrayRef<int64_t>,
                                                  c10::ArrayRef<double>, c10::ArrayRef<double>, c10::ArrayRef<double>,
                                                  bool)>("verl::sample");
  BelowAutograd guard;
  return handle.call(logits, temperature, top_k, top_p, min_p, uniform, allow_simd);
}

torch::Tensor gae_scan(const torch::Tensor& rewards, const torch::Tensor& values, const torch::Tensor& mask,
                       double gamma, double lam) {
  static const auto handle =
      op<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double, double)>(
          "verl::gae_scan");
  BelowAutograd guard;
  return handle.call(rewards, values, mask, gamma, lam);
}

std::tuple<torch::Tensor, torch::Tensor> gae_advantage_return(const torch::Tensor& rewards,
                                                              const torch::Tensor& values, const torch::Tensor& mask,
                                                              double gamma, double lam) {
  static const auto handle = op<std::tuple<torch::Tensor, torch::Tensor>(
      const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double, double)>("verl::gae_advantage_return");
  BelowAutograd guard;
  return handle.call(rewards, values, mask, gamma, lam);
}

torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  static const auto handle =
      op<torch::Tensor(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>("verl::rotary");
  BelowAutograd guard;
  return handle.call(x, cos, sin);
}

torch::Tensor rms_norm(const torch::Tensor& x, const torch::Tensor& weight, double eps) {
  static const auto handle =
      op<torch::Tensor(const torch::Tensor&, const torch::Tensor&, double)>("verl::rms_norm");
  BelowAutograd guard;
  return handle.call(x, weight, eps);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> softmax_row_stats(const torch::Tensor& logits,
                                                                         const torch::Tensor& labels, bool mean) {
  static const auto handle = op<std::tuple<torch::Tensor, torch::Tensor, torch::Tensor>(
      const torch::Tensor&, const torch::Tensor&, bool)>("verl::softmax_row_stats");
  BelowAutograd guard;
  return handle.call(logits, labels, mean);
}

std::tuple<torch::Tensor, torch::Tensor> group_mean_std(const torch::Tensor& scores, const torch::Tensor& group_id,
                                                        const torch::Tensor& count) {
  static const auto handle = op<std::tuple<torch::Tensor, torch::Tensor>(
      const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)>("verl::group_mean_std");
  BelowAutograd guard;
  return handle.call(scores, group_id, count);
}

torch::Tensor row_sums(const torch::Tensor& rewards) {
  static const auto handle = op<torch::Tensor(const torch::Tensor&)>("verl::row_sums");
  BelowAutograd guard;
  return handle.call(rewards);
}

torch::Tensor scale_rows_by_mask(const torch::Tensor& scalar, const torch::Tensor& mask) {
  static const auto handle =
      op<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>("verl::scale_rows_by_mask");
  BelowAutograd guard;
  return handle.call(scalar, mask);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> vanilla_token_losses(
    const torch::Tensor& old_log_prob, const torch::Tensor& log_prob, const torch::Tensor& advantages,
    const torch::Tensor& response_mask, double clip_low, double clip_high, double clip_ratio_c, bool reduce) {
  static const auto handle = op<std::tuple<torch::Tensor, torch::Tensor, torch::Tensor>(
      const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double, double, double,
      bool)>("verl::vanilla_token_losses");
  BelowAutograd guard;
  return handle.call(old_log_prob, log_prob, advantages, response_mask, clip_low, clip_high, clip_ratio_c, reduce);
}

bool has_kernel(const char* name, c10::DispatchKey key) {
  const auto handle = c10::Dispatcher::singleton().findSchemaOrThrow((std::string("verl::") + name).c_str(), "");
  return handle.hasKernelForDispatchKey(key);
}

int64_t row_chunk_bytes(const c10::Device& device) {
  return device.is_cpu() ? int64_t{31} << 20 : int64_t{1} << 30;
}

bool has_kernel_for(const char* name, const torch::Tensor& t) {
  const c10::DispatchKey backend = c10::legacyExtractDispatchKey(t.key_set());
  return has_kernel(name, backend) || has_kernel(name, c10::DispatchKey::CompositeExplicitAutograd);
}

}  // namespace verl::kernels
