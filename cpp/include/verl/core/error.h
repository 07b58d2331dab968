// Typed exceptions for every failure libverl reports, and the VERL_CHECK macro that raises them.
// Used by all of libverl; bindings/errors.cpp maps each class to its Python exception.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include "verl/core/export.h"

namespace verl {

// Base of every exception libverl throws on purpose. Python: verl.VerlError (RuntimeError).
class VERL_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A bad configuration: unknown key, wrong value, failed interpolation, malformed YAML.
// Python: verl.ConfigError (ValueError). The message names the key (and file:line for YAML).
class VERL_API ConfigError : public Error {
 public:
  using Error::Error;
};

// A config value of the wrong type (a string where an int belongs, ...).
// Python: verl.ConfigTypeError (ConfigError and TypeError).
class VERL_API ConfigTypeError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// Data that does not fit the operation: mismatched batch sizes, missing keys, bad indices,
// sizes that do not divide. Python: verl.DataError (ValueError).
class VERL_API DataError : public Error {
 public:
  using Error::Error;
};

// A bad argument to a function: out-of-range parameter, wrong shape or dtype.
// Python: verl.InvalidArgumentError (ValueError).
class VERL_API InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A value of the wrong kind for the operation (e.g. a non-tensor that cannot be serialised).
// Python: verl.VerlTypeError (TypeError).
class VERL_API TypeMismatch : public Error {
 public:
  using Error::Error;
};

// A checkpoint or data file that cannot be read or written: missing, truncated, corrupt.
// Python: verl.CheckpointError (RuntimeError). The message names the file.
class VERL_API CheckpointError : public Error {
 public:
  using Error::Error;
};

// A collective among the ranks of a multi-process job failed: a rank died or hung (past the timeout), or the
// ranks disagreed on the call. Python: verl.DistributedError (RuntimeError). The message names the collective
// and this rank.
class VERL_API DistributedError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat_message(Args&&... args) {
  std::ostringstream out;
  (out << ... << std::forward<Args>(args));
  return out.str();
}
}  // namespace detail

// Builds the message from any streamable pieces: VERL_FAIL(DataError, "key ", k, " missing").
#define VERL_FAIL(ErrorType, ...) throw ::verl::ErrorType(::verl::detail::concat_message(__VA_ARGS__))

// VERL_CHECK(cond, pieces...) throws verl::InvalidArgument; VERL_CHECK_AS picks the class.
#define VERL_CHECK_AS(ErrorType, cond, ...)    \
  do {                                         \
    if (!(cond)) VERL_FAIL(ErrorType, __VA_ARGS__); \
  } while (0)
#define VERL_CHECK(cond, ...) VERL_CHECK_AS(InvalidArgument, cond, __VA_ARGS__)

}  // namespace verl
