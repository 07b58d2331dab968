// Masked statistics, response masks and chunked entropy / log-prob kernels (see functional.h).
#include "verl/algo/functional.h"

#include <torch/torch.h>

#include "verl/core/error.h"

namespace verl::algo {
namespace {

torch::Tensor sum_over(const torch::Tensor& t, const std::optional<std::vector<int64_t>>& axis) {
  return axis ? t.sum(*axis) : t.sum();
}

// Rows of a (rows, vocab) matrix are processed `chunk` at a time in float32 or wider.
torch::ScalarType compute_dtype(const torch::Tensor& logits) {
  return logits.scalar_type() == torch::kDouble ? torch::kDouble : torch::kFloat;
}

torch::Tensor as_rows(const torch::Tensor& logits) { return logits.reshape({-1, logits.size(-1)}); }

void check_logits(const torch::Tensor& logits, int64_t chunk_size) {
  VERL_CHECK(logits.dim() >= 1 && logits.size(-1) > 0, "logits need a non-empty vocab dimension, got shape ",
             logits.sizes());
  VERL_CHECK(logits.is_floating_point(), "logits must be floating point, got ", logits.scalar_type());
  VERL_CHECK(chunk_size >= 1, "chunk_size must be >= 1, got ", chunk_size);
}

// H = logsumexp(x) - sum softmax(x) * x; dH/dx = -p * (x - E_p[x]).
struct EntropyFunction : public torch::autograd::Function<EntropyFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits, int64_t chunk) {
    const torch::Tensor rows = as_rows(logits);
    torch::Tensor out = torch::empty({rows.size(0)}, rows.options().dtype(compute_dtype(logits)));
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const torch::Tensor x = rows.slice(0, b, b + chunk).to(out.scalar_type());
      const torch::Tensor lse = x.logsumexp(-1, true);
      out.slice(0, b, b + chunk).copy_((lse - ((x - lse).exp() * x).sum(-1, true)).squeeze(-1));
    }
    ctx->save_for_backward({logits});
    ctx->saved_data["chunk"] = chunk;
    return out.reshape(logits.sizes().slice(0, logits.dim() - 1));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const torch::Tensor logits = ctx->get_saved_variables()[0];
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const torch::Tensor rows = as_rows(logits);
    const torch::Tensor g = grads[0].reshape({-1});
    torch::Tensor grad = torch::empty_like(rows);
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const torch::Tensor x = rows.slice(0, b, b + chunk).to(compute_dtype(logits));
      const torch::Tensor p = (x - x.logsumexp(-1, true)).exp();
      const torch::Tensor mean_x = (p * x).sum(-1, true);
      grad.slice(0, b, b + chunk).copy_(-p * (x - mean_x) * g.slice(0, b, b + chunk).unsqueeze(-1).to(x.scalar_type()));
    }
    return {grad.reshape(logits.sizes()), torch::Tensor()};
  }
};

// log p(label) = x[label] - logsumexp(x); d/dx = onehot(label) - p.
struct LogprobFunction : public torch::autograd::Function<LogprobFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& labels, int64_t chunk) {
    const torch::Tensor rows = as_rows(logits);
    const torch::Tensor flat_labels = labels.reshape({-1, 1});
    torch::Tensor out = torch::empty({rows.size(0)}, rows.options().dtype(compute_dtype(logits)));
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const torch::Tensor x = rows.slice(0, b, b + chunk).to(out.scalar_type());
      const torch::Tensor picked = x.gather(-1, flat_labels.slice(0, b, b + chunk));
      out.slice(0, b, b + chunk).copy_((picked - x.logsumexp(-1, true)).squeeze(-1));
    }
    ctx->save_for_backward({logits, labels});
    ctx->saved_data["chunk"] = chunk;
    return out.reshape(labels.sizes());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const torch::Tensor rows = as_rows(saved[0]);
    const torch::Tensor flat_labels = saved[1].reshape({-1, 1});
    const torch::Tensor g = grads[0].reshape({-1, 1});
    torch::Tensor grad = torch::empty_like(rows);
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const torch::Tensor x = rows.slice(0, b, b + chunk).to(compute_dtype(saved[0]));
      torch::Tensor d = -(x - x.logsumexp(-1, true)).exp();
      d.scatter_add_(-1, flat_labels.slice(0, b, b + chunk), torch::ones_like(d).narrow(-1, 0, 1));
      grad.slice(0, b, b + chunk).copy_(d * g.slice(0, b, b + chunk).to(d.scalar_type()));
    }
    return {grad.reshape(saved[0].sizes()), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

void check_same_shape(const torch::Tensor& a, const char* a_name, const torch::Tensor& b, const char* b_name) {
  VERL_CHECK(a.sizes() == b.sizes(), a_name, " and ", b_name, " must have the same shape, got ", a.sizes(), " and ",
             b.sizes());
}

void check_finite(const torch::Tensor& t, const char* name, const torch::Tensor& mask) {
  if (!t.is_floating_point()) return;
  torch::Tensor bad = ~torch::isfinite(t);
  if (mask.defined()) bad = bad & (mask != 0);
  VERL_CHECK(!bad.any().item<bool>(), name, " holds NaN or Inf at ", bad.sum().item<int64_t>(),
             " position(s)", mask.defined() ? " inside the mask" : "");
}

torch::Tensor masked_sum(const torch::Tensor& values, const torch::Tensor& mask,
                         std::optional<std::vector<int64_t>> axis) {
  check_same_shape(values, "values", mask, "mask");
  const torch::Tensor valid = torch::where(mask.to(torch::kBool), values, torch::zeros({}, values.options()));
  return sum_over(valid * mask, axis);
}

torch::Tensor masked_mean(const torch::Tensor& values, const torch::Tensor& mask,
                          std::optional<std::vector<int64_t>> axis) {
  return masked_sum(values, mask, axis) / (sum_over(mask, axis) + 1e-8);
}

torch::Tensor masked_var(const torch::Tensor& values, const torch::Tensor& mask, bool unbiased) {
  const torch::Tensor mean = masked_mean(values, mask);
  torch::Tensor variance = masked_mean((values - mean).pow(2), mask);
  if (unbiased) {
    const double count = mask.sum().item<double>();
    VERL_CHECK(count != 0, "At least one element in the mask has to be 1.");
    VERL_CHECK(count != 1, "The sum of the mask is one, which can cause a division by zero.");
    variance = variance * (count / (count - 1));
  }
  return variance;
}

torch::Tensor masked_whiten(const torch::Tensor& values, const torch::Tensor& mask, bool shift_mean) {
  const torch::Tensor mean = masked_mean(values, mask);
  torch::Tensor whitened = (values - mean) * torch::rsqrt(masked_var(values, mask) + 1e-8);
  return shift_mean ? whitened : whitened + mean;
}

torch::Tensor get_response_mask(const torch::Tensor& response_id, const std::vector<int64_t>& eos_token,
                                torch::ScalarType dtype) {
  VERL_CHECK(response_id.dim() == 2, "response_id must be (bs, response_length), got shape ", response_id.sizes());
  VERL_CHECK(!eos_token.empty(), "eos_token must name at least one token id");
  const torch::Tensor eos = torch::tensor(eos_token, response_id.options().dtype(torch::kLong));
  const torch::Tensor is_eos = torch::isin(response_id, eos).to(torch::kLong);
  return (is_eos.cumsum(1) - is_eos).eq(0).to(dtype);
}

torch::Tensor entropy_from_logits(const torch::Tensor& logits, int64_t chunk_size) {
  check_logits(logits, chunk_size);
  return EntropyFunction::apply(logits, chunk_size);
}

torch::Tensor logprobs_from_logits(const torch::Tensor& logits, const torch::Tensor& labels, int64_t chunk_size) {
  check_logits(logits, chunk_size);
  VERL_CHECK(labels.sizes() == logits.sizes().slice(0, logits.dim() - 1), "labels must have shape ",
             logits.sizes().slice(0, logits.dim() - 1), " (logits without the vocab dim), got ", labels.sizes());
  VERL_CHECK(labels.scalar_type() == torch::kLong || labels.scalar_type() == torch::kInt,
             "labels must be int64 or int32, got ", labels.scalar_type());
  const torch::Tensor long_labels = labels.to(torch::kLong);
  if (long_labels.numel() > 0) {
    const int64_t lo = long_labels.min().item<int64_t>(), hi = long_labels.max().item<int64_t>();
    VERL_CHECK(lo >= 0 && hi < logits.size(-1), "labels must lie in [0, ", logits.size(-1), "), got ",
               (lo < 0 ? lo : hi));
  }
  return LogprobFunction::apply(logits, long_labels, chunk_size);
}

}  // namespace verl::algo
