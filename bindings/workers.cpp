// verl._C.workers: the actor / reference / critic workers (verl/workers/*.h) for Python.
// python/verl/workers/__init__.py wraps them to take verl.DataProto and verl.models.transformer
// models; the C++ CausalLM object is shared, never copied.
#include <map>
#include <optional>
#include <string>

#include "bindings.h"
#include "verl/core/config.h"
#include "verl/core/error.h"
#include "verl/data/data_proto.h"
#include "verl/model/transformer.h"
#include "verl/workers/actor.h"
#include "verl/workers/critic.h"
#include "verl/workers/micro_batch.h"
#include "verl/workers/optim.h"
#include "verl/workers/response_forward.h"
#include "verl/workers/train_engine.h"

namespace verl::bindings {
namespace {

using model::CausalLM;
using workers::ActorWorker;
using workers::CriticWorker;
using workers::PolicyRole;
using Release = py::call_guard<py::gil_scoped_release>;
using OptTensor = std::optional<torch::Tensor>;

PolicyRole parse_role(const std::string& role) {
  if (role == "actor") return PolicyRole::kActor;
  if (role == "ref" || role == "reference") return PolicyRole::kReference;
  VERL_FAIL(InvalidArgument, "ActorWorker: role must be 'actor' or 'ref', got '", role, "'");
}

py::dict optimizer_state(workers::Optimizer& o) {
  py::dict d;
  d["lr"] = o.lr();
  d["scheduler_step_count"] = o.scheduler_step_count();
  d["skipped_steps"] = o.skipped_steps();
  d["clip_grad"] = o.config().clip_grad;
  d["num_warmup_steps"] = o.config().num_warmup_steps();
  return d;
}

}  // namespace

void register_workers(py::module_& m) {
  py::module_ w = m.def_submodule("workers", "verl::workers: actor, reference and critic workers");
  using workers::TrainEngine;
  py::class_<TrainEngine>(w, "TrainEngine",
                          "The training engine under every role (its trainer owns it: SFTTrainer.engine, ...): "
                          "mixed precision, ZeRO-3, the optimizer, checkpoints.")
      .def_property_readonly("sharded", &TrainEngine::sharded, "Whether the weights are ZeRO-3 shards (several ranks).")
      .def_property_readonly("rank", &TrainEngine::rank)
      .def_property_readonly(
          "compute_dtype", [](TrainEngine& e) { return std::string(c10::toString(e.precision().compute_dtype())); },
          "The dtype forwards and backwards run in (the resolved fsdp_config.dtype / engine.dtype).")
      .def_property_readonly("world_size", [](const TrainEngine& e) { return e.data_parallel().size(); })
      .def("weight_bytes", &TrainEngine::weight_bytes, "This rank's master weight bytes.")
      .def("optimizer_state_bytes", &TrainEngine::optimizer_state_bytes, "This rank's optimizer state bytes.")
      .def(
          "save_checkpoint",
          [](TrainEngine& e, const std::string& dir, std::optional<std::string> tokenizer_dir) {
            e.save_checkpoint(dir, tokenizer_dir);
          },
          py::arg("dir"), py::arg("tokenizer_dir") = py::none(), Release(),
          "Every rank: sharded, its model + optimizer shard files (rank 0 config.json and tokenizer files first); "
          "one process, optim.pt.")
      .def(
          "load_checkpoint", [](TrainEngine& e, const std::string& dir) { e.load_checkpoint(dir); }, py::arg("dir"),
          Release(), "Weights and optimizer state from shard files (any layout) or a Hugging Face dir + optim.pt.")
      .def("gather_model", &TrainEngine::gather_model, Release(),
           "The whole weights as a model on every rank (a collective when sharded).");
  w.def("cpu_has_native_bf16_matmul", &verl::workers::cpu_has_native_bf16_matmul,
        "Whether this CPU multiplies bf16 matrices in hardware (x86 AVX512-BF16 or AMX-BF16, with the OS saving their "
        "registers; read from CPUID): where fsdp_config.dtype=auto computes in bf16 on the CPU.");

  py::class_<ActorWorker>(w, "ActorWorker", "Actor (or reference) policy worker over a shared CausalLM.")
      .def(py::init([](const Config& config, std::shared_ptr<CausalLM> model, const std::string& role) {
             return std::make_unique<ActorWorker>(config, std::move(model), parse_role(role));
           }),
           py::arg("config"), py::arg("model"), py::arg("role") = "actor")
      .def("compute_log_prob", &ActorWorker::compute_log_prob, py::arg("data"),
           py::arg("calculate_entropy") = std::nullopt, Release())
      .def("compute_ref_log_prob", &ActorWorker::compute_ref_log_prob, py::arg("data"), Release())
      .def("update_policy", &ActorWorker::update_policy, py::arg("data"), Release())
      .def("update_policy_on_policy", &ActorWorker::update_policy_on_policy, py::arg("data"), Release())
      .def("old_log_prob_from_update_is_exact", &ActorWorker::old_log_prob_from_update_is_exact,
           py::arg("global_rows"))
      .def_property_readonly("role", [](const ActorWorker& a) {
        return a.role() == PolicyRole::kActor ? "actor" : "ref";
      })
      .def_property_readonly("model", &ActorWorker::model)
      .def("optimizer_state", [](ActorWorker& a) { return optimizer_state(a.optimizer()); })
      .def("set_scheduler_step_count",
           [](ActorWorker& a, int64_t n) { a.optimizer().set_scheduler_step_count(n); }, py::arg("count"))
      .def("save_optimizer", [](ActorWorker& a, const std::string& path) { a.optimizer().save(path); },
           py::arg("path"), Release())
      .def("load_optimizer", [](ActorWorker& a, const std::string& path) { a.optimizer().load(path); },
           py::arg("path"), Release());

  py::class_<CriticWorker>(w, "CriticWorker", "Critic worker over a shared value-head CausalLM.")
      .def(py::init([](const Config& config, std::shared_ptr<CausalLM> model) {
             return std::make_unique<CriticWorker>(config, std::move(model));
           }),
           py::arg("config"), py::arg("model"))
      .def("compute_values", &CriticWorker::compute_values, py::arg("data"), Release())
      .def("update_critic", &CriticWorker::update_critic, py::arg("data"), Release())
      .def_property_readonly("model", &CriticWorker::model)
      .def("optimizer_state", [](CriticWorker& c) { return optimizer_state(c.optimizer()); })
      .def("set_scheduler_step_count",
           [](CriticWorker& c, int64_t n) { c.optimizer().set_scheduler_step_count(n); }, py::arg("count"))
      .def("save_optimizer", [](CriticWorker& c, const std::string& path) { c.optimizer().save(path); },
           py::arg("path"), Release())
      .def("load_optimizer", [](CriticWorker& c, const std::string& path) { c.optimizer().load(path); },
           py::arg("path"), Release());

  w.def("constant_schedule_with_warmup", &workers::constant_schedule_with_warmup, py::arg("step"),
        py::arg("num_warmup_steps"));
  w.def("cosine_schedule_with_warmup", &workers::cosine_schedule_with_warmup, py::arg("step"),
        py::arg("num_warmup_steps"), py::arg("num_training_steps"), py::arg("min_lr_ratio") = 0.0,
        py::arg("num_cycles") = 0.5, py::arg("zero_indexed_step") = true);
  w.def("mini_batch_rows", &workers::mini_batch_rows, py::arg("n"), py::arg("mini_batch_size"), py::arg("epochs"),
        py::arg("seed"), py::arg("shuffle"));
  w.def("karmarkar_karp", &workers::karmarkar_karp, py::arg("values"), py::arg("k_partitions"),
        py::arg("equal_size"));
  w.def("get_seqlen_balanced_partitions", &workers::get_seqlen_balanced_partitions, py::arg("values"),
        py::arg("k_partitions"), py::arg("equal_size"));
  w.def("dynamic_micro_batches", &workers::dynamic_micro_batches, py::arg("seq_lens"), py::arg("max_token_len"),
        py::arg("balance") = true, py::arg("min_num_micro_batch") = std::nullopt);
  w.def(
      "response_log_probs",
      [](CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
         const OptTensor& position_ids, int64_t response_length, double temperature, bool calculate_entropy,
         bool remove_padding) {
        workers::ResponseLogProbs out;
        {
          py::gil_scoped_release release;
          out = workers::response_log_probs(model, input_ids, attention_mask,
                                            position_ids ? *position_ids : torch::Tensor(), response_length,
                                            temperature, calculate_entropy, remove_padding);
        }
        return py::make_tuple(out.log_probs, out.entropy.defined() ? py::cast(out.entropy) : py::none());
      },
      py::arg("model"), py::arg("input_ids"), py::arg("attention_mask"), py::arg("position_ids") = py::none(),
      py::arg("response_length"), py::arg("temperature") = 1.0, py::arg("calculate_entropy") = false,
      py::arg("remove_padding") = true);
  w.def(
      "response_values",
      [](CausalLM& model, const torch::Tensor& input_ids, const torch::Tensor& attention_mask,
         const OptTensor& position_ids, int64_t response_length, bool remove_padding) {
        return workers::response_values(model, input_ids, attention_mask,
                                        position_ids ? *position_ids : torch::Tensor(), response_length,
                                        remove_padding);
      },
      py::arg("model"), py::arg("input_ids"), py::arg("attention_mask"), py::arg("position_ids") = py::none(),
      py::arg("response_length"), py::arg("remove_padding") = true, Release());
}

}  // namespace verl::bindings
