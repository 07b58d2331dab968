// verl::rms_norm as ATen ops, any device (kernels/ops.h): model::rms_norm_ops.
#include <torch/library.h>

#include "verl/model/transformer.h"

namespace verl::kernels::aten {

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("rms_norm", TORCH_FN(model::rms_norm_ops)); }

}  // namespace verl::kernels::aten
