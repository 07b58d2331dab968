// verl::trainer::FlopsCounter against hand-computed verl formulas (verl 0.9.1 _estimate_qwen2_flops),
// the MFU arithmetic of TrainingWorker._postprocess_output, the measured device peak, and actor/mfu
// from a real update.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "verl/core/error.h"
#include "verl/model/model_config.h"
#include "verl/trainer/flops_counter.h"

using namespace verl;
using namespace verl::trainer;

namespace {

model::ModelConfig small_config(const std::string& type, int64_t hidden, int64_t intermediate, int64_t layers,
                                int64_t heads, int64_t kv_heads, int64_t head_dim, int64_t vocab) {
  model::ModelConfig c;
  c.model_type = type;
  c.hidden_size = hidden;
  c.intermediate_size = intermediate;
  c.num_hidden_layers = layers;
  c.num_attention_heads = heads;
  c.num_key_value_heads = kv_heads;
  c.head_dim = head_dim;
  c.vocab_size = vocab;
  return c;
}

}  // namespace

TEST_CASE("flops counter: qwen2 GQA config matches verl's formula by hand") {
  // hidden 32, intermediate 48, 2 layers, 4 heads of 8, 2 kv heads, vocab 32:
  //   mlp 32*48*3 = 4608; attention linears 32*(32+16+16+32) = 3072; embedding + lm head 2*32*32 = 2048
  //   dense = (4608 + 3072) * 2 + 2048 = 17408
  // seqlens {3, 5}: 6*17408*8 + 6*(9+25)*8*4*2 = 835584 + 13056 = 848640
  FlopsCounter counter(small_config("qwen2", 32, 48, 2, 4, 2, 8, 32));
  CHECK(counter.dense_params() == 17408.0);
  CHECK(counter.estimate_flops({3, 5}) == 848640.0);
  CHECK(counter.estimate_flops({}) == 0.0);
  // Linear in tokens, quadratic in each sequence's length: one sequence of 8 costs more than 3 + 5.
  CHECK(counter.estimate_flops({8}) == 6 * 17408.0 * 8 + 6 * 64.0 * 64);
}

TEST_CASE("flops counter: qwen3 explicit head_dim wider than hidden / heads") {
  // hidden 32, 4 heads of 16 (q 64), 2 kv heads (k = v = 32), intermediate 48, 1 layer, vocab 10:
  //   mlp 4608; attention linears 32*(64+32+32+64) = 6144; embedding + lm head 640; dense 11392
  // seqlens {4}: 6*11392*4 + 6*16*16*4*1 = 273408 + 6144 = 279552
  FlopsCounter counter(small_config("qwen3", 32, 48, 1, 4, 2, 16, 10));
  CHECK(counter.dense_params() == 11392.0);
  CHECK(counter.estimate_flops({4}) == 279552.0);
}

TEST_CASE("flops counter: a 0.5B-class config gives the textbook ~6 N per token") {
  // Qwen2.5-0.5B: hidden 896, intermediate 4864, 24 layers, 14 heads of 64, 2 kv heads, vocab 151936.
  FlopsCounter counter(small_config("qwen2", 896, 4864, 24, 14, 2, 64, 151936));
  // (896*4864*3 + 896*(896+128+128+896)) * 24 + 2*151936*896 = 357826560 + 272269312
  CHECK(counter.dense_params() == 630095872.0);
  CHECK(counter.estimate_flops({1}) == Approx(6 * 630095872.0 + 6 * 64.0 * 14 * 24));
}

TEST_CASE("flops counter: bad input is a typed error") {
  FlopsCounter counter(small_config("qwen2", 32, 48, 2, 4, 2, 8, 32));
  CHECK_THROWS_AS(counter.estimate_flops({3, -1}), InvalidArgument);
  CHECK_THROWS_AS(FlopsCounter(small_config("qwen2", 0, 48, 2, 4, 2, 8, 32)), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 0.0, 1e12), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 1.0, 0.0), InvalidArgument);
  CHECK_THROWS_AS(model_flops_utilization(1e9, 1.0, 1e12, 0), InvalidArgument);
}

TEST_CASE("mfu: flops / time / peak / world size, a third for forward-only passes") {
  CHECK(model_flops_utilization(1e12, 2.0, 1e12) == Approx(0.5));
  CHECK(model_flops_utilization(1e12, 2.0, 1e12, 2) == Approx(0.25));
  CHECK(model_flops_utilization(3e12, 1.0, 4e12, 1, /*forward_only=*/true) == Approx(0.25));
}

TEST_CASE("device peak: measured once on the CPU, plausible and cached") {
  const double peak = device_peak_flops(torch::kCPU, torch::kFloat32);
  CHECK(std::isfinite(peak));
  // Any CPU this runs on does between 0.1 GFLOP/s and 100 TFLOP/s of fp32 matmul.
  CHECK(peak > 1e8);
  CHECK(peak < 1e14);
  // The cached value, not a new measurement: a second timing would differ in the last bits. (No timed
  // assertions here: ctest runs files in parallel on a shared machine.)
  CHECK(device_peak_flops(torch::kCPU, torch::kFloat32) == peak);
}

TEST_CASE("device peak: measured on a busy CPU, still above what the threads reach on an idle one") {
  // Busy loops on every core while the float64 peak is measured (the first float64 measurement in this process;
  // had one been made already, it was made with less load, which only makes the check below easier).
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  for (unsigned i = 0; i < cores; ++i) {
    hogs.emplace_back([&stop] {
      volatile uint64_t spin = 0;
      while (!stop.load(std::memory_order_relaxed)) spin = spin + 1;
    });
  }
  const double peak = device_peak_flops(torch::kCPU, torch::kFloat64);
  stop = true;
  for (auto& hog : hogs) hog.join();
  // The throughput the intra-op threads reach together without the hogs: the best of several wall-clock samples.
  // A peak timed by the wall clock under the hogs came out at about half of it (MFU above 1).
  torch::NoGradGuard no_grad;
  const int64_t n = 512;
  torch::Tensor a = torch::randn({n, n}, torch::kFloat64), b = torch::randn({n, n}, torch::kFloat64);
  torch::Tensor c = torch::mm(a, b);
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 10; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    c = torch::mm(a, b);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double reached = 2.0 * n * n * n / best;
  CHECK(reached <= peak);
  CHECK(device_peak_flops(torch::kCPU, torch::kFloat64) == peak);
}

TEST_CASE("device peak: a dtype with a slow CPU kernel still gets a finite peak") {
  // fp16 matmul on CPUs without native support runs at well under 1 GFLOP/s: the probe shrinks the
  // measured mm instead of spending seconds on 1024^3 (this test would take that long otherwise).
  const double peak = device_peak_flops(torch::kCPU, torch::kFloat16);
  CHECK(std::isfinite(peak));
  CHECK(peak > 0);
  CHECK(device_peak_flops(torch::kCPU, torch::kFloat16) == peak);
}
