// verl._C.Config: the C++ config tree; python/verl/config.py wraps it with attribute access.
#include <optional>

#include "bindings.h"
#include "json_cast.h"
#include "verl/core/config.h"

namespace verl::bindings {

void register_config(py::module_& m) {
  py::class_<Config>(m, "Config", "verl's ppo_trainer config tree (defaults, YAML, overrides, validation).")
      .def(py::init<>(), "verl's defaults.")
      .def_static("load", &Config::load, py::arg("yaml_path") = "", py::arg("overrides") = std::vector<std::string>{},
                  "Defaults + YAML file + overrides, validated.")
      .def_static("load_sft", &Config::load_sft, py::arg("yaml_path") = "",
                  py::arg("overrides") = std::vector<std::string>{},
                  "The SFT trainer's tree (sft_trainer.yaml defaults) + YAML file + overrides, validated.")
      .def("merge_yaml_file", &Config::merge_yaml_file, py::arg("path"))
      .def("merge_yaml_string", &Config::merge_yaml_string, py::arg("text"), py::arg("origin") = "<string>")
      .def("apply_override", &Config::apply_override, py::arg("override"))
      .def("apply_overrides", &Config::apply_overrides, py::arg("overrides"))
      .def("set",
           [](Config& c, const std::string& key, py::handle value, bool allow_new) {
             c.set(key, to_json(value, key), allow_new);
           },
           py::arg("key"), py::arg("value"), py::arg("allow_new") = false)
      .def("erase", &Config::erase, py::arg("key"))
      .def("has", &Config::has, py::arg("key"))
      .def("__contains__", &Config::has)
      .def("get", [](const Config& c, const std::string& key) { return to_python(c.get(key)); }, py::arg("key"))
      .def("raw", [](const Config& c, const std::string& key) { return to_python(c.raw(key)); }, py::arg("key"))
      .def("validate", &Config::validate)
      .def("to_dict", [](const Config& c, bool resolve) { return to_python(c.to_json(resolve)); },
           py::arg("resolve") = true)
      .def("to_yaml", &Config::to_yaml, py::arg("resolve") = true)
      .def("keys", &Config::keys)
      .def("copy", [](const Config& c) { return Config(c); })
      .def_property_readonly("is_sft", &Config::is_sft, "Whether this is the SFT trainer's tree (load_sft).")
      .def_static("default_yaml", &Config::default_yaml)
      .def_static("sft_default_yaml", &Config::sft_default_yaml);
}

}  // namespace verl::bindings
