// Loss-masked batches: checks, packing and target log-probs (see target_batch.h).
#include "trainer/target_batch.h"

#include "verl/algo/functional.h"
#include "verl/core/error.h"

namespace verl::trainer::detail {

TargetBatch check_target_batch(const DataProto& data, const model::CausalLM& model, const char* what) {
  for (const char* key : {"input_ids", "attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.has_tensor(key), what, ": missing tensor '", key,
                  "' (needs input_ids, attention_mask, loss_mask)");
  }
  const torch::Tensor& ids = data.tensor("input_ids");
  VERL_CHECK_AS(DataError, ids.dim() == 2 && ids.size(0) > 0 && ids.size(1) > 0, what,
                ": 'input_ids' must be (bs, seq) with bs, seq > 0, got ", ids.sizes());
  VERL_CHECK_AS(DataError, !torch::isFloatingType(ids.scalar_type()) && ids.scalar_type() != torch::kBool, what,
                ": 'input_ids' must hold integer token ids, got ", ids.scalar_type());
  for (const char* key : {"attention_mask", "loss_mask"}) {
    VERL_CHECK_AS(DataError, data.tensor(key).sizes() == ids.sizes(), what, ": '", key, "' has shape ",
                  data.tensor(key).sizes(), " but 'input_ids' has ", ids.sizes());
  }
  const torch::Device device = model.device();
  TargetBatch b{ids.to(device, torch::kLong), data.tensor("attention_mask").to(device) != 0,
                data.tensor("loss_mask").to(device) != 0};
  VERL_CHECK_AS(DataError, b.attention_mask.any(1).all().item<bool>(), what,
                ": a row has no real token (attention_mask all 0)");
  torch::Tensor real_ids = b.input_ids.masked_select(b.attention_mask);
  const int64_t vocab = model.config().vocab_size;
  const auto [lo, hi] = torch::aminmax(real_ids);
  VERL_CHECK_AS(DataError, lo.item<int64_t>() >= 0 && hi.item<int64_t>() < vocab, what,
                ": token ids must lie in [0, vocab_size = ", vocab, "), got [", lo.item<int64_t>(), ", ",
                hi.item<int64_t>(), "]");
  return b;
}

TargetBatch take_rows(const TargetBatch& b, const std::vector<int64_t>& rows) {
  torch::Tensor index = torch::tensor(rows, torch::kLong).to(b.input_ids.device());
  return {b.input_ids.index_select(0, index), b.attention_mask.index_select(0, index),
          b.loss_mask.index_select(0, index)};
}

TargetBatch rank_share(const TargetBatch& b, int64_t rank, int64_t ranks, int64_t unit, const std::string& batch_key) {
  if (ranks == 1) return b;
  const int64_t units = b.input_ids.size(0) / unit;
  VERL_CHECK_AS(ConfigError, units % ranks == 0, "config key '", batch_key, "': a batch of ", units,
                unit == 1 ? " rows" : " pairs", " does not divide over the ", ranks,
                " data-parallel ranks (each trains on an equal share, as verl asserts)");
  const int64_t rows = units / ranks * unit;
  return {b.input_ids.narrow(0, rank * rows, rows), b.attention_mask.narrow(0, rank * rows, rows),
          b.loss_mask.narrow(0, rank * rows, rows)};
}

PackedTargets pack_targets(const TargetBatch& b) {
  PackedTargets p;
  p.ids = b.input_ids.masked_select(b.attention_mask);
  torch::Tensor lens = b.attention_mask.sum(1);  // int64, every row > 0 (check_target_batch)
  p.cu_seqlens = torch::cat({torch::zeros({1}, lens.options()), lens.cumsum(0)});
  torch::Tensor is_target = b.loss_mask.masked_select(b.attention_mask);
  // a row's first real token has nothing before it to predict it from
  is_target.index_fill_(0, p.cu_seqlens.slice(0, 0, -1), false);
  torch::Tensor targets = is_target.nonzero().squeeze(1);
  p.predicts = targets - 1;
  p.labels = p.ids.index_select(0, targets);
  torch::Tensor row_of_token = torch::repeat_interleave(torch::arange(lens.size(0), lens.options()), lens);
  p.target_rows = row_of_token.index_select(0, targets);
  return p;
}

std::optional<torch::Tensor> target_log_probs(model::CausalLM& model, const TargetBatch& b, const PackedTargets& p,
                                              bool remove_padding, bool forward_without_targets) {
  if (p.labels.numel() == 0 && !forward_without_targets) return std::nullopt;
  torch::Tensor hidden =
      remove_padding ? model.hidden_states_packed(p.ids, p.cu_seqlens)
                     : model.hidden_states(b.input_ids, b.attention_mask.to(torch::kLong)).index({b.attention_mask});
  // Only the positions that predict a target go through the (vocab-sized) head.
  torch::Tensor logits = model.apply_head(hidden.index_select(0, p.predicts));
  if (logits.scalar_type() != torch::kDouble) logits = logits.to(torch::kFloat);
  return algo::logprobs_from_logits(logits, p.labels);
}

}  // namespace verl::trainer::detail
