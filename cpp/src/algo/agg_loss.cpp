// Loss aggregation modes (see agg_loss.h) and the input checks shared by the losses (loss_common.h).
#include "verl/algo/agg_loss.h"

#include <functional>

#include <torch/torch.h>

#include "algo/loss_common.h"
#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace detail {

namespace {

void check_mask(const NamedTensor& mask) {
  VERL_CHECK(mask.tensor.defined(), mask.name, " is undefined");
  VERL_CHECK(mask.tensor.dim() == 2, mask.name, " must be (bs, response_length), got shape ", mask.tensor.sizes());
  VERL_CHECK(!mask.tensor.is_complex(), mask.name, " must be bool, integer or floating, got ",
             mask.tensor.scalar_type());
}

void check_value(const NamedTensor& mask, const NamedTensor& v) {
  check_same_shape(v.tensor, v.name, mask.tensor, mask.name);
  VERL_CHECK(v.tensor.is_floating_point(), v.name, " must be floating point, got ", v.tensor.scalar_type());
  VERL_CHECK(v.tensor.device() == mask.tensor.device(), v.name, " is on ", v.tensor.device(), " but ", mask.name,
             " is on ", mask.tensor.device());
}

void check_not_empty(const NamedTensor& mask) {
  VERL_CHECK(mask.tensor.numel() > 0, "empty batch: ", mask.name, " has shape ", mask.tensor.sizes(),
             "; a loss needs at least one sequence with at least one position");
}

}  // namespace

void check_loss_shapes(NamedTensor mask, std::initializer_list<NamedTensor> values) {
  check_mask(mask);
  for (const NamedTensor& v : values) {
    VERL_CHECK(v.tensor.defined(), v.name, " is undefined");
    check_value(mask, v);
  }
  check_not_empty(mask);
}

void check_loss_inputs(NamedTensor mask, std::initializer_list<NamedTensor> values,
                       std::initializer_list<NamedTensor> optional_values) {
  check_mask(mask);
  for (const NamedTensor& v : values) {
    VERL_CHECK(v.tensor.defined(), v.name, " is undefined");
    check_value(mask, v);
  }
  for (const NamedTensor& v : optional_values) {
    if (v.tensor.defined()) check_value(mask, v);
  }
  check_not_empty(mask);
  for (const NamedTensor& v : values) check_finite(v.tensor, v.name, mask.tensor);
  for (const NamedTensor& v : optional_values) {
    if (v.tensor.defined()) check_finite(v.tensor, v.name, mask.tensor);
  }
}

torch::Tensor zero_outside(const torch::Tensor& t, const torch::Tensor& mask) {
  return torch::where(mask != 0, t, torch::zeros({}, t.options()));
}

torch::Tensor agg_token_total(const torch::Tensor& total, const std::function<torch::Tensor()>& num_tokens,
                              const std::string& loss_agg_mode, const GlobalBatchInfo& info) {
  VERL_CHECK(info.dp_size >= 1, "dp_size must be >= 1, got ", info.dp_size);
  VERL_CHECK(loss_agg_mode == "token-mean" || loss_agg_mode == "token-sum",
             "agg_token_total: token-mean or token-sum, got ", loss_agg_mode);
  const auto dp_size = static_cast<double>(info.dp_size);
  for (const auto& [value, name] : {std::pair{info.batch_num_tokens, "batch_num_tokens"},
                                    std::pair{info.global_batch_size, "global_batch_size"},
                                    std::pair{info.loss_scale_factor, "loss_scale_factor"}}) {
    VERL_CHECK(!value || *value > 0, name, " must be > 0, got ", value.value_or(0.0));
  }
  // DDP averages gradients over ranks: scaling by dp_size makes token-sum the global token sum.
  if (loss_agg_mode == "token-sum") return total * dp_size;
  if (info.batch_num_tokens) return total / *info.batch_num_tokens * dp_size;
  VERL_CHECK(info.dp_size == 1, "(global) batch_num_tokens is required when dp_size > 1");
  const torch::Tensor count = num_tokens();
  // A normaliser taken from the micro-batch is 0 when nothing is valid; verl then returns 0/0 = NaN.
  VERL_CHECK(count.item<double>() != 0, "loss_mask has no valid token (all positions masked): ", loss_agg_mode,
             " over it is 0/0; pass the global normaliser instead");
  return total / count * dp_size;
}

torch::Tensor agg_loss_unchecked(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                                 const std::string& loss_agg_mode, const GlobalBatchInfo& info) {
  VERL_CHECK(info.dp_size >= 1, "dp_size must be >= 1, got ", info.dp_size);
  const auto dp_size = static_cast<double>(info.dp_size);
  // A normaliser taken from the micro-batch is 0 when nothing is valid; verl then returns 0/0 = NaN.
  auto check_nonzero = [&](const torch::Tensor& count, const char* what) {
    VERL_CHECK(count.item<double>() != 0, "loss_mask has no valid ", what, " (all positions masked): ",
               loss_agg_mode, " over it is 0/0; pass the global normaliser instead");
  };
  auto check_positive = [&](const std::optional<double>& value, const char* name) {
    VERL_CHECK(!value || *value > 0, name, " must be > 0, got ", value.value_or(0.0));
  };
  check_positive(info.batch_num_tokens, "batch_num_tokens");
  check_positive(info.global_batch_size, "global_batch_size");
  check_positive(info.loss_scale_factor, "loss_scale_factor");

  if (loss_agg_mode == "token-mean" || loss_agg_mode == "token-sum") {
    return agg_token_total(masked_sum(loss_mat, loss_mask), [&] { return loss_mask.sum(); }, loss_agg_mode, info);
  }
  const bool seq_token_mean = loss_agg_mode == "seq-mean-token-mean";
  const bool seq_token_sum_norm = loss_agg_mode == "seq-mean-token-sum-norm";
  if (seq_token_mean || seq_token_sum_norm || loss_agg_mode == "seq-mean-token-sum") {
    // verl sums loss_mat * loss_mask here, which lets NaN from masked-out positions through;
    // masked_sum gives the same value for finite inputs and ignores them otherwise.
    torch::Tensor seq_losses = masked_sum(loss_mat, loss_mask, std::vector<int64_t>{-1});  // (bs,)
    const torch::Tensor seq_tokens = loss_mask.sum(-1);
    if (seq_token_mean) seq_losses = seq_losses / (seq_tokens + 1e-8);
    const torch::Tensor seq_mask = (seq_tokens > 0).to(torch::kFloat);  // fully masked rows drop out
    torch::Tensor loss;
    if (info.global_batch_size) {
      loss = masked_sum(seq_losses, seq_mask) / *info.global_batch_size * dp_size;
    } else {
      VERL_CHECK(info.dp_size == 1, "global_batch_size is required when dp_size > 1");
      const torch::Tensor num_seqs = seq_mask.sum();
      check_nonzero(num_seqs, "sequence");
      loss = masked_sum(seq_losses, seq_mask) / num_seqs * dp_size;
    }
    if (seq_token_sum_norm) {
      loss = loss / info.loss_scale_factor.value_or(static_cast<double>(loss_mask.size(-1)));
    }
    return loss;
  }
  std::string modes;
  for (const std::string& m : loss_agg_modes()) modes += (modes.empty() ? "" : ", ") + m;
  VERL_FAIL(InvalidArgument, "Invalid loss_agg_mode: '", loss_agg_mode, "'; expected one of ", modes);
}

}  // namespace detail

const std::vector<std::string>& loss_agg_modes() {
  static const std::vector<std::string> modes = {"token-mean", "token-sum", "seq-mean-token-sum",
                                                 "seq-mean-token-mean", "seq-mean-token-sum-norm"};
  return modes;
}

torch::Tensor agg_loss(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                       const std::string& loss_agg_mode, const GlobalBatchInfo& info) {
  detail::check_loss_inputs({loss_mask, "loss_mask"}, {{loss_mat, "loss_mat"}});
  return detail::agg_loss_unchecked(loss_mat, loss_mask, loss_agg_mode, info);
}

torch::Tensor agg_loss(const torch::Tensor& loss_mat, const torch::Tensor& loss_mask,
                       const std::string& loss_agg_mode, int64_t dp_size, std::optional<double> batch_num_tokens,
                       std::optional<double> global_batch_size, std::optional<double> loss_scale_factor) {
  return agg_loss(loss_mat, loss_mask, loss_agg_mode,
                  GlobalBatchInfo{dp_size, batch_num_tokens, global_batch_size, loss_scale_factor});
}

}  // namespace verl::algo
