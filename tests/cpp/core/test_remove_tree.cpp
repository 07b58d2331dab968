// verl::remove_tree (core/remove_tree.h): std::filesystem::remove_all's behaviour, and that nothing calls the latter.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "core/remove_tree.h"

namespace fs = std::filesystem;

namespace {

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("verl_test_remove_tree_" + std::to_string(::getpid())) / name;
  verl::remove_tree(dir);
  fs::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("remove_tree: removes a nested directory and counts what it removed", "[core]") {
  const fs::path dir = fresh_dir("nested");
  fs::create_directories(dir / "a" / "b");
  std::ofstream(dir / "top.txt") << "x";
  std::ofstream(dir / "a" / "b" / "deep.txt") << "y";
  CHECK(verl::remove_tree(dir) == 5);  // dir, a, a/b and two files
  CHECK_FALSE(fs::exists(dir));
}

TEST_CASE("remove_tree: a symlink is removed, not followed", "[core]") {
  const fs::path dir = fresh_dir("links");
  const fs::path outside = fresh_dir("outside");
  std::ofstream(outside / "keep.txt") << "keep";
  fs::create_directory_symlink(outside, dir / "to_outside");
  CHECK(verl::remove_tree(dir) == 2);
  CHECK_FALSE(fs::exists(dir));
  CHECK(fs::exists(outside / "keep.txt"));
  verl::remove_tree(outside.parent_path());
}

TEST_CASE("remove_tree: a missing path is no error, a file is removed, a bad path sets the error", "[core]") {
  const fs::path dir = fresh_dir("edge");
  std::error_code ec;
  CHECK(verl::remove_tree(dir / "missing", ec) == 0);
  CHECK_FALSE(ec);
  std::ofstream(dir / "file.txt") << "z";
  CHECK(verl::remove_tree(dir / "file.txt", ec) == 1);
  CHECK_FALSE(fs::exists(dir / "file.txt"));
  std::ofstream(dir / "file.txt") << "z";
  CHECK(verl::remove_tree(dir / "file.txt" / "below", ec) == static_cast<std::uintmax_t>(-1));
  CHECK(ec == std::errc::not_a_directory);
  CHECK_THROWS_AS(verl::remove_tree(dir / "file.txt" / "below"), std::system_error);
  verl::remove_tree(dir.parent_path());
}

// std::filesystem::remove_all runs the copy that PyTorch's wheels export from libtorch, and torch 2.11's crashes
// on a system libstdc++ older than gcc 13 (core/remove_tree.h says why): no code of ours may call it.
TEST_CASE("remove_tree: no source calls std::filesystem::remove_all", "[core]") {
  const fs::path root = VERL_SOURCE_DIR;
  const std::string needle = std::string("remove") + "_all(";  // split so that this file does not match itself
  int scanned = 0;
  for (const char* area : {"cpp", "bindings", "tests/cpp", "tests/fuzz", "examples"}) {
    if (!fs::exists(root / area)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / area)) {
      const std::string ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".cpp" && ext != ".h" && ext != ".cu")) continue;
      std::ifstream in(entry.path());
      std::string line;
      for (int number = 1; std::getline(in, line); ++number)
        if (line.find(needle) != std::string::npos) FAIL_CHECK(entry.path().string() << ":" << number << ": " << line);
      ++scanned;
    }
  }
  CHECK(scanned > 50);
}
