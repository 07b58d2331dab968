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
#include <vector>

#include <time.h>

#include <ATen/DeviceAccelerator.h>
#include <ATen/Parallel.h>

#include "verl/core/error.h"

namespace verl::trainer {
namespace {

using Clock = std::chrono::steady_clock;

// Seconds of `clock` since an arbitrary start.
double clock_seconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Seconds one mm of two (n, n) matrices takes on `device` (after a warm-up: allocations, kernel selection, thread
// pool start), read from `clock`: the best of at least `min_samples` samples, more while under `budget_seconds` of
// wall time (at most 20). The best sample is the peak; the others absorb interference.
double timed_mm_seconds(const torch::Device& device, torch::ScalarType dtype, int64_t n, int mms_per_sample,
                        int min_samples, double budget_seconds, clockid_t clock) {
  auto options = torch::TensorOptions().device(device).dtype(dtype);
  torch::Tensor a = torch::randn({n, n}, options);
  torch::Tensor b = torch::randn({n, n}, options);
  torch::Tensor c = torch::mm(a, b);
  synchronize_device(device);
  double best_seconds = std::numeric_limits<double>::infinity();
  const auto start = Clock::now();
  for (int sample = 0; sample < 20; ++sample) {
    const double t0 = clock_seconds(clock);
    for (int i = 0; i < mms_per_sample; ++i) c = torch::mm(a, b);
    synchronize_device(device);
    best_seconds = std::min(best_seconds, (clock_seconds(clock) - t0) / mms_per_sample);
    if (sample + 1 >= min_samples && std::chrono::duration<double>(Clock::now() - start).count() > budget_seconds) break;
  }
  return best_seconds;
}

double mm_flops(int64_t n) { return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n); }

// One CPU core's matmul rate: a single-threaded mm (the caller runs it inside at::parallel_for, where ATen and the
// BLAS do not fan out again), timed by this thread's CPU clock. Time the thread spends descheduled while other
// processes run does not count, so a busy machine does not lower the rate -- a wall-clock peak did, and MFU then
// read above 1. Up to n = 1024 (the BLAS runs blocked at full speed), smaller where the dtype's kernel is slow (fp16
// matmul on CPUs without native support runs at well under 1 GFLOP/s): a 256 probe sizes the measured mm to ~20 ms.
double cpu_core_mm_flops(torch::ScalarType dtype) {
  const double probe = timed_mm_seconds(torch::kCPU, dtype, 256, 1, 1, 0.0, CLOCK_THREAD_CPUTIME_ID);
  const double target_n = std::cbrt(mm_flops(256) / probe * 0.02 / 2.0);
  const int64_t n = std::clamp<int64_t>(static_cast<int64_t>(target_n) / 64 * 64, 128, 1024);
  // At least 3 samples, then until ~0.2 s have passed.
  const double best_seconds = timed_mm_seconds(torch::kCPU, dtype, n, 1, 3, 0.2, CLOCK_THREAD_CPUTIME_ID);
  VERL_CHECK(best_seconds > 0, "device_peak_flops: the matmul on the CPU took no measurable CPU time");
  return mm_flops(n) / best_seconds;
}

double measure_peak_flops(const torch::Device& device, torch::ScalarType dtype) {
  torch::NoGradGuard no_grad;
  if (device.is_cpu()) {
    // Every intra-op thread measures its core at once (all cores busy, as in training: the same clock speeds); the
    // peak is the fastest core's rate times the thread count, an upper bound on what the threads reach together.
    const int threads = at::get_num_threads();
    std::vector<double> rates(static_cast<size_t>(threads), 0.0);
    at::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      torch::NoGradGuard thread_no_grad;
      for (int64_t i = begin; i < end; ++i) rates[static_cast<size_t>(i)] = cpu_core_mm_flops(dtype);
    });
    return *std::max_element(rates.begin(), rates.end()) * threads;
  }
  // Accelerators: 4096 (large enough for full tensor-core occupancy), 10 mms per sample (amortises launch and
  // synchronisation), timed by the wall clock around a device synchronisation.
  const int64_t n = 4096;
  const double best_seconds = timed_mm_seconds(device, dtype, n, 10, 3, 0.2, CLOCK_MONOTONIC);
  VERL_CHECK(best_seconds > 0, "device_peak_flops: the matmul on ", device.str(), " took no measurable time");
  return mm_flops(n) / best_seconds;
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
