// Reading the small JSON files of a checkpoint directory (config.json, model.safetensors.index.json)
// as untrusted input: a size cap, no std::filesystem call that can throw, the depth-limited parser
// (core/untrusted.h), and paths escaped before they go into a message. Used by model_config.cpp,
// safetensors.cpp and checkpoint.cpp. Private to libverl.
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "core/untrusted.h"
#include "verl/core/error.h"
#include "verl/core/json.h"

namespace verl::model {

// Paths go into messages through untrusted::display_path (bytes that are not UTF-8 escaped).
using untrusted::display_path;

// config.json and index files are a few kB to a few MB; anything past this is not one of them, and
// reading it whole would only exhaust memory. (HF safetensors caps its JSON header at 100 MB too.)
inline constexpr uint64_t kMaxJsonFileBytes = 100'000'000;

// Reads and parses the JSON file `path`: ErrorT("<what> '<path>' ...") when it is missing, not a
// regular file, larger than kMaxJsonFileBytes, unreadable, not JSON, or nested too deeply.
template <typename ErrorT>
Json read_json_file(const std::filesystem::path& path, const char* what) {
  using detail::concat_message;  // VERL_FAIL names a class of namespace verl, not a template parameter
  const std::string shown = std::string(what) + " '" + display_path(path) + "'";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw ErrorT(concat_message("cannot open ", shown, ": ", std::strerror(errno)));
  if (!S_ISREG(st.st_mode)) throw ErrorT(concat_message("cannot read ", shown, ": not a regular file"));
  if (static_cast<uint64_t>(st.st_size) > kMaxJsonFileBytes)
    throw ErrorT(concat_message(shown, " is ", st.st_size, " bytes, more than any ", what, " (limit ",
                                kMaxJsonFileBytes, ")"));
  std::string error;
  std::optional<std::string> text = untrusted::try_read_file(path.string(), error);
  if (!text) throw ErrorT(concat_message("cannot read ", shown, ": ", error));
  return untrusted::parse_json<ErrorT>(*text, shown, "file");
}

}  // namespace verl::model
