// Masked statistics, response masks and chunked entropy / log-prob kernels (see functional.h).
#include "verl/algo/functional.h"

#include <algorithm>

#include <torch/torch.h>

#include "kernels/ops.h"
#include "verl/core/error.h"

namespace verl::algo {
namespace {

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

// Rows per chunk: at most `max_rows`, and at most kernels::row_chunk_bytes of compute-dtype logits on their device
// (why that much: kernels/ops.h), so the peak extra memory is a few chunk-sized tensors whatever the vocabulary (the
// scratch; a float32 copy of 16-bit logits; the entropy's backward holds three).
int64_t rows_per_chunk(const torch::Tensor& rows, int64_t max_rows) {
  const int64_t row_bytes = rows.size(1) * static_cast<int64_t>(c10::elementSize(compute_dtype(rows)));
  const int64_t budget = kernels::row_chunk_bytes(rows.device());
  return std::clamp<int64_t>(budget / std::max<int64_t>(row_bytes, 1), 1, max_rows);
}

// Rows [begin, end) in the compute dtype: a view of the logits, or a chunk-sized converted copy.
torch::Tensor chunk_of(const torch::Tensor& rows, int64_t begin, int64_t end) {
  return rows.slice(0, begin, end).to(compute_dtype(rows));
}

// Where the backward writes a chunk's gradient: straight into the gradient's rows when it has the
// compute dtype, else into a chunk-sized scratch tensor that `finish` copies (casts) over.
struct GradChunk {
  torch::Tensor grad_rows;  // (chunk, vocab) slice of the gradient, the logits' dtype
  torch::Tensor out;        // where to compute: grad_rows itself or scratch in the compute dtype

  GradChunk(const torch::Tensor& grad, int64_t begin, int64_t end, torch::ScalarType compute)
      : grad_rows(grad.slice(0, begin, end)),
        out(grad_rows.scalar_type() == compute ? grad_rows : torch::empty(grad_rows.sizes(),
                                                                           grad_rows.options().dtype(compute))) {}
  void finish() {
    if (!out.is_same(grad_rows)) grad_rows.copy_(out);
  }
};

// H = logsumexp(x) - sum softmax(x) * x; dH/dx = -p * (x - E_p[x]). The forward saves per row
// only logsumexp and E_p[x] (two floats), the backward recomputes p chunk by chunk into the gradient.
struct EntropyFunction : public torch::autograd::Function<EntropyFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits, int64_t max_rows) {
    const torch::Tensor rows = as_rows(logits);
    const auto opts = rows.options().dtype(compute_dtype(logits));
    torch::Tensor lse = torch::empty({rows.size(0), 1}, opts), mean_x = torch::empty({rows.size(0), 1}, opts);
    const torch::Tensor no_labels = torch::empty({0, 1}, rows.options().dtype(torch::kLong));
    const int64_t chunk = rows_per_chunk(rows, max_rows);
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const int64_t e = std::min(b + chunk, rows.size(0));
      auto [lse_c, picked_c, mean_c] = kernels::softmax_row_stats(rows.slice(0, b, e), no_labels, /*mean=*/true);
      lse.slice(0, b, e).copy_(lse_c);
      mean_x.slice(0, b, e).copy_(mean_c);
    }
    ctx->save_for_backward({logits, lse, mean_x});
    ctx->saved_data["max_rows"] = max_rows;
    return (lse - mean_x).reshape(logits.sizes().slice(0, logits.dim() - 1));
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor rows = as_rows(saved[0]);
    const torch::Tensor &lse = saved[1], &mean_x = saved[2];
    const torch::ScalarType compute = compute_dtype(saved[0]);
    const torch::Tensor neg_g = -grads[0].reshape({-1, 1}).to(compute);
    torch::Tensor grad = torch::empty_like(rows, torch::MemoryFormat::Contiguous);
    const int64_t chunk = rows_per_chunk(rows, ctx->saved_data["max_rows"].toInt());
    const torch::Tensor scratch =
        torch::empty({std::min(chunk, rows.size(0)), rows.size(1)}, rows.options().dtype(compute));
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const int64_t e = std::min(b + chunk, rows.size(0));
      const torch::Tensor x = chunk_of(rows, b, e);
      GradChunk d(grad, b, e, compute);
      at::sub_out(d.out, x, lse.slice(0, b, e)).exp_();  // p
      torch::Tensor centered = scratch.narrow(0, 0, e - b);
      at::sub_out(centered, x, mean_x.slice(0, b, e));
      d.out.mul_(centered).mul_(neg_g.slice(0, b, e));  // -g * p * (x - E_p[x])
      d.finish();
    }
    return {grad.reshape(saved[0].sizes()), torch::Tensor()};
  }
};

// log p(label) = x[label] - logsumexp(x); d/dx = g * (onehot(label) - p). The forward saves per row
// only logsumexp (one float), so the backward never recomputes the max and sum; it writes
// -g * exp(x - lse) straight into the gradient's rows and adds g at each label.
struct LogprobFunction : public torch::autograd::Function<LogprobFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits,
                               const torch::Tensor& labels, int64_t max_rows) {
    const torch::Tensor rows = as_rows(logits);
    const torch::Tensor flat_labels = labels.reshape({-1, 1});
    torch::Tensor lse = torch::empty({rows.size(0), 1}, rows.options().dtype(compute_dtype(logits)));
    torch::Tensor picked = torch::empty_like(lse);
    const int64_t chunk = rows_per_chunk(rows, max_rows);
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const int64_t e = std::min(b + chunk, rows.size(0));
      auto [lse_c, picked_c, mean_c] =
          kernels::softmax_row_stats(rows.slice(0, b, e), flat_labels.slice(0, b, e), /*mean=*/false);
      lse.slice(0, b, e).copy_(lse_c);
      picked.slice(0, b, e).copy_(picked_c);
    }
    ctx->save_for_backward({logits, flat_labels, lse});
    ctx->saved_data["max_rows"] = max_rows;
    return (picked - lse).reshape(labels.sizes());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const torch::Tensor rows = as_rows(saved[0]);
    const torch::Tensor &flat_labels = saved[1], &lse = saved[2];
    const torch::ScalarType compute = compute_dtype(saved[0]);
    const torch::Tensor g = grads[0].reshape({-1, 1}).to(compute);
    const torch::Tensor neg_g = -g;
    torch::Tensor grad = torch::empty_like(rows, torch::MemoryFormat::Contiguous);
    const int64_t chunk = rows_per_chunk(rows, ctx->saved_data["max_rows"].toInt());
    for (int64_t b = 0; b < rows.size(0); b += chunk) {
      const int64_t e = std::min(b + chunk, rows.size(0));
      GradChunk d(grad, b, e, compute);
      at::sub_out(d.out, chunk_of(rows, b, e), lse.slice(0, b, e)).exp_().mul_(neg_g.slice(0, b, e));
      d.out.scatter_add_(-1, flat_labels.slice(0, b, e), g.slice(0, b, e));
      d.finish();
    }
    return {grad.reshape(saved[0].sizes()), torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

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
