// verl._C: the one compiled module of the verl package.
#include "bindings.h"

#include "verl/core/version.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "verl-cpp core (libverl) bindings";
  m.attr("__version__") = verl::version();
  verl::bindings::register_errors(m);
  verl::bindings::register_config(m);
  verl::bindings::register_data(m);
  verl::bindings::register_algo(m);
  verl::bindings::register_model(m);
  verl::bindings::register_transformer(m);
  verl::bindings::register_checkpoint(m);
  verl::bindings::register_tokenizer(m);
  verl::bindings::register_workers(m);
  verl::bindings::register_rollout(m);
  verl::bindings::register_async_engine(m);
  verl::bindings::register_dist(m);
  verl::bindings::register_trainer(m);
  verl::bindings::register_sft_trainer(m);
  verl::bindings::register_dpo_trainer(m);
}
