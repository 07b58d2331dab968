// Python <-> JSON conversion (see json_cast.h).
#include "json_cast.h"

#include "verl/core/error.h"

namespace verl::bindings {
namespace {

// Python values nested deeper than any config or data cell (a list in a list ... 10^5 deep) are
// refused before the recursion below can exhaust the C++ stack.
constexpr int kMaxDepth = 128;

Json convert(py::handle obj, const std::string& where, int depth);

}  // namespace

std::string utf8_text(py::handle str, const std::string& where) {
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(str.ptr(), &size);
  if (data == nullptr) {  // a lone surrogate ("\ud800", or a surrogate-escaped byte from sys.argv)
    PyErr_Clear();
    const std::string shown = py::str(py::module_::import("builtins").attr("ascii")(str));
    VERL_FAIL(InvalidArgument, where, ": ", shown.substr(0, 200), " is not valid text (it holds a lone surrogate, ",
              "e.g. a byte that is not UTF-8)");
  }
  return std::string(data, static_cast<size_t>(size));
}

Json to_json(py::handle obj, const std::string& where) { return convert(obj, where, 0); }

namespace {

Json convert(py::handle obj, const std::string& where, int depth) {
  VERL_CHECK_AS(TypeMismatch, depth < kMaxDepth, where, ": nested deeper than ", kMaxDepth, " levels");
  if (obj.is_none()) return nullptr;
  if (py::isinstance<py::bool_>(obj)) return obj.cast<bool>();
  if (py::isinstance<py::int_>(obj)) {
    try {
      return obj.cast<int64_t>();
    } catch (const py::cast_error&) {
      VERL_FAIL(TypeMismatch, where, ": integer ", std::string(py::str(obj)), " does not fit in 64 bits");
    }
  }
  if (py::isinstance<py::float_>(obj)) return obj.cast<double>();
  if (py::isinstance<py::str>(obj)) return utf8_text(obj, where);
  if (py::isinstance<py::dict>(obj)) {
    Json out = Json::object();
    for (auto [k, v] : obj.cast<py::dict>()) {
      VERL_CHECK_AS(TypeMismatch, py::isinstance<py::str>(k), where, ": dict keys must be strings, got ",
                    std::string(py::str(py::type::of(k).attr("__name__"))));
      const std::string key = utf8_text(k, where);
      out[key] = convert(v, where + "." + key, depth + 1);
    }
    return out;
  }
  if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
    Json out = Json::array();
    size_t i = 0;
    for (auto item : obj) out.push_back(convert(item, where + "[" + std::to_string(i++) + "]", depth + 1));
    return out;
  }
  // numpy scalars and arrays, without linking numpy: both offer tolist() (scalars give a Python scalar).
  const std::string module = py::str(py::type::of(obj).attr("__module__"));
  if (module == "numpy" && py::hasattr(obj, "tolist")) return convert(obj.attr("tolist")(), where, depth + 1);
  VERL_FAIL(TypeMismatch, where, ": cannot convert a Python ", std::string(py::str(py::type::of(obj).attr("__name__"))),
            " to JSON (supported: None, bool, int, float, str, list, tuple, dict, numpy values)");
}

}  // namespace

py::object to_python(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null:
      return py::none();
    case Json::value_t::boolean:
      return py::bool_(v.get<bool>());
    case Json::value_t::number_integer:
      return py::int_(v.get<int64_t>());
    case Json::value_t::number_unsigned:
      return py::int_(v.get<uint64_t>());
    case Json::value_t::number_float:
      return py::float_(v.get<double>());
    case Json::value_t::string:
      return py::str(v.get_ref<const std::string&>());
    case Json::value_t::array: {
      py::list out;
      for (const auto& item : v) out.append(to_python(item));
      return std::move(out);
    }
    case Json::value_t::object: {
      py::dict out;
      for (const auto& [k, item] : v.items()) out[py::str(k)] = to_python(item);
      return std::move(out);
    }
    default:
      VERL_FAIL(TypeMismatch, "cannot convert JSON value of type ", v.type_name(), " to Python");
  }
}

}  // namespace verl::bindings
