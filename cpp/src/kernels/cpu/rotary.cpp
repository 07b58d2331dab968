// verl::rotary on CPU (kernels/ops.h): RoPE as one fused loop with the ATen op sequence's roundings.
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>
#include <torch/torch.h>

namespace verl::kernels::cpu {
namespace {

// out = x * cos + rotate_half(x) * sin, element by element in x's dtype: each product and the sum
// are rounded to scalar_t as the separate ATen ops round them (reduced types compute in float and
// round after every op).
torch::Tensor rotary(const torch::Tensor& x, const torch::Tensor& cos_in, const torch::Tensor& sin_in) {
  const int64_t bs = x.size(0), heads = x.size(1), q = x.size(2), d = x.size(3), half = d / 2;
  // cos / sin are (bs, q, d) already (the caller checks: model::apply_rotary).
  const torch::Tensor cos = cos_in.contiguous(), sin = sin_in.contiguous();
  // Same memory layout as x (a transposed view stays transposed), as ATen's elementwise ops do.
  torch::Tensor out = at::empty_like(x, at::MemoryFormat::Preserve);
  const int64_t xs0 = x.stride(0), xs1 = x.stride(1), xs2 = x.stride(2), xs3 = x.stride(3);
  const int64_t os0 = out.stride(0), os1 = out.stride(1), os2 = out.stride(2), os3 = out.stride(3);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "apply_rotary", [&] {
    const scalar_t* xp = x.data_ptr<scalar_t>();
    const scalar_t* cp = cos.data_ptr<scalar_t>();
    const scalar_t* sp = sin.data_ptr<scalar_t>();
    scalar_t* op = out.data_ptr<scalar_t>();
    at::parallel_for(0, bs * q, 16, [&](int64_t begin, int64_t end) {
      for (int64_t bt = begin; bt < end; ++bt) {
        const int64_t b = bt / q, t = bt % q;
        const scalar_t* c = cp + bt * d;
        const scalar_t* s = sp + bt * d;
        for (int64_t h = 0; h < heads; ++h) {
          const scalar_t* xr = xp + b * xs0 + h * xs1 + t * xs2;
          scalar_t* orow = op + b * os0 + h * os1 + t * os2;
          for (int64_t j = 0; j < d; ++j) {
            const scalar_t xv = xr[j * xs3];
            const scalar_t rv = j < half ? static_cast<scalar_t>(-xr[(j + half) * xs3]) : xr[(j - half) * xs3];
            const scalar_t a = xv * c[j];
            const scalar_t r = rv * s[j];
            orow[j * os3] = a + r;
          }
        }
      }
    });
  });
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(verl, CPU, m) { m.impl("rotary", TORCH_FN(rotary)); }

}  // namespace verl::kernels::cpu
