// Resolves oneMKL's VML kernel dispatch once, on one thread, when libverl loads.
//
// LibTorch computes exp, log, sin, cos, sqrt, tanh, erf, ... of float and double tensors through oneMKL's VML in
// high-accuracy mode. VML picks each function's kernel lazily, on its first call, and concurrent first calls from
// torch's intra-op threads can run the low-accuracy kernel on one thread's chunk (pytorch/pytorch#188792, oneMKL
// 2024.2.x -- the version torch's wheels link; fixed from oneMKL 2025.0). Seen here as a rare wrong first packed
// forward of a test process under load: 6.7e-05 off in float64, only with several MKL threads (RoPE's cos and sin are
// computed in float32, over the whole batch of positions). One call of each function on one element runs on the
// calling thread alone and settles every dispatch before any parallel use, for the whole process.
#include <torch/torch.h>

namespace verl::detail {
namespace {

void warm_up_vml() {
  try {
    torch::NoGradGuard no_grad;
    for (const torch::Dtype dtype : {torch::kFloat, torch::kDouble}) {
      const torch::Tensor x = torch::full({1}, 0.5, torch::dtype(dtype));
      // The functions torch routes to VML (ATen/cpu/vml.h's IMPLEMENT_VML_MKL).
      for (const torch::Tensor& y : {x.acos(), x.asin(), x.atan(), x.cos(), x.erf(), x.erfc(), x.erfinv(), x.exp(),
                                     x.log(), x.log10(), x.log2(), x.sin(), x.sqrt(), x.tan(), x.tanh(), x.trunc()})
        (void)y;
    }
  } catch (...) {
    // A warm-up must never keep the library from loading; without it the race is only as likely as before.
  }
}

const bool vml_warmed_up = (warm_up_vml(), true);

}  // namespace
}  // namespace verl::detail
