// verl._C.dist: the communicator of a multi-process job (verl/dist/communicator.h), built from the process group
// torch.distributed made (init_process_group under torchrun): Gloo on CPU, NCCL on CUDA.
#include "bindings.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/conduit/pybind11_conduit_v1.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "verl/core/error.h"
#include "verl/dist/communicator.h"

namespace verl::bindings {
namespace {

// torch's ProcessGroup is a pybind11 class of torch._C; pybind11's cross-module conduit hands over the C++ object
// (even where the two modules' pybind11 internals differ). The intrusive pointer keeps it alive with us.
c10::intrusive_ptr<c10d::ProcessGroup> process_group_of(const py::object& group) {
  auto* raw = pybind11_conduit_v1::get_type_pointer_ephemeral<c10d::ProcessGroup>(group.ptr());
  if (raw == nullptr) {
    throw py::type_error("expected a torch.distributed ProcessGroup (e.g. torch.distributed.group.WORLD), got " +
                         py::str(py::type::of(group)).cast<std::string>());
  }
  return c10::intrusive_ptr<c10d::ProcessGroup>::reclaim_copy(raw);
}

}  // namespace

void register_dist(py::module_& m) {
  py::module_ d = m.def_submodule("dist", "Multi-process jobs: the communicator of the ranks (verl/dist/).");
  using dist::Communicator;
  py::class_<Communicator, std::shared_ptr<Communicator>>(
      d, "Communicator", "Blocking collectives with a timeout over a torch.distributed process group.")
      .def(py::init([](const py::object& group, const std::string& device, double timeout_s) {
             VERL_CHECK(timeout_s > 0, "Communicator: timeout_s must be positive, got ", timeout_s);
             const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0));
             return std::make_shared<Communicator>(process_group_of(group), torch::Device(device), timeout);
           }),
           py::arg("group"), py::arg("device") = "cpu", py::arg("timeout_s") = 600.0)
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("world_size", &Communicator::world_size)
      .def_property_readonly("backend", &Communicator::backend)
      .def_property_readonly("device", [](const Communicator& c) { return c.device().str(); })
      .def_property_readonly("timeout_s", [](const Communicator& c) { return c.timeout().count() / 1000.0; })
      .def("all_reduce_sum", py::overload_cast<double>(&Communicator::all_reduce_sum), py::arg("value"),
           py::call_guard<py::gil_scoped_release>(), "The sum of `value` over the ranks.")
      .def(
          "broadcast_bytes",
          [](Communicator& c, const py::object& data, int64_t root) {
            std::vector<char> bytes;
            if (c.rank() == root) {
              const std::string text = py::bytes(data).cast<std::string>();
              bytes.assign(text.begin(), text.end());
            }
            std::vector<char> out;
            {
              py::gil_scoped_release release;
              out = c.broadcast_bytes(bytes, root);
            }
            return py::bytes(out.data(), out.size());
          },
          py::arg("data"), py::arg("root") = 0,
          "root's `data` (bytes; ignored on the other ranks) on every rank. The buffers are C++ tensors: a Gloo "
          "thread that drops them never needs the GIL (tensors made in Python do, which can abort a process that is "
          "exiting).")
      .def("barrier", &Communicator::barrier, py::call_guard<py::gil_scoped_release>())
      // The tensor collectives, as the training code calls them (any dtype: see verl/dist/communicator.h).
      .def("all_gather_flat", &Communicator::all_gather_flat, py::arg("shard"),
           py::call_guard<py::gil_scoped_release>(), "Every rank's 1-D `shard` concatenated in rank order.")
      .def("reduce_scatter_sum", &Communicator::reduce_scatter_sum, py::arg("flat"),
           py::call_guard<py::gil_scoped_release>(), "This rank's slice of the sum over the ranks of 1-D `flat`.")
      .def(
          "all_reduce_sum_", [](Communicator& c, torch::Tensor& t) { c.all_reduce_sum_(t); }, py::arg("tensor"),
          py::call_guard<py::gil_scoped_release>(), "`tensor` summed over the ranks, in place.")
      .def(
          "broadcast_", [](Communicator& c, torch::Tensor& t, int64_t root) { c.broadcast_(t, root); },
          py::arg("tensor"), py::arg("root") = 0, py::call_guard<py::gil_scoped_release>(),
          "root's values in `tensor` on every rank, in place.");
}

}  // namespace verl::bindings
