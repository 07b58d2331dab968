#include "verl/workers/response_forward.h"

#include <algorithm>

#include <torch/torch.h>

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::workers {

namespace {

torch::Tensor at_least_float(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? t : t.to(torch::kFloat);
}

}  // namespace

ResponseHidden response_hidden_states(model::CausalLM& model, const torch::Tensor& input_ids,
                                      const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                      int64_t response_length, bool remove_padding) {
  VERL_CHECK_AS(DataError, input_ids.defined() && input_ids.dim() == 2, "input_ids must be (bs, seq_len), got ",
                input_ids.defined() ? input_ids.sizes() : torch::IntArrayRef{});
  const int64_t bs = input_ids.size(0);
  const int64_t seq = input_ids.size(1);
  VERL_CHECK_AS(DataError, response_length > 0 && response_length < seq, "response_length ", response_length,
                " must lie in (0, seq_len = ", seq, "): the rows need a prompt");
  torch::Tensor valid = attention_mask.defined() ? attention_mask.to(torch::kBool)
                                                 : torch::ones_like(input_ids, input_ids.options().dtype(torch::kBool));
  VERL_CHECK_AS(DataError, valid.sizes() == input_ids.sizes(), "attention_mask ", valid.sizes(),
                " must have the shape of input_ids ", input_ids.sizes());
  if (position_ids.defined()) {
    VERL_CHECK_AS(DataError, position_ids.sizes() == input_ids.sizes(), "position_ids ", position_ids.sizes(),
                  " must have the shape of input_ids ", input_ids.sizes());
  }
  const int64_t prompt_length = seq - response_length;
  torch::Tensor response_valid = valid.narrow(1, prompt_length, response_length);
  // Every response token is predicted from the real token before it in its own row.
  torch::Tensor orphan = response_valid.any(1).logical_and(valid.narrow(1, 0, prompt_length).any(1).logical_not());
  VERL_CHECK_AS(DataError, !orphan.any().item<bool>(),
                "a row has response tokens but no real prompt token before them (attention_mask of the prompt is all 0)");

  ResponseHidden out;
  out.response_valid = response_valid;
  out.labels = input_ids.narrow(1, prompt_length, response_length).masked_select(response_valid);

  bool packed = remove_padding;
  if (packed && position_ids.defined()) {
    // Packed sequences restart their positions at 0 (verl's left-padding convention); other
    // position ids need the padded forward.
    torch::Tensor expected = (valid.to(torch::kLong).cumsum(1) - 1).clamp_min(0);
    packed = position_ids.to(torch::kLong).masked_select(valid).equal(expected.masked_select(valid));
  }
  if (packed) {
    torch::Tensor flat_valid = valid.reshape({-1});
    torch::Tensor flat_ids = input_ids.reshape({-1}).masked_select(flat_valid);
    torch::Tensor lengths = valid.sum(1);
    lengths = lengths.masked_select(lengths > 0);  // rows without tokens take no part
    torch::Tensor cu = torch::cat({torch::zeros({1}, lengths.options()), lengths.cumsum(0)});
    torch::Tensor h = model.hidden_states_packed(flat_ids, cu);  // (total, hidden)
    torch::Tensor packed_index = (flat_valid.to(torch::kLong).cumsum(0) - 1).view({bs, seq});
    torch::Tensor source = packed_index.narrow(1, prompt_length, response_length).masked_select(response_valid) - 1;
    out.hidden = h.index_select(0, source);
  } else {
    torch::Tensor h = model.hidden_states(input_ids, valid.to(torch::kLong), position_ids);  // (bs, seq, hidden)
    out.hidden = h.narrow(1, prompt_length - 1, response_length).index({response_valid});
  }
  return out;
}

torch::Tensor scatter_response(const torch::Tensor& values, const torch::Tensor& response_valid) {
  VERL_CHECK(values.dim() == 1, "scatter_response: values must be (num_response_tokens,), got ", values.sizes());
  return torch::zeros(response_valid.sizes(), values.options()).masked_scatter(response_valid, values);
}

ResponseLogProbs response_log_probs(model::CausalLM& model, const torch::Tensor& input_ids,
                                    const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                                    int64_t response_length, double temperature, bool calculate_entropy,
                                    bool remove_padding, bool calculate_sum_pi_squared) {
  VERL_CHECK(model.head_kind() == model::HeadKind::kLanguageModel,
             "response_log_probs needs a model with the LM head (got a value-head model)");
  ResponseHidden rh =
      response_hidden_states(model, input_ids, attention_mask, position_ids, response_length, remove_padding);
  torch::Tensor logits = model.apply_head(rh.hidden);  // (n, vocab)
  if (temperature != 1.0) logits = logits / std::max(temperature, 1e-8);
  ResponseLogProbs out;
  out.log_probs = scatter_response(at_least_float(algo::logprobs_from_logits(logits, rh.labels)), rh.response_valid);
  if (calculate_entropy) {
    out.entropy = scatter_response(at_least_float(algo::entropy_from_logits(logits)), rh.response_valid);
  }
  if (calculate_sum_pi_squared) {
    // verl's calculate_sum_pi_squared_from_logits: sum_v pi_v^2 = exp(logsumexp(2 z) - 2 logsumexp(z)),
    // in log space so that no probability is squared below the float range.
    torch::Tensor z = at_least_float(logits);
    torch::Tensor sum_pi_squared = torch::exp(torch::logsumexp(2.0 * z, -1) - 2.0 * torch::logsumexp(z, -1));
    out.sum_pi_squared = scatter_response(sum_pi_squared, rh.response_valid);
  }
  return out;
}

torch::Tensor response_values(model::CausalLM& model, const torch::Tensor& input_ids,
                              const torch::Tensor& attention_mask, const torch::Tensor& position_ids,
                              int64_t response_length, bool remove_padding) {
  VERL_CHECK(model.head_kind() == model::HeadKind::kValue,
             "response_values needs a model with the value head (CausalLM(..., HeadKind::kValue))");
  ResponseHidden rh =
      response_hidden_states(model, input_ids, attention_mask, position_ids, response_length, remove_padding);
  torch::Tensor values = model.apply_head(rh.hidden);  // (n,)
  return scatter_response(at_least_float(values), rh.response_valid);
}

}  // namespace verl::workers
