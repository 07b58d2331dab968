// Scratch files for the fuzz targets (see fuzz_common.h).
#include "fuzz_common.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace verl::fuzz {

std::string scratch_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    auto path = std::filesystem::path(base ? base : "/tmp") / ("verl-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(path);
    return path.string();
  }();
  return dir;
}

std::string write_scratch(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace verl::fuzz
