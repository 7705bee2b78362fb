// `gpunode runtime revert`: puts back the exact original bytes of every file `configure` touched
// (deleting those it created), as recorded in the ledger beside the config.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/configure.h"

namespace gpunode::runtime {

struct RevertAction {
  enum class Kind { kRestore, kDelete, kAlreadyOriginal };
  Kind kind;
  std::string path;
  std::string backup;  // kRestore: where the original bytes come from
};

struct RevertResult {
  bool had_record = false;  // false: nothing to revert (never configured, or already reverted)
  std::string ledger_path;
  std::vector<RevertAction> actions;
  bool wrote = false;
};

// Takes the same options as configure; the ledger decides what is restored. FailedPrecondition,
// with nothing written, when a file changed since gpunode wrote it (restoring would lose that).
absl::StatusOr<RevertResult> Revert(const ConfigureOptions& options);

}  // namespace gpunode::runtime
