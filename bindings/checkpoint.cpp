// verl._C.model.load_pretrained / save_pretrained: HF checkpoint directories (verl/model/checkpoint.h).
// python/verl/models/checkpoint.py wraps them as verl.models.load_model / CausalLM.save_pretrained.
#include <pybind11/functional.h>
#include <pybind11/stl/filesystem.h>

#include <functional>
#include <optional>
#include <string>

#include "bindings.h"
#include "json_cast.h"
#include "verl/core/error.h"
#include "verl/model/checkpoint.h"
#include "verl/workers/sharded_checkpoint.h"

namespace verl::bindings {
namespace {

namespace fs = std::filesystem;

std::optional<torch::Dtype> dtype_arg(const std::optional<std::string>& name) {
  if (!name || *name == "auto") return std::nullopt;
  if (*name == "float32" || *name == "float") return torch::kFloat;
  if (*name == "bfloat16") return torch::kBFloat16;
  if (*name == "float16" || *name == "half") return torch::kHalf;
  if (*name == "float64" || *name == "double") return torch::kDouble;
  VERL_FAIL(InvalidArgument, "load_pretrained: unsupported dtype '", *name,
            "' (auto, float32, bfloat16, float16, float64)");
}

}  // namespace

void register_checkpoint(py::module_& m) {
  py::module_ mm = m.def_submodule("model", "verl::model: model configs, the decoder, checkpoints");

  mm.def(
      "load_pretrained",
      [](const fs::path& dir, const std::optional<std::string>& dtype, const std::string& device, bool value_head) {
        const auto d = dtype_arg(dtype);
        const torch::Device dev(device);
        py::gil_scoped_release release;
        return model::load_pretrained(dir, d, dev, value_head ? model::HeadKind::kValue : model::HeadKind::kLanguageModel);
      },
      py::arg("dir"), py::arg("dtype") = py::none(), py::arg("device") = "cpu", py::arg("value_head") = false,
      "A CausalLM from an HF checkpoint directory (dtype None/'auto' = the config's torch_dtype).");

  mm.def("is_sharded_checkpoint", &workers::is_sharded_checkpoint, py::arg("dir"),
         "Whether dir holds per-rank shard files (model_world_size_N_rank_r.safetensors), as a multi-rank trainer "
         "writes them.");
  mm.def(
      "load_sharded_pretrained",
      [](const fs::path& dir, const std::optional<std::string>& dtype, const std::string& device, bool value_head) {
        const auto d = dtype_arg(dtype);
        const torch::Device dev(device);
        py::gil_scoped_release release;
        return workers::load_sharded_pretrained(dir, d, dev,
                                                value_head ? model::HeadKind::kValue : model::HeadKind::kLanguageModel);
      },
      py::arg("dir"), py::arg("dtype") = py::none(), py::arg("device") = "cpu", py::arg("value_head") = false,
      "A CausalLM from a sharded checkpoint directory: config.json and every rank's shard file joined "
      "(dtype None/'auto' = the saved master dtype).");

  mm.def("pretrained_config_json",
         [](const model::CausalLM& c) { return to_python(model::pretrained_config_json(c)); }, py::arg("model"),
         "The config.json dict save_pretrained writes for this model.");

  mm.def(
      "save_pretrained",
      [](const model::CausalLM& c, const fs::path& dir, std::optional<fs::path> tokenizer_dir, int64_t max_shard_bytes,
         std::optional<std::function<void(std::string)>> on_file_written) {
        model::SaveOptions options;
        options.max_shard_bytes = max_shard_bytes;
        options.tokenizer_dir = std::move(tokenizer_dir);
        if (on_file_written) {
          // A Python exception in the callback aborts the save; it is re-raised as CheckpointError
          // (converted here, under the GIL, so no Python error state crosses the C++ unwinding).
          options.on_file_written = [cb = *on_file_written](const fs::path& file) {
            py::gil_scoped_acquire acquire;
            try {
              cb(file.string());
            } catch (py::error_already_set& e) {
              VERL_FAIL(CheckpointError, "save_pretrained aborted after writing '", file.string(), "': ", e.what());
            }
          };
        }
        py::gil_scoped_release release;
        return model::save_pretrained(c, dir, options);
      },
      py::arg("model"), py::arg("dir"), py::arg("tokenizer_dir") = py::none(),
      py::arg("max_shard_bytes") = model::kDefaultMaxShardBytes, py::arg("on_file_written") = py::none(),
      "Writes an HF checkpoint directory atomically; returns the files written.");
}

}  // namespace verl::bindings
