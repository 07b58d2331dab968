#include "verl/core/config_default.h"

#include "verl/core/config.h"

namespace verl {

Json config_default(const std::string& key) {
  static const Config defaults;  // parsed once; get() only reads it
  return defaults.get(key);
}

}  // namespace verl
