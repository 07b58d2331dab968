// The measured device peak and device synchronisation (see verl/core/device.h).
#include "verl/core/device.h"

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

namespace verl {
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
    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (sample + 1 >= min_samples && elapsed > budget_seconds) break;
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

}  // namespace verl
