// Directories written whole or not at all: files go into a hidden sibling staging directory, fsynced, and the staging
// directory then replaces the target in one rename (RENAME_EXCHANGE where the filesystem has it). Used by
// save_pretrained (checkpoint.cpp) and the PEFT adapter writer (peft_adapter.cpp). Private to libverl.
#pragma once

#include <filesystem>
#include <string>

namespace verl::model::detail {

// strerror(errno).
std::string errno_text();
// The whole file, fsynced, so that a completed save survives a crash before the directory swap. CheckpointError.
void write_synced(const std::filesystem::path& path, const std::string& bytes);
// The whole file's bytes. CheckpointError.
std::string read_all(const std::filesystem::path& path);
// Best effort: the data files themselves are synced already.
void fsync_dir(const std::filesystem::path& dir);
// A hidden, unique sibling of `dir`: .<name>.<tag>-<pid>-<n>.
std::filesystem::path sibling(const std::filesystem::path& dir, const std::string& tag);
// Puts the complete `staging` directory at `target`. An existing target is exchanged atomically where the filesystem
// supports RENAME_EXCHANGE; otherwise it is moved aside first, so that at every instant either the old or the new
// directory exists under one of the two names. CheckpointError when `target` exists and is not a directory.
void commit_directory(const std::filesystem::path& staging, const std::filesystem::path& target);

// Removes the staging directory unless the save committed it.
struct StagingGuard {
  std::filesystem::path path;
  bool committed = false;
  ~StagingGuard();
};

}  // namespace verl::model::detail
