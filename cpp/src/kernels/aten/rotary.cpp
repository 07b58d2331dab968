// verl::rotary as ATen ops, any device (kernels/ops.h): model::apply_rotary_ops.
#include <torch/library.h>

#include "verl/model/rope.h"

namespace verl::kernels::aten {

TORCH_LIBRARY_IMPL(verl, CompositeExplicitAutograd, m) { m.impl("rotary", TORCH_FN(model::apply_rotary_ops)); }

}  // namespace verl::kernels::aten
