// Maps libverl's exception classes onto the Python classes of verl/errors.py, keeping the message.
#include "bindings.h"

#include <cstring>

#include "verl/core/error.h"

namespace verl::bindings {
namespace {

// Python exception classes, looked up once at import; never released (they live as long as
// the interpreter, and releasing at exit would race with interpreter teardown).
struct PyErrors {
  PyObject* base;
  PyObject* config;
  PyObject* config_type;
  PyObject* data;
  PyObject* invalid_argument;
  PyObject* type_mismatch;
  PyObject* checkpoint;
  PyObject* distributed;
};
PyErrors g_errors{};

PyObject* lookup(const py::module_& errors, const char* name) { return py::object(errors.attr(name)).release().ptr(); }

// Messages may quote bytes from a file that are not UTF-8 (a tensor name, a JSON key, a path);
// PyErr_SetString would decode them strictly and raise UnicodeDecodeError instead of `type`,
// losing the class and the message. Undecodable bytes become \xNN escapes instead.
void set_error(PyObject* type, const char* message) {
  PyObject* text = PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "backslashreplace");
  if (text == nullptr) {  // only on memory exhaustion; keep whatever Python raised
    return;
  }
  PyErr_SetObject(type, text);
  Py_DECREF(text);
}

bool valid_utf8(const char* message) {
  PyObject* text = PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "strict");
  if (text == nullptr) {
    PyErr_Clear();
    return false;
  }
  Py_DECREF(text);
  return true;
}

}  // namespace

void register_errors(py::module_& m) {
  py::module_ errors = py::module_::import("verl.errors");
  g_errors = {lookup(errors, "VerlError"),  lookup(errors, "ConfigError"),        lookup(errors, "ConfigTypeError"),
              lookup(errors, "DataError"),  lookup(errors, "InvalidArgumentError"), lookup(errors, "VerlTypeError"),
              lookup(errors, "CheckpointError"), lookup(errors, "DistributedError")};
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ConfigTypeError& e) {  // most derived first
      set_error(g_errors.config_type, e.what());
    } catch (const ConfigError& e) {
      set_error(g_errors.config, e.what());
    } catch (const DataError& e) {
      set_error(g_errors.data, e.what());
    } catch (const InvalidArgument& e) {
      set_error(g_errors.invalid_argument, e.what());
    } catch (const TypeMismatch& e) {
      set_error(g_errors.type_mismatch, e.what());
    } catch (const CheckpointError& e) {
      set_error(g_errors.checkpoint, e.what());
    } catch (const DistributedError& e) {
      set_error(g_errors.distributed, e.what());
    } catch (const Error& e) {
      set_error(g_errors.base, e.what());
    } catch (const std::exception& e) {
      // Other libraries' exceptions go to the translators registered before this one (pybind11's,
      // LibTorch's), except when their message would not decode: then RuntimeError, escaped.
      if (valid_utf8(e.what())) throw;
      set_error(PyExc_RuntimeError, e.what());
    }
  });
  // Lets tests (and users debugging a binding) see the mapping from the C++ side.
  m.def("_raise_for_test", [](const std::string& kind, const std::string& message) {
    if (kind == "ConfigError") throw ConfigError(message);
    if (kind == "ConfigTypeError") throw ConfigTypeError(message);
    if (kind == "DataError") throw DataError(message);
    if (kind == "InvalidArgument") throw InvalidArgument(message);
    if (kind == "TypeMismatch") throw TypeMismatch(message);
    if (kind == "CheckpointError") throw CheckpointError(message);
    if (kind == "DistributedError") throw DistributedError(message);
    if (kind == "Error") throw Error(message);
    VERL_FAIL(InvalidArgument, "unknown error kind '", kind, "'");
  }, py::arg("kind"), py::arg("message"), "Throws the named C++ exception (to test the mapping).");
}

}  // namespace verl::bindings
