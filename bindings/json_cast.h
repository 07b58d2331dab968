// Conversion between Python objects and verl::Json (config values, non-tensor cells, meta_info).
#pragma once

#include <string>

#include "bindings.h"
#include "verl/core/json.h"

namespace verl::bindings {

// None/bool/int/float/str, lists/tuples, dicts with str keys, numpy scalars and arrays (as lists).
// Anything else throws verl::TypeMismatch naming `where` and the Python type.
Json to_json(py::handle obj, const std::string& where);
py::object to_python(const Json& value);

}  // namespace verl::bindings
