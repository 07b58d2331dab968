// verl._C.trainer.SFTTrainer: the C++ SFT step (verl/trainer/sft_trainer.h). python/verl/trainer/sft_trainer.py
// drives it with the SFT dataset, tracking and checkpoints. Steps run without the GIL.
#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "engine_trainer.h"
#include "verl/dist/communicator.h"
#include "verl/workers/train_engine.h"
#include "verl/core/config.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/trainer/sft_trainer.h"

namespace verl::bindings {

void register_sft_trainer(py::module_& m) {
  using trainer::SFTTrainer;
  using Release = py::call_guard<py::gil_scoped_release>;
  py::module_ t = m.attr("trainer").cast<py::module_>();
  py::class_<SFTTrainer> cls(t, "SFTTrainer",
                         "Supervised fine-tuning step (token-mean cross-entropy on loss_mask targets).");
  def_set_data_parallel(cls);
  cls.def(py::init([](const Config& config, std::shared_ptr<model::CausalLM> model,
                       std::optional<int64_t> total_training_steps) {
             return std::make_unique<SFTTrainer>(trainer::SFTConfig::from_config(config, total_training_steps),
                                                 std::move(model));
           }),
           py::arg("config"), py::arg("model"), py::arg("total_training_steps") = py::none(),
           "config: a Config.load_sft() tree; the model is trained in place. total_training_steps (the LR "
           "schedule's length) replaces optim.total_training_steps.")
      .def("train_step", &SFTTrainer::train_step, py::arg("batch"), Release(),
           "One optimizer + scheduler step over a DataProto (input_ids, attention_mask, loss_mask) -> metrics.")
      .def(
          "loss_sum",
          [](SFTTrainer& s, const DataProto& batch) {
            trainer::SFTLossSum out;
            {
              py::gil_scoped_release release;
              out = s.loss_sum(batch);
            }
            return py::make_tuple(out.loss_sum, out.num_tokens);
          },
          py::arg("batch"), "(-sum log p(target), number of targets) without gradients.")

      .def_property_readonly("engine", &SFTTrainer::engine, py::return_value_policy::reference_internal,
                             "The training engine (verl._C.workers.TrainEngine): checkpoints, bytes, sharding.")
      .def_property("global_step", &SFTTrainer::global_step, &SFTTrainer::set_global_step)
      .def_property_readonly("lr", [](SFTTrainer& s) { return s.optimizer().lr(); })
      .def(
          "save_optimizer",
          [](SFTTrainer& s, const std::string& path) {
            py::gil_scoped_release release;
            s.optimizer().save(path);
          },
          py::arg("path"), "Writes the optimizer + scheduler state (atomic).")
      .def(
          "load_optimizer",
          [](SFTTrainer& s, const std::string& path) {
            py::gil_scoped_release release;
            s.optimizer().load(path);
          },
          py::arg("path"), "Restores a state written by save_optimizer.");
}

}  // namespace verl::bindings
