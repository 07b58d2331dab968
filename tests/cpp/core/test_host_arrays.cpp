// detail::HostArrays: int64 and float64 host arrays, empty ones included, come back on the device with their values,
// dtypes and lengths, in the order added, from one buffer.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include <vector>

#include "core/host_arrays.h"

namespace {

void check_round_trip(const torch::Device& device) {
  const std::vector<int64_t> longs = {0, -1, int64_t{1} << 40, 7};
  const std::vector<double> doubles = {0.5, -2.25, 1e-300, 0.1};
  const std::vector<int64_t> none;
  verl::detail::HostArrays arrays;
  CHECK(arrays.add(longs) == 0);
  CHECK(arrays.add(none) == 1);
  CHECK(arrays.add(doubles) == 2);
  CHECK(arrays.add(std::vector<double>{3.0}) == 3);
  const std::vector<torch::Tensor> t = arrays.to(device);
  REQUIRE(t.size() == 4);
  for (const torch::Tensor& x : t) CHECK(x.device() == device);
  CHECK(t[0].scalar_type() == torch::kLong);
  CHECK(t[1].scalar_type() == torch::kLong);
  CHECK(t[2].scalar_type() == torch::kDouble);
  CHECK(t[1].numel() == 0);
  CHECK(t[0].cpu().equal(torch::tensor(longs)));
  CHECK(t[2].cpu().equal(torch::tensor(doubles, torch::kDouble)));  // bit for bit: 0.1 and 1e-300 included
  CHECK(t[3].cpu().equal(torch::tensor({3.0}, torch::kDouble)));
  // One buffer: the arrays lie end to end in one storage.
  CHECK(t[2].data_ptr<double>() == reinterpret_cast<double*>(t[0].data_ptr<int64_t>() + 4));
}

}  // namespace

TEST_CASE("HostArrays: arrays reach the device in one buffer with their values and dtypes", "[core]") {
  check_round_trip(torch::kCPU);
  verl::detail::HostArrays empty;
  CHECK(empty.to(torch::kCPU).empty());
}

TEST_CASE("HostArrays on CUDA", "[core][cuda]") {
  if (!torch::cuda::is_available()) {
    WARN("CUDA not available; skipped");
    return;
  }
  check_round_trip(torch::Device(torch::kCUDA, 0));
}
