// What every libFuzzer target of verl-cpp checks besides memory safety (ASan/UBSan): a bad input
// ends in one of libverl's typed exceptions (verl::Error and its classes), never in another
// library's exception (nlohmann, yaml-cpp, std::filesystem, c10) -- those are "errors of the wrong
// type" (issue 21) and abort the run like a crash, so the fuzzer reports and minimises them.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::fuzz {

template <typename F>
void expect_typed_errors(F&& body) {
  try {
    body();
  } catch (const verl::Error& e) {
    // Messages must be printable as they are: valid UTF-8 whatever bytes the input held.
    if (!untrusted::is_utf8(e.what())) {
      std::fprintf(stderr, "verl error message is not UTF-8: %s\n", untrusted::escape(e.what(), 400).c_str());
      std::abort();
    }
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "allocation failure: an allocation sized by untrusted input\n");
    std::abort();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "wrong-type exception escaped: %s\n", untrusted::escape(e.what(), 400).c_str());
    std::abort();
  }
}

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

inline std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = text.find('\n', start);
    lines.emplace_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return lines;
}

// A scratch directory for targets whose API reads files (one per process, reused per input).
std::string scratch_dir();
// Writes `bytes` to `name` inside scratch_dir() and returns the path.
std::string write_scratch(const std::string& name, std::string_view bytes);

}  // namespace verl::fuzz
