// Registry: functions registered under a name (advantage estimators, policy losses, ...), as
// verl's register_adv_est / register_policy_loss. Used by verl/algo and the Python bindings
// (which register Python callables too).
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "verl/core/error.h"

namespace verl {

template <typename Fn>
class Registry {
 public:
  // `kind` names the registry in errors ("advantage estimator", "policy loss").
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}

  // Registers fn under name. `identity` tells whether two registrations are the same function
  // (a C++ function pointer, a Python object): registering the same one again is a no-op,
  // another one under a taken name throws InvalidArgument.
  void add(const std::string& name, Fn fn, const void* identity) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it != entries_.end()) {
      VERL_CHECK(it->second.identity == identity, kind_, " '", name,
                 "' has already been registered with a different function");
      return;
    }
    entries_.emplace(name, Entry{std::move(fn), identity});
  }

  // The function registered under name; InvalidArgument listing the known names otherwise.
  Fn get(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      std::string known;
      for (const auto& [k, v] : entries_) known += (known.empty() ? "" : ", ") + k;
      VERL_FAIL(InvalidArgument, "Unknown ", kind_, " '", name, "'; registered: ", known);
    }
    return it->second.fn;
  }

  bool contains(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.count(name) != 0;
  }

  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::string> out;
    for (const auto& [k, v] : entries_) out.push_back(k);
    return out;
  }

 private:
  struct Entry {
    Fn fn;
    const void* identity;
  };
  std::string kind_;
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
};

}  // namespace verl
