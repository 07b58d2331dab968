// Pieces the actor and critic workers share (private): metric aggregation as verl's
// TrainingWorker / reduce_metrics, row selection of a tensor map, micro-batch planning.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "verl/core/device.h"
#include "verl/core/reduce_metric.h"
#include "verl/data/data_proto.h"
#include "verl/model/flops_counter.h"
#include "verl/model/transformer.h"
#include "verl/workers/micro_batch.h"

namespace verl::workers::detail {

// verl 0.9.1's metric flow: inside a mini-batch every micro-batch contributes one value per key;
// verl.utils.metric.Metric values are aggregated per mini-batch (MEAN or SUM over micro-batches),
// plain floats are kept flat; the trainer's reduce_metrics then takes the mean over everything
// collected (max / min when the key says so).
class MetricsCollector {
 public:
  enum class Agg { kMean, kSum };
  void add_metric(const std::string& key, double value, Agg agg) {
    auto& slot = current_[key];
    slot.first = agg;
    slot.second.push_back(value);
  }
  void add_plain(const std::string& key, double value) { lists_[key].push_back(value); }
  void end_mini_batch() {
    for (auto& [key, slot] : current_) {
      double s = 0;
      for (double v : slot.second) s += v;
      lists_[key].push_back(slot.first == Agg::kSum ? s : s / static_cast<double>(slot.second.size()));
    }
    current_.clear();
  }
  std::map<std::string, double> reduce() const {
    std::map<std::string, double> out;
    for (const auto& [key, values] : lists_) {
      if (!values.empty()) out[key] = reduce_metric(key, values);
    }
    return out;
  }

 private:
  std::map<std::string, std::pair<Agg, std::vector<double>>> current_;
  std::map<std::string, std::vector<double>> lists_;
};

using TensorMap = std::map<std::string, torch::Tensor>;

// The named tensors of `data` that exist, moved to `device`.
inline TensorMap gather_tensors(const DataProto& data, const std::vector<std::string>& keys,
                                const torch::Device& device) {
  TensorMap out;
  for (const auto& k : keys) {
    if (data.has_tensor(k)) out[k] = data.tensor(k).to(device);
  }
  return out;
}

// Rows `rows` of every tensor (rows are indices into the map's batch dimension).
inline TensorMap take_rows(const TensorMap& tensors, const std::vector<int64_t>& rows, const torch::Device& device) {
  torch::Tensor index = torch::tensor(rows, torch::kLong).to(device);
  TensorMap out;
  for (const auto& [k, t] : tensors) out[k] = t.index_select(0, index);
  return out;
}

inline torch::Tensor get(const TensorMap& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? torch::Tensor() : it->second;
}

// Valid tokens per row (the token budget of dynamic batching), on the CPU.
inline std::vector<int64_t> row_token_counts(const torch::Tensor& attention_mask) {
  torch::Tensor counts = attention_mask.to(torch::kLong).sum(1).cpu().contiguous();
  return std::vector<int64_t>(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + counts.numel());
}

// The entries `rows` of `values` (a mini-batch's share of per-row counts read once for the whole batch).
inline std::vector<int64_t> select_rows(const std::vector<int64_t>& values, const std::vector<int64_t>& rows) {
  std::vector<int64_t> out;
  out.reserve(rows.size());
  for (int64_t r : rows) out.push_back(values[static_cast<size_t>(r)]);
  return out;
}

// verl's per-call MFU of a worker's model (TrainingWorker._postprocess_output, one rank): the FLOPs of
// rows of `seqlens` valid tokens (row_token_counts) over the time since `start`, against the device's
// measured peak in the model's dtype; forward_only for log-prob / value passes. Waits for the model's
// device first, so queued kernels count.
inline double worker_mfu(const model::CausalLM& model, const std::vector<int64_t>& seqlens,
                         std::chrono::steady_clock::time_point start, bool forward_only) {
  synchronize_device(model.device());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double flops = model::FlopsCounter(model.config()).estimate_flops(seqlens);
  return model::model_flops_utilization(flops, seconds, device_peak_flops(model.device(), model.dtype()),
                                        /*world_size=*/1, forward_only);
}

}  // namespace verl::workers::detail
