// Directories written whole or not at all (see staged_directory.h).
#include "staged_directory.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/remove_tree.h"
#include "core/untrusted.h"
#include "verl/core/error.h"

namespace verl::model::detail {
namespace fs = std::filesystem;
using untrusted::display_path;

std::string errno_text() { return std::strerror(errno); }

void write_synced(const fs::path& path, const std::string& bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  VERL_CHECK_AS(CheckpointError, f != nullptr, "cannot write '", display_path(path), "': ", errno_text());
  bool ok = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  ok = (std::fclose(f) == 0) && ok;
  VERL_CHECK_AS(CheckpointError, ok, "cannot write '", display_path(path), "': ", std::strerror(saved));
}

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  VERL_CHECK_AS(CheckpointError, in.good(), "cannot read '", display_path(path), "'");
  std::ostringstream out;
  out << in.rdbuf();
  VERL_CHECK_AS(CheckpointError, !in.bad(), "cannot read '", display_path(path), "'");
  return out.str();
}

void fsync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;  // best effort: the data files themselves are already synced
  ::fsync(fd);
  ::close(fd);
}

fs::path sibling(const fs::path& dir, const std::string& tag) {
  static std::atomic<uint64_t> counter{0};
  std::ostringstream name;
  name << '.' << dir.filename().string() << '.' << tag << '-' << ::getpid() << '-' << counter++;
  return dir.parent_path() / name.str();
}

void commit_directory(const fs::path& staging, const fs::path& target) {
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(target, ec));
  if (!exists) {
    VERL_CHECK_AS(CheckpointError, std::rename(staging.c_str(), target.c_str()) == 0, "cannot move '",
                  display_path(staging), "' to '", display_path(target), "': ", errno_text());
    fsync_dir(target.parent_path());
    return;
  }
  VERL_CHECK_AS(CheckpointError, fs::is_directory(fs::symlink_status(target, ec)), "cannot save to '",
                display_path(target), "': it exists and is not a directory");
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) == 0) {
    fsync_dir(target.parent_path());
    remove_tree(staging, ec);  // now the previous directory
    return;
  }
  VERL_CHECK_AS(CheckpointError, errno == EINVAL || errno == ENOSYS || errno == ENOTSUP, "cannot replace '",
                display_path(target), "' with '", display_path(staging), "': ", errno_text());
#endif
  const fs::path old = sibling(target, "old");
  VERL_CHECK_AS(CheckpointError, std::rename(target.c_str(), old.c_str()) == 0, "cannot move '", display_path(target),
                "' aside to '", display_path(old), "': ", errno_text());
  if (std::rename(staging.c_str(), target.c_str()) != 0) {
    const std::string why = errno_text();
    std::rename(old.c_str(), target.c_str());  // put the previous directory back
    VERL_FAIL(CheckpointError, "cannot move '", display_path(staging), "' to '", display_path(target), "': ", why);
  }
  fsync_dir(target.parent_path());
  remove_tree(old, ec);
}

StagingGuard::~StagingGuard() {
  if (committed) return;
  std::error_code ec;
  remove_tree(path, ec);
}

}  // namespace verl::model::detail
