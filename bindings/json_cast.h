// Conversion between Python objects and verl::Json (config values, non-tensor cells, meta_info).
#pragma once

#include <string>

#include "bindings.h"
#include "verl/core/json.h"

namespace verl::bindings {

// None/bool/int/float/str, lists/tuples, dicts with str keys, numpy scalars and arrays (as lists).
// Anything else (or nesting deeper than 128 levels) throws verl::TypeMismatch naming `where` and the
// Python type; a str that is not valid text (lone surrogates) throws verl::InvalidArgument.
Json to_json(py::handle obj, const std::string& where);
py::object to_python(const Json& value);

// The UTF-8 bytes of a Python str; verl::InvalidArgument naming `where` if it holds lone surrogates
// (pybind11's own std::string conversion would report them as "incompatible function arguments").
std::string utf8_text(py::handle str, const std::string& where);

}  // namespace verl::bindings
