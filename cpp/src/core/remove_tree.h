// remove_tree: what std::filesystem::remove_all does, done with POSIX nftw instead.
// Used by model/checkpoint.cpp (replacing and cleaning up checkpoint directories) and the C++ tests' temp dirs.
#pragma once

#include <ftw.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

// Why not std::filesystem::remove_all: PyTorch's Linux wheels link parts of libstdc++'s <filesystem> into
// libtorch statically and export them, and libtorch comes before libstdc++.so.6 in a process's symbol lookup
// order, so our calls to those functions run torch's copies. torch 2.11's libtorch.so has a remove_all that calls
// recursive_directory_iterator::__erase through a weak reference, which stays null wherever the system
// libstdc++ lacks that function (gcc < 13, e.g. Debian 12): removing a non-empty directory jumped to address 0
// (the five SIGSEGVs of issue 21; `make test-compat COMPAT_TORCH=2.11.0` shows them). Header-only so that the
// tests use the same code without libverl exporting it.
namespace verl {

namespace detail {
inline thread_local std::uintmax_t remove_tree_count = 0;

inline int remove_tree_entry(const char* path, const struct stat*, int, struct FTW*) {
  if (std::remove(path) != 0) return errno;  // files, symlinks and (emptied, FTW_DEPTH) directories alike
  ++remove_tree_count;
  return 0;
}
}  // namespace detail

// Removes `path` and everything below it, not following symlinks (a link is removed, not its target). Returns the
// number of entries removed; a path that does not exist removes nothing and is no error. On failure sets `ec`
// (the first error; what was removed before it stays removed) and returns static_cast<std::uintmax_t>(-1).
inline std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& ec) {
  ec.clear();
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return 0;
    ec.assign(errno, std::generic_category());
    return static_cast<std::uintmax_t>(-1);
  }
  detail::remove_tree_count = 0;
  const int rc = ::nftw(path.c_str(), detail::remove_tree_entry, 16, FTW_DEPTH | FTW_PHYS);
  if (rc != 0) {
    ec.assign(rc > 0 ? rc : errno, std::generic_category());
    return static_cast<std::uintmax_t>(-1);
  }
  return detail::remove_tree_count;
}

// As above, but throws std::system_error naming the path on failure.
inline std::uintmax_t remove_tree(const std::filesystem::path& path) {
  std::error_code ec;
  const std::uintmax_t n = remove_tree(path, ec);
  if (ec) throw std::system_error(ec, "cannot remove '" + path.string() + "'");
  return n;
}

}  // namespace verl
