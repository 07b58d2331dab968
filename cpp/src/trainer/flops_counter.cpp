// verl's FLOP estimate and the measured device peak (see verl/trainer/flops_counter.h).
#include "verl/trainer/flops_counter.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include <ATen/DeviceAccelerator.h>

#include "verl/core/error.h"

namespace verl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds one mm of two (n, n) matrices takes on `device` (after a warm-up: allocations, kernel
// selection, thread pool start): the best of at least `min_samples` samples, more while under budget.
double timed_mm_seconds(const torch::Device& device, torch::ScalarType dtype, int64_t n, int mms_per_sample,
                        int min_samples, double budget_seconds) {
  auto options = torch::TensorOptions().device(device).dtype(dtype);
  torch::Tensor a = torch::randn({n, n}, options);
  torch::Tensor b = torch::randn({n, n}, options);
  torch::Tensor c = torch::mm(a, b);
  synchronize_device(device);
  double best_seconds = std::numeric_limits<double>::infinity();
  const auto start = Clock::now();
  // The best sample is the peak; the others absorb interference from other processes.
  for (int sample = 0; sample < 20; ++sample) {
    const auto t0 = Clock::now();
    for (int i = 0; i < mms_per_sample; ++i) c = torch::mm(a, b);
    synchronize_device(device);
    best_seconds = std::min(best_seconds, std::chrono::duration<double>(Clock::now() - t0).count() / mms_per_sample);
    if (sample + 1 >= min_samples && std::chrono::duration<double>(Clock::now() - start).count() > budget_seconds) break;
  }
  return best_seconds;
}

double measure_peak_flops(const torch::Device& device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  int64_t n = 4096;  // accelerators: large enough for full tensor-core occupancy
  int mms_per_sample = 10;  // amortises launch and synchronisation
  if (device.is_cpu()) {
    // Up to 1024 (the BLAS runs blocked at full speed), smaller where the dtype's kernel is slow (fp16
    // matmul on CPUs without native support runs at well under 1 GFLOP/s): a 256 probe sizes the
    // measured mm to ~20 ms, so measuring takes a fraction of a second for every dtype.
    const double probe = timed_mm_seconds(device, dtype, 256, 1, 1, 0.0);
    const double probe_rate = 2.0 * 256 * 256 * 256 / probe;
    const double target_n = std::cbrt(probe_rate * 0.02 / 2.0);
    n = std::clamp<int64_t>(static_cast<int64_t>(target_n) / 64 * 64, 128, 1024);
    mms_per_sample = 1;
  }
  // At least 3 samples, then until ~0.2 s have passed (at most 20).
  const double best_seconds = timed_mm_seconds(device, dtype, n, mms_per_sample, 3, 0.2);
  VERL_CHECK(best_seconds > 0, "device_peak_flops: the matmul on ", device.str(), " took no measurable time");
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) / best_seconds;
}

}  // namespace

FlopsCounter::FlopsCounter(const model::ModelConfig& config) {
  VERL_CHECK(config.hidden_size > 0 && config.num_hidden_layers > 0 && config.num_attention_heads > 0 &&
                 config.vocab_size > 0 && config.intermediate_size > 0,
             "FlopsCounter: the model config has non-positive sizes (hidden_size=", config.hidden_size,
             ", num_hidden_layers=", config.num_hidden_layers, ")");
  const double hidden = static_cast<double>(config.hidden_size);
  const double head_dim =
      static_cast<double>(config.head_dim > 0 ? config.head_dim : config.hidden_size / config.num_attention_heads);
  const double heads = static_cast<double>(config.num_attention_heads);
  const double kv_heads =
      static_cast<double>(config.num_key_value_heads > 0 ? config.num_key_value_heads : config.num_attention_heads);
  const double layers = static_cast<double>(config.num_hidden_layers);
  const double q_size = heads * head_dim;
  const double kv_size = kv_heads * head_dim;
  // SwiGLU MLP: gate, up and down projections.
  const double mlp = hidden * static_cast<double>(config.intermediate_size) * 3;
  // q, k, v and the output projection (verl writes the last as num_attention_heads * head_dim).
  const double attn_linear = hidden * (q_size + 2 * kv_size + q_size);
  const double embedding_and_lm_head = static_cast<double>(config.vocab_size) * hidden * 2;
  dense_params_ = (mlp + attn_linear) * layers + embedding_and_lm_head;
  attention_factor_ = head_dim * heads * layers;
}

double FlopsCounter::estimate_flops(const std::vector<int64_t>& batch_seqlens) const {
  double tokens = 0;
  double seqlen_square_sum = 0;
  for (int64_t s : batch_seqlens) {
    VERL_CHECK(s >= 0, "FlopsCounter::estimate_flops: negative sequence length ", s);
    tokens += static_cast<double>(s);
    seqlen_square_sum += static_cast<double>(s) * static_cast<double>(s);
  }
  // Forward (2 FLOPs per multiply-add) + backward (twice the forward) = 6 per parameter and token; the
  // attention scores and the weighted sum of values are verl's 6 * sum(s^2) * head_dim * heads per layer.
  return 6 * dense_params_ * tokens + 6 * seqlen_square_sum * attention_factor_;
}

void synchronize_device(const torch::Device& device) {
  if (device.is_cpu()) return;
  at::accelerator::synchronizeDevice(device.has_index() ? device.index() : at::accelerator::getDeviceIndex());
}

double device_peak_flops(const torch::Device& device, torch::ScalarType dtype) {
  static std::mutex mutex;
  static std::map<std::tuple<std::string, int, int>, double> cache;
  const auto key = std::make_tuple(device.str(), static_cast<int>(dtype), at::get_num_threads());
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  const double peak = measure_peak_flops(device, dtype);
  cache.emplace(key, peak);
  return peak;
}

double model_flops_utilization(double flops, double delta_time, double peak_flops, int64_t world_size,
                               bool forward_only) {
  VERL_CHECK(delta_time > 0, "model_flops_utilization: delta_time must be positive, got ", delta_time);
  VERL_CHECK(peak_flops > 0, "model_flops_utilization: peak_flops must be positive, got ", peak_flops);
  VERL_CHECK(world_size >= 1, "model_flops_utilization: world_size must be >= 1, got ", world_size);
  double mfu = flops / delta_time / peak_flops / static_cast<double>(world_size);
  if (forward_only) mfu /= 3.0;
  return mfu;
}

}  // namespace verl::trainer
