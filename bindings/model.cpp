// verl._C.model: safetensors files and Hugging Face checkpoint directories (verl/model/safetensors.h).
// python/verl/models/safetensors.py gives it safetensors.torch's names and signatures.
#include <pybind11/stl/filesystem.h>

#include <memory>
#include <optional>

#include "bindings.h"
#include "verl/core/error.h"
#include "verl/model/safetensors.h"

namespace verl::bindings {
namespace {

using Release = py::call_guard<py::gil_scoped_release>;
namespace fs = std::filesystem;

// A tensor name as UTF-8. A str holding a lone surrogate (how Python carries undecodable bytes)
// has no UTF-8 form: a TypeMismatch naming it by repr (ASCII), not pybind's cast error.
std::string tensor_name(py::handle k) {
  VERL_CHECK_AS(TypeMismatch, py::isinstance<py::str>(k), "tensor names must be str, got ",
                py::str(py::type::of(k)).cast<std::string>());
  Py_ssize_t size = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(k.ptr(), &size);
  if (utf8 == nullptr) {
    PyErr_Clear();
    VERL_FAIL(TypeMismatch, "tensor name ", py::cast<std::string>(py::module_::import("builtins").attr("ascii")(k)),
              " is not valid UTF-8");
  }
  return std::string(utf8, static_cast<size_t>(size));
}

// A Python dict keeps insertion order; save_sharded's split depends on it, so keep it here too.
model::NamedTensors named_tensors(const py::dict& tensors) {
  model::NamedTensors out;
  for (auto [k, v] : tensors) {
    std::string name = tensor_name(k);
    VERL_CHECK_AS(TypeMismatch, THPVariable_Check(v.ptr()), "value of ",
                  py::cast<std::string>(py::module_::import("builtins").attr("ascii")(k)), " is not a torch.Tensor");
    out.emplace_back(std::move(name), v.cast<torch::Tensor>());
  }
  return out;
}

model::Metadata metadata_arg(const std::optional<std::map<std::string, std::string>>& metadata) {
  return metadata.value_or(model::Metadata{});
}

}  // namespace

void register_model(py::module_& m) {
  py::module_ model = m.def_submodule("model", "Model checkpoints: safetensors files and checkpoint directories.");

  py::class_<model::SafeTensorsFile, std::shared_ptr<model::SafeTensorsFile>>(
      model, "safe_open", "A memory-mapped, validated .safetensors file (HF safetensors.safe_open).")
      .def(py::init<const fs::path&>(), py::arg("filename"), Release())
      .def("keys", &model::SafeTensorsFile::keys)
      .def("metadata",
           [](const model::SafeTensorsFile& f) -> std::optional<model::Metadata> {
             if (!f.has_metadata()) return std::nullopt;
             return f.metadata();
           })
      .def("get_tensor", &model::SafeTensorsFile::get, py::arg("name"), Release())
      .def("dtype", [](const model::SafeTensorsFile& f, const std::string& name) { return f.info(name).dtype; },
           py::arg("name"))
      .def("shape", [](const model::SafeTensorsFile& f, const std::string& name) { return f.info(name).shape; },
           py::arg("name"))
      .def("is_zero_copy", &model::SafeTensorsFile::is_zero_copy, py::arg("name"))
      .def("__contains__", &model::SafeTensorsFile::contains)
      .def("__len__", [](const model::SafeTensorsFile& f) { return f.keys().size(); })
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](py::object, py::args) { return false; });

  model.def("load_file", &model::load_file, py::arg("filename"), Release(),
            "All tensors of a .safetensors file (views of the mapping where aligned).");
  model.def(
      "save_file",
      [](const py::dict& tensors, const fs::path& filename,
         const std::optional<std::map<std::string, std::string>>& metadata) {
        model::NamedTensors named = named_tensors(tensors);
        py::gil_scoped_release release;
        model::save_file(filename, named, metadata_arg(metadata));
      },
      py::arg("tensors"), py::arg("filename"), py::arg("metadata") = py::none(),
      "Writes HF's byte layout to a temporary file and renames it over filename.");
  model.def("load_checkpoint_dir", &model::load_checkpoint_dir, py::arg("dir"), Release(),
            "model.safetensors, or the shards of model.safetensors.index.json, as one dict.");
  model.def(
      "save_sharded",
      [](const fs::path& dir, const py::dict& tensors, int64_t max_shard_bytes) {
        model::NamedTensors named = named_tensors(tensors);
        py::gil_scoped_release release;
        return model::save_sharded(dir, named, max_shard_bytes);
      },
      py::arg("dir"), py::arg("tensors"), py::arg("max_shard_bytes"),
      "transformers' save_pretrained layout: shards plus index json (one shard: model.safetensors).");
}

}  // namespace verl::bindings
