// What the bindings of the trainers on one training engine (SFT, DPO) share.
#pragma once

#include <memory>
#include <utility>

#include "bindings.h"
#include "verl/dist/communicator.h"

namespace verl::bindings {

// Trainer.set_data_parallel(communicator, shard_group=None, replica_group=None): ZeRO-3 over the communicator's
// ranks (trainer/sft_trainer.h, dpo_trainer.h), HSDP with the shard and replica groups.
template <class Trainer>
void def_set_data_parallel(py::class_<Trainer>& cls) {
  cls.def(
      "set_data_parallel",
      [](Trainer& s, std::shared_ptr<dist::Communicator> communicator, std::shared_ptr<dist::Communicator> shard,
         std::shared_ptr<dist::Communicator> replicas) {
        s.set_data_parallel(std::move(communicator), {std::move(shard), std::move(replicas)});
      },
      py::arg("communicator"), py::arg("shard_group") = nullptr, py::arg("replica_group") = nullptr,
      py::call_guard<py::gil_scoped_release>(),
      "ZeRO-3 over the communicator's ranks (HSDP: shard / replica groups); every rank then steps on the same global "
      "batches and trains on its share.");
}

}  // namespace verl::bindings
