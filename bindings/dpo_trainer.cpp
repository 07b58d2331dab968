// verl._C.trainer.DPOTrainer: the C++ DPO step (verl/trainer/dpo_trainer.h), and its losses as verl._C.algo.dpo_loss /
// check_dpo_loss_config (verl/algo/dpo_loss.h). python/verl/trainer/dpo_trainer.py drives the step with the
// preference dataset, tracking and checkpoints. Steps run without the GIL.
#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "engine_trainer.h"
#include "verl/dist/communicator.h"
#include "verl/workers/train_engine.h"
#include "verl/algo/dpo_loss.h"
#include "verl/core/config.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/trainer/dpo_trainer.h"

namespace verl::bindings {

void register_dpo_trainer(py::module_& m) {
  using trainer::DPOMetricSums;
  using trainer::DPOTrainer;
  using Release = py::call_guard<py::gil_scoped_release>;
  py::module_ a = m.attr("algo").cast<py::module_>();
  a.def("check_dpo_loss_config", &algo::check_dpo_loss_config, py::arg("beta"), py::arg("label_smoothing"),
        py::arg("loss_type"), py::arg("prefix") = "dpo",
        "ConfigError naming <prefix>.beta / .label_smoothing / .loss_type for values DPO refuses.");
  a.def(
      "dpo_loss",
      [](const torch::Tensor& policy_chosen_logps, const torch::Tensor& policy_rejected_logps,
         const torch::Tensor& ref_chosen_logps, const torch::Tensor& ref_rejected_logps,
         const torch::Tensor& chosen_lengths, const torch::Tensor& rejected_lengths, double beta,
         double label_smoothing, const std::string& loss_type) {
        algo::DPOLossOutput out = algo::dpo_loss(policy_chosen_logps, policy_rejected_logps, ref_chosen_logps,
                                                 ref_rejected_logps, chosen_lengths, rejected_lengths, beta,
                                                 label_smoothing, loss_type);
        return py::make_tuple(out.losses, out.chosen_rewards, out.rejected_rewards);
      },
      py::arg("policy_chosen_logps"), py::arg("policy_rejected_logps"), py::arg("ref_chosen_logps"),
      py::arg("ref_rejected_logps"), py::arg("chosen_lengths"), py::arg("rejected_lengths"), py::arg("beta") = 0.1,
      py::arg("label_smoothing") = 0.0, py::arg("loss_type") = "sigmoid",
      "(losses, chosen_rewards, rejected_rewards), each (num_pairs,): TRL's sigmoid / ipo / hinge losses.");
  py::module_ t = m.attr("trainer").cast<py::module_>();
  py::class_<DPOMetricSums>(t, "DPOMetricSums", "Sums over pairs of TRL's DPO metrics (evaluate()).")
      .def_readonly("num_pairs", &DPOMetricSums::num_pairs)
      .def("means", &DPOMetricSums::means, "TRL's metric names -> means over the pairs.")
      .def("__iadd__", [](DPOMetricSums& a, const DPOMetricSums& b) -> DPOMetricSums& { return a += b; });
  py::class_<DPOTrainer> cls(t, "DPOTrainer", "Direct Preference Optimization step (sigmoid / ipo / hinge losses).");
  def_set_data_parallel(cls);
  cls.def(py::init([](const Config& config, std::shared_ptr<model::CausalLM> model,
                       std::shared_ptr<model::CausalLM> reference, double beta, double label_smoothing,
                       const std::string& loss_type, std::optional<int64_t> total_training_steps) {
             return std::make_unique<DPOTrainer>(
                 trainer::DPOConfig::from_config(config, beta, label_smoothing, loss_type, total_training_steps),
                 std::move(model), std::move(reference));
           }),
           py::arg("config"), py::arg("model"), py::arg("reference") = nullptr, py::arg("beta") = 0.1,
           py::arg("label_smoothing") = 0.0, py::arg("loss_type") = "sigmoid",
           py::arg("total_training_steps") = py::none(),
           "config: a Config.load_sft() tree (the step keys); the model is trained in place against `reference` "
           "(None: a frozen copy of the model now).")
      .def("train_step", &DPOTrainer::train_step, py::arg("batch"), Release(),
           "One optimizer + scheduler step over a DataProto of pairs (rows 2i chosen, 2i+1 rejected) -> metrics.")
      .def("evaluate", &DPOTrainer::evaluate, py::arg("batch"), Release(),
           "The metric sums of a batch without gradients.")
      .def("sequence_log_probs", &DPOTrainer::sequence_log_probs, py::arg("batch"), py::arg("reference") = false,
           Release(), "(rows,) float64 summed completion log-probs under the policy (or the reference).")

      .def_property_readonly("engine", &DPOTrainer::engine, py::return_value_policy::reference_internal,
                             "The training engine (verl._C.workers.TrainEngine): checkpoints, bytes, sharding.")
      .def_property("global_step", &DPOTrainer::global_step, &DPOTrainer::set_global_step)
      .def_property_readonly("lr", [](DPOTrainer& s) { return s.optimizer().lr(); })
      .def_property_readonly("reference", &DPOTrainer::reference)
      .def(
          "save_optimizer",
          [](DPOTrainer& s, const std::string& path) {
            py::gil_scoped_release release;
            s.optimizer().save(path);
          },
          py::arg("path"), "Writes the optimizer + scheduler state (atomic).")
      .def(
          "load_optimizer",
          [](DPOTrainer& s, const std::string& path) {
            py::gil_scoped_release release;
            s.optimizer().load(path);
          },
          py::arg("path"), "Restores a state written by save_optimizer.");
}

}  // namespace verl::bindings
