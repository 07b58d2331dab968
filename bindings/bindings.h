// The registration functions of verl._C, one per binding file; module.cpp calls them all.
#pragma once

#include <torch/python.h>

namespace py = pybind11;

namespace verl::bindings {
void register_errors(py::module_& m);  // errors.cpp: C++ exception classes -> verl.errors
void register_config(py::module_& m);  // config.cpp: verl::Config
void register_data(py::module_& m);    // data.cpp: verl::DataProto and row plans
void register_algo(py::module_& m);    // algo.cpp: verl/algo (functional, advantages, losses, KL)
void register_model(py::module_& m);   // model.cpp: verl/model (safetensors, checkpoint directories)
void register_transformer(py::module_& m);  // transformer.cpp: verl/model CausalLM
void register_checkpoint(py::module_& m);   // checkpoint.cpp: verl/model load_pretrained, save_pretrained
void register_tokenizer(py::module_& m);  // tokenizer.cpp: verl::tokenizer (Tokenizer, render_chatml)
void register_workers(py::module_& m);  // workers.cpp: verl::workers (ActorWorker, CriticWorker, schedules)
void register_rollout(py::module_& m);  // rollout.cpp: verl::rollout (Engine, SamplingParams)
void register_async_engine(py::module_& m);  // async_engine.cpp: verl::rollout::AsyncEngine (into verl._C.rollout)
void register_dist(py::module_& m);     // dist.cpp: verl::dist (Communicator from a torch ProcessGroup)
void register_trainer(py::module_& m);  // trainer.cpp: verl::trainer (PPOTrainer, step metrics)
void register_sft_trainer(py::module_& m);  // sft_trainer.cpp: verl::trainer::SFTTrainer (into verl._C.trainer)
void register_dpo_trainer(py::module_& m);  // dpo_trainer.cpp: verl::trainer::DPOTrainer (into verl._C.trainer)
}  // namespace verl::bindings
