// verl._C.algo: the RL math of libverl (verl/algo/*.h). python/verl/utils/torch_functional.py and
// python/verl/trainer/ppo/core_algos.py give it verl's Python names and signatures.
#include <optional>
#include <variant>

#include "bindings.h"
#include "verl/algo/functional.h"

namespace verl::bindings {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;

// verl's `axis` argument: None, an int or a tuple of ints.
std::optional<std::vector<int64_t>> axis_arg(const py::object& axis) {
  if (axis.is_none()) return std::nullopt;
  if (py::isinstance<py::int_>(axis)) return std::vector<int64_t>{axis.cast<int64_t>()};
  return axis.cast<std::vector<int64_t>>();
}

}  // namespace

void register_algo(py::module_& m) {
  py::module_ algo = m.def_submodule("algo", "RL math: masked statistics, advantages, losses, KL.");
  algo.def("masked_sum",
           [](const torch::Tensor& values, const torch::Tensor& mask, const py::object& axis) {
             auto dims = axis_arg(axis);
             py::gil_scoped_release release;
             return algo::masked_sum(values, mask, dims);
           },
           py::arg("values"), py::arg("mask"), py::arg("axis") = py::none());
  algo.def("masked_mean",
           [](const torch::Tensor& values, const torch::Tensor& mask, const py::object& axis) {
             auto dims = axis_arg(axis);
             py::gil_scoped_release release;
             return algo::masked_mean(values, mask, dims);
           },
           py::arg("values"), py::arg("mask"), py::arg("axis") = py::none());
  algo.def("masked_var", &algo::masked_var, py::arg("values"), py::arg("mask"), py::arg("unbiased") = true,
           Release());
  algo.def("masked_whiten", &algo::masked_whiten, py::arg("values"), py::arg("mask"), py::arg("shift_mean") = true,
           Release());
  algo.def("get_response_mask",
           [](const torch::Tensor& response_id, const std::vector<int64_t>& eos_token) {
             return algo::get_response_mask(response_id, eos_token);
           },
           py::arg("response_id"), py::arg("eos_token"), Release());
  algo.def("entropy_from_logits", &algo::entropy_from_logits, py::arg("logits"), py::arg("chunk_size") = 1024,
           Release());
  algo.def("logprobs_from_logits", &algo::logprobs_from_logits, py::arg("logits"), py::arg("labels"),
           py::arg("chunk_size") = 1024, Release());
}

}  // namespace verl::bindings
