// verl._C.Config: the C++ config tree; python/verl/config.py wraps it with attribute access.
#include <optional>

#include "bindings.h"
#include "json_cast.h"
#include "verl/core/error.h"
#include "verl/core/config.h"
#include "verl/core/config_keys.h"

namespace verl::bindings {
namespace {

// Command-line overrides arrive from sys.argv, where a byte that is not UTF-8 becomes a lone
// surrogate; pybind11 would refuse such a str as "incompatible function arguments" (TypeError).
std::string override_text(py::handle item) {
  VERL_CHECK_AS(ConfigTypeError, py::isinstance<py::str>(item), "overrides must be strings like key=value, got a ",
                std::string(py::str(py::type::of(item).attr("__name__"))));
  try {
    return utf8_text(item, "override");
  } catch (const InvalidArgument& e) {
    throw ConfigError(e.what());
  }
}

std::vector<std::string> override_list(py::handle overrides) {
  VERL_CHECK_AS(ConfigTypeError, !py::isinstance<py::str>(overrides),
                "overrides must be a list of key=value strings, not one string");
  std::vector<std::string> out;
  for (py::handle item : py::iter(overrides)) out.push_back(override_text(item));
  return out;
}

}  // namespace

void register_config(py::module_& m) {
  py::class_<Config>(m, "Config", "verl's ppo_trainer config tree (defaults, YAML, overrides, validation).")
      .def(py::init<>(), "verl's defaults.")
      .def_static(
          "load",
          [](const std::string& yaml_path, py::object overrides) { return Config::load(yaml_path, override_list(overrides)); },
          py::arg("yaml_path") = "", py::arg("overrides") = py::list(), "Defaults + YAML file + overrides, validated.")
      .def_static(
          "load_sft",
          [](const std::string& yaml_path, py::object overrides) {
            return Config::load_sft(yaml_path, override_list(overrides));
          },
          py::arg("yaml_path") = "", py::arg("overrides") = py::list(),
          "The SFT trainer's tree (sft_trainer.yaml defaults) + YAML file + overrides, validated.")
      .def("merge_yaml_file", &Config::merge_yaml_file, py::arg("path"))
      .def("merge_yaml_string", &Config::merge_yaml_string, py::arg("text"), py::arg("origin") = "<string>")
      .def("apply_override", [](Config& c, py::handle o) { c.apply_override(override_text(o)); }, py::arg("override"))
      .def("apply_overrides", [](Config& c, py::handle o) { c.apply_overrides(override_list(o)); }, py::arg("overrides"))
      .def("set",
           [](Config& c, py::handle key, py::handle value, bool allow_new) {
             VERL_CHECK_AS(ConfigTypeError, py::isinstance<py::str>(key), "config keys are strings, got a ",
                           std::string(py::str(py::type::of(key).attr("__name__"))));
             std::string k;
             try {
               k = utf8_text(key, "config key");
             } catch (const InvalidArgument& e) {
               throw ConfigError(e.what());
             }
             c.set(k, to_json(value, k), allow_new);
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

  // The honoured / refused / no-effect table (verl/core/config_keys.h); python/verl/config_keys.py presents it.
  m.def(
      "config_key_entries",
      [](bool sft) {
        py::list out;
        for (const auto& e : config_keys::entries(sft))
          out.append(py::make_tuple(e.key, config_keys::class_name(e.cls), e.reason, e.same_as));
        return out;
      },
      py::arg("sft") = false,
      "Every entry of the key table as (key, class, reason, same_as); class is 'honoured', 'refused' or 'no effect'.");
}

}  // namespace verl::bindings
