// verl._C.model.CausalLM: the LibTorch decoder (verl/model/transformer.h) for Python.
// python/verl/models/transformer.py wraps it with a torch-like API (state_dict, to, __call__).
#include <map>
#include <optional>
#include <string>

#include "bindings.h"
#include "json_cast.h"
#include "verl/core/error.h"
#include "verl/dist/communicator.h"
#include "verl/model/init_weights.h"
#include "verl/model/lora.h"
#include "verl/model/model_config.h"
#include "verl/model/peft_adapter.h"
#include "verl/model/transformer.h"

namespace verl::bindings {
namespace {

using model::CausalLM;
using model::HeadKind;
using model::ModelConfig;
using Release = py::call_guard<py::gil_scoped_release>;
using OptTensor = std::optional<torch::Tensor>;

torch::Tensor or_undefined(const OptTensor& t) { return t ? *t : torch::Tensor(); }

torch::Dtype parse_dtype(const std::string& name) {
  if (name == "float32" || name == "float") return torch::kFloat;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16" || name == "half") return torch::kHalf;
  if (name == "float64" || name == "double") return torch::kDouble;
  VERL_FAIL(InvalidArgument, "CausalLM.to: unsupported dtype '", name, "' (float32, bfloat16, float16, float64)");
}

std::string dtype_name(torch::Dtype d) {
  switch (d) {
    case torch::kFloat: return "float32";
    case torch::kBFloat16: return "bfloat16";
    case torch::kHalf: return "float16";
    case torch::kDouble: return "float64";
    default: return c10::toString(d);
  }
}

// A LoRA config from Python values; ConfigError naming `key`.<field> for a malformed selector.
model::LoraConfig lora_config(int64_t rank, double alpha, py::handle target_modules, py::handle exclude_modules,
                              bool use_rslora, const std::string& key) {
  model::LoraConfig lora;
  lora.rank = rank;
  lora.alpha = alpha;
  lora.use_rslora = use_rslora;
  lora.key = key;
  for (auto [field, value, targets] : {std::tuple<const char*, py::handle, bool>{"target_modules", target_modules, true},
                                       {"exclude_modules", exclude_modules, false}}) {
    const std::string where = key + "." + field;
    try {
      (targets ? lora.target_modules : lora.exclude_modules) = model::parse_module_selector(to_json(value, where), targets);
    } catch (const InvalidArgument& e) {
      VERL_FAIL(ConfigError, where, " ", e.what());
    }
  }
  return lora;
}

py::object lora_dict(const std::optional<model::LoraConfig>& lora) {
  if (!lora) return py::none();
  Json j = {{"lora_rank", lora->rank},
            {"lora_alpha", lora->alpha},
            {"target_modules", model::module_selector_json(lora->target_modules)},
            {"exclude_modules", model::module_selector_json(lora->exclude_modules)},
            {"use_rslora", lora->use_rslora},
            {"scaling", lora->scaling()}};
  return to_python(j);
}

}  // namespace

void register_transformer(py::module_& m) {
  py::module_ mm = m.def_submodule("model", "verl::model: model configs, the decoder, checkpoints");

  mm.def("parse_model_config", [](const std::string& json_text) {
        // from_json_text: the depth-limited parser (a config nested 100,000 deep is a ConfigError,
        // not a stack overflow), every failure a ConfigError.
        return to_python(ModelConfig::from_json_text(json_text, "<config json>").to_json());
      }, py::arg("config_json"),
      "Parses an HF config.json text and returns the normalised config dict (raises ConfigError).");

  py::class_<CausalLM, std::shared_ptr<CausalLM>>(mm, "CausalLM",
                                                  "Qwen2/Qwen3/Llama decoder with HF parameter names.")
      .def(py::init([](const std::string& config_json, bool value_head,
                       std::shared_ptr<dist::Communicator> tensor_parallel) {
             return std::make_shared<CausalLM>(ModelConfig::from_json_text(config_json, "<config json>"),
                                               value_head ? HeadKind::kValue : HeadKind::kLanguageModel,
                                               std::move(tensor_parallel));
           }),
           py::arg("config_json"), py::arg("value_head") = false, py::kw_only(),
           py::arg("tensor_parallel") = nullptr,
           "tensor_parallel: a verl._C.dist.Communicator of t ranks that hold one copy of the model together "
           "(inference only; load_state_dict takes the whole model's tensors and keeps this rank's shard).")
      .def_property_readonly("tensor_parallel_size", &CausalLM::tensor_parallel_size)
      .def_property_readonly("config", [](const CausalLM& c) { return to_python(c.config().to_json()); })
      .def_property_readonly("value_head", [](const CausalLM& c) { return c.head_kind() == HeadKind::kValue; })
      .def_property_readonly("dtype", [](const CausalLM& c) { return dtype_name(c.dtype()); })
      .def_property_readonly("device", [](const CausalLM& c) { return c.device().str(); })
      .def("state_dict", &CausalLM::named_state, "HF-named parameters (the live tensors).")
      .def("load_state_dict", &CausalLM::load_state_dict, py::arg("state_dict"), py::arg("strict") = true, Release())
      .def("forward",
           [](CausalLM& c, const torch::Tensor& ids, const OptTensor& mask, const OptTensor& pos) {
             return c.forward(ids, or_undefined(mask), or_undefined(pos));
           },
           py::arg("input_ids"), py::arg("attention_mask") = py::none(), py::arg("position_ids") = py::none(),
           Release())
      .def("hidden_states",
           [](CausalLM& c, const torch::Tensor& ids, const OptTensor& mask, const OptTensor& pos) {
             return c.hidden_states(ids, or_undefined(mask), or_undefined(pos));
           },
           py::arg("input_ids"), py::arg("attention_mask") = py::none(), py::arg("position_ids") = py::none(),
           Release())
      .def("forward_packed", &CausalLM::forward_packed, py::arg("input_ids"), py::arg("cu_seqlens"), Release())
      .def("hidden_states_packed", &CausalLM::hidden_states_packed, py::arg("input_ids"), py::arg("cu_seqlens"),
           Release())
      .def("apply_head", &CausalLM::apply_head, py::arg("hidden"), Release())
      .def("add_adapters",
           [](CausalLM& c, int64_t rank, double alpha, py::object target_modules, py::object exclude_modules,
              bool use_rslora, uint64_t seed) {
             const model::LoraConfig lora = lora_config(rank, alpha, target_modules, exclude_modules, use_rslora, "lora");
             py::gil_scoped_release release;
             return c.add_adapters(lora, seed);
           },
           py::arg("lora_rank"), py::arg("lora_alpha") = 16.0, py::arg("target_modules") = "all-linear",
           py::arg("exclude_modules") = py::none(), py::arg("use_rslora") = false, py::arg("seed") = 0,
           "LoRA adapters with PEFT's semantics (verl/model/lora.h); returns the adapted modules' names.")
      .def_property_readonly("lora", [](const CausalLM& c) { return lora_dict(c.lora()); })
      .def("set_adapters_enabled", &CausalLM::set_adapters_enabled, py::arg("enabled"))
      .def_property_readonly("adapters_enabled", &CausalLM::adapters_enabled)
      .def("adapter_state", &CausalLM::adapter_state, "The adapters' parameters by name (the live tensors).")
      .def("merged_state", &CausalLM::merged_state, Release(),
           "The weights with every adapter folded in (W + (B A) * scaling), adapters left out.")
      .def("set_gradient_checkpointing", &CausalLM::set_gradient_checkpointing, py::arg("enabled"))
      .def_property_readonly("gradient_checkpointing", &CausalLM::gradient_checkpointing)
      .def("train", [](CausalLM& c, bool on) { c.train(on); }, py::arg("mode") = true)
      .def("to",
           [](CausalLM& c, const std::optional<std::string>& device, const std::optional<std::string>& dtype) {
             if (device) c.to(torch::Device(*device));
             if (dtype) c.to(parse_dtype(*dtype));
           },
           py::arg("device") = py::none(), py::arg("dtype") = py::none(), Release());
  mm.def("lora_target_modules",
         [](const std::string& config_json, int64_t rank, double alpha, py::object target_modules,
            py::object exclude_modules) {
           return model::lora_target_modules(ModelConfig::from_json_text(config_json, "<config json>"),
                                             lora_config(rank, alpha, target_modules, exclude_modules, false, "lora"));
         },
         py::arg("config_json"), py::arg("lora_rank"), py::arg("lora_alpha") = 16.0,
         py::arg("target_modules") = "all-linear", py::arg("exclude_modules") = py::none(),
         "The decoder modules a LoRA config adapts, as PEFT selects them (raises ConfigError).");
  mm.def("save_peft_adapter",
         [](const CausalLM& c, const std::string& dir, const std::string& base) {
           std::vector<std::string> out;
           for (const auto& p : model::save_peft_adapter(c, dir, base)) out.push_back(p.string());
           return out;
         },
         py::arg("model"), py::arg("dir"), py::arg("base_model_name_or_path") = "", Release(),
         "Writes the model's adapters as PEFT's adapter_config.json + adapter_model.safetensors, atomically.");
  mm.def("load_peft_adapter_into",
         [](CausalLM& c, const std::string& dir) {
           model::LoraConfig lora;
           {
             py::gil_scoped_release release;
             lora = model::load_peft_adapter_into(c, dir);
           }
           return lora_dict(lora);
         },
         py::arg("model"), py::arg("dir"),
         "Loads a PEFT LoRA adapter directory into the model (adding its adapters when it has none).");
  mm.def("init_weights", &model::init_weights, py::arg("model"), py::arg("seed"),
         py::arg("initializer_range") = py::none(), Release(),
         "transformers' random initialisation in place (N(0, initializer_range), biases 0, norms 1), seeded.");
}

}  // namespace verl::bindings
