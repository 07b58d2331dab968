// verl._C.dist: the communicator of a multi-process job (verl/dist/communicator.h), built from the process group
// torch.distributed made (init_process_group under torchrun): Gloo on CPU, NCCL on CUDA; and the job's device mesh
// (verl/dist/device_mesh.h): the layout planned from the config, whose groups Python creates.
#include "bindings.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/conduit/pybind11_conduit_v1.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "verl/core/error.h"
#include "verl/dist/communicator.h"
#include "verl/dist/device_mesh.h"

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

  py::class_<dist::MeshPlan>(d, "MeshPlan", "The job's layout from its config (verl/dist/device_mesh.h).")
      .def_readonly("trainer_ranks", &dist::MeshPlan::trainer_ranks)
      .def_readonly("pool_ranks", &dist::MeshPlan::pool_ranks)
      .def_readonly("rollout_tp", &dist::MeshPlan::rollout_tp)
      .def_readonly("actor_fsdp", &dist::MeshPlan::actor_fsdp)
      .def_readonly("critic_fsdp", &dist::MeshPlan::critic_fsdp)
      .def_property_readonly("world_size", &dist::MeshPlan::world_size)
      .def_property_readonly(
          "groups",
          [](const dist::MeshPlan& plan) {
            py::list out;
            for (const dist::RankGroups& g : plan.groups) out.append(py::make_tuple(g.name, g.groups));
            return out;
          },
          "[(name, [[rank, ...], ...]), ...]: every group to create, on every rank, in this order.");
  d.def(
      "plan_mesh",
      [](const Config& config, const std::string& roles, std::optional<int64_t> world_size, bool by_launcher) {
        VERL_CHECK_AS(InvalidArgument, roles == "ppo" || roles == "engine", "plan_mesh: roles must be 'ppo' or "
                      "'engine', got '", roles, "'");
        std::optional<dist::Launch> launch;
        if (world_size) launch = dist::Launch{*world_size, by_launcher};
        return dist::plan_mesh(config, roles == "ppo" ? dist::MeshRoles::kPPO : dist::MeshRoles::kEngine, launch);
      },
      py::arg("config"), py::arg("roles") = "ppo", py::arg("world_size") = py::none(), py::arg("by_launcher") = true,
      "The layout of `config` ('ppo': the PPO trainer's roles; 'engine': the SFT / DPO trainers' one engine); with "
      "world_size, ConfigError unless that many ranks were launched.");
  py::class_<dist::DeviceMesh>(d, "DeviceMesh", "This rank's process groups of a MeshPlan.")
      .def(py::init([](std::shared_ptr<Communicator> trainer, std::shared_ptr<Communicator> rollout_pool,
                       std::shared_ptr<Communicator> tensor_parallel,
                       std::shared_ptr<Communicator> tensor_parallel_slice, std::shared_ptr<Communicator> actor_shard,
                       std::shared_ptr<Communicator> actor_replicas, std::shared_ptr<Communicator> critic_shard,
                       std::shared_ptr<Communicator> critic_replicas) {
             return dist::DeviceMesh{std::move(trainer),       std::move(rollout_pool),
                                     std::move(tensor_parallel), std::move(tensor_parallel_slice),
                                     {std::move(actor_shard), std::move(actor_replicas)},
                                     {std::move(critic_shard), std::move(critic_replicas)}};
           }),
           py::kw_only(), py::arg("trainer") = nullptr, py::arg("rollout_pool") = nullptr,
           py::arg("tensor_parallel") = nullptr, py::arg("tensor_parallel_slice") = nullptr,
           py::arg("actor_shard") = nullptr, py::arg("actor_replicas") = nullptr, py::arg("critic_shard") = nullptr,
           py::arg("critic_replicas") = nullptr)
      .def_readonly("trainer", &dist::DeviceMesh::trainer)
      .def_readonly("rollout_pool", &dist::DeviceMesh::rollout_pool)
      .def_readonly("tensor_parallel", &dist::DeviceMesh::tensor_parallel)
      .def_readonly("tensor_parallel_slice", &dist::DeviceMesh::tensor_parallel_slice)
      .def_property_readonly("actor_shard", [](const dist::DeviceMesh& m) { return m.actor.shard; })
      .def_property_readonly("actor_replicas", [](const dist::DeviceMesh& m) { return m.actor.replicas; })
      .def_property_readonly("critic_shard", [](const dist::DeviceMesh& m) { return m.critic.shard; })
      .def_property_readonly("critic_replicas", [](const dist::DeviceMesh& m) { return m.critic.replicas; })
      .def_property_readonly("pool_rank", &dist::DeviceMesh::pool_rank);
}

}  // namespace verl::bindings
