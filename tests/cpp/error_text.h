// Test helper: the message of the exception an action throws, for CHECK_THAT(..., Contains(...)).
#pragma once

#include <exception>
#include <string>

// The what() of the std::exception `fn` throws, or "" when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
