// verl::version(): the version this libverl was built as.
#include "verl/core/version.h"

namespace verl {
const char* version() { return VERL_VERSION_STRING; }
}  // namespace verl
