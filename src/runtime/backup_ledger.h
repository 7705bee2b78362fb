// The record `gpunode runtime configure` keeps beside the config (`<config>.gpunode.json`): which
// files it wrote, where their original bytes are (`<file>.gpunode.bak`) or that it created them,
// and a hash of what it wrote. `revert` works from it alone; a rerun never takes a second backup,
// and neither command overwrites a file that changed since gpunode wrote it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace gpunode::runtime {

struct LedgerEntry {
  std::string path;
  bool existed = false;  // false: gpunode created the file and revert deletes it
  std::string backup;    // the original bytes, when the file existed
  uint64_t written_hash = 0;
  uint64_t written_size = 0;
};

struct Ledger {
  std::string mode;     // "drop-in" or "in-place"
  std::string drop_in;  // the drop-in path in drop-in mode
  std::vector<LedgerEntry> files;
  std::vector<std::string> created_dirs;  // outermost first

  LedgerEntry* Find(const std::string& path);
  const LedgerEntry* Find(const std::string& path) const;
};

std::string LedgerPath(const std::string& config_path);
std::string BackupPath(const std::string& path);

// FNV-1a: enough to tell whether a file still holds exactly what gpunode wrote.
uint64_t ContentHash(std::string_view bytes);

// What a file holds now; nullopt when it does not exist.
absl::StatusOr<std::optional<std::string>> ReadIfExists(const std::string& path);

// nullopt when there is no ledger; InvalidArgument when it cannot be read or understood.
absl::StatusOr<std::optional<Ledger>> ReadLedger(const std::string& config_path);
absl::Status WriteLedger(const std::string& config_path, const Ledger& ledger);

// True if `current` (nullopt: absent) is what gpunode last wrote to the entry's file.
bool HoldsWritten(const LedgerEntry& entry, const std::optional<std::string>& current);

}  // namespace gpunode::runtime
