// verl::model::apply_rotary: the fused CPU loop is bit-identical to the ATen op sequence for every
// dtype and layout, and the autograd path still yields gradients.
#include <catch2/catch.hpp>
#include <torch/torch.h>

#include "kernels/aten/compositions.h"
#include "verl/model/rope.h"

using verl::model::apply_rotary;
using verl::kernels::aten::rotary;  // the op sequence (autograd-capable)

namespace {

std::pair<torch::Tensor, torch::Tensor> tables(int64_t bs, int64_t q, int64_t d, torch::Dtype dtype) {
  torch::Tensor pos = torch::randint(0, 3000, {bs, q, 1}).to(torch::kFloat);
  torch::Tensor inv = 1.0 / torch::pow(10000.0, torch::arange(0, d, 2).to(torch::kFloat) / d);
  torch::Tensor emb = torch::cat({pos * inv, pos * inv}, -1);
  return {emb.cos().to(dtype), emb.sin().to(dtype)};
}

}  // namespace

TEST_CASE("rope: fused CPU loop equals x * cos + rotate_half(x) * sin bit for bit", "[model]") {
  torch::manual_seed(4);
  torch::NoGradGuard no_grad;
  for (auto dtype : {torch::kFloat, torch::kBFloat16, torch::kHalf, torch::kDouble}) {
    for (int64_t d : {2, 8, 64, 80}) {
      const int64_t bs = 3, heads = 5, q = 7;
      auto [cos, sin] = tables(bs, q, d, dtype);
      // As the model hands it over: a transposed view of (bs, q, heads, d); and a contiguous one.
      torch::Tensor xt = (torch::randn({bs, q, heads, d}) * 4).to(dtype).transpose(1, 2);
      torch::Tensor xc = xt.contiguous();
      for (const torch::Tensor& x : {xt, xc}) {
        torch::Tensor got = apply_rotary(x, cos, sin), want = rotary(x, cos, sin);
        INFO("dtype " << dtype << " d " << d << " contiguous " << x.is_contiguous());
        CHECK(got.scalar_type() == dtype);
        CHECK(got.sizes() == want.sizes());
        CHECK(torch::equal(got, want));
        CHECK(got.strides() == want.strides());
      }
    }
  }
}

TEST_CASE("rope: with gradients the op sequence runs and backpropagates", "[model]") {
  torch::manual_seed(5);
  auto [cos, sin] = tables(2, 3, 8, torch::kFloat);
  torch::Tensor x = torch::randn({2, 4, 3, 8}, torch::requires_grad());
  torch::Tensor y = apply_rotary(x, cos, sin);
  REQUIRE(y.requires_grad());
  y.pow(2).sum().backward();
  // RoPE rotates pairs (j, j + d/2) by an angle, so it preserves the norm: d|y|^2/dx = 2x.
  CHECK(torch::allclose(x.grad(), 2 * x.detach(), 1e-5, 1e-5));
}
