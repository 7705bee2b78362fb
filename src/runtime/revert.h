// `gpunode runtime revert`: puts back the exact original bytes of every file `configure` touched
// (deleting those it created), as recorded in the ledger beside the config, and leaves a config
// containerd can load: a drop-in edited by hand is set aside rather than blocking the revert, and
// an import of gpunode's drop-in that no longer exists is taken out.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "runtime/configure.h"

namespace gpunode::runtime {

struct RevertAction {
  // kSetAside: the drop-in gpunode created was edited since; it is moved to `backup` so that the
  // edits survive and containerd no longer reads it.
  enum class Kind { kRestore, kDelete, kSetAside, kAlreadyOriginal };
  Kind kind;
  std::string path;
  std::string backup;  // kRestore: where the original bytes come from; kSetAside: where they go
};

// The main config imports gpunode's drop-in, which does not exist (after the actions): the import
// is taken out, the config's previous bytes kept in `backup`.
struct ImportRepair {
  std::string config_path;
  std::string drop_in;
  std::string backup;
};

struct RevertResult {
  bool had_record = false;  // false: no ledger (never configured, or already reverted)
  std::string ledger_path;
  std::vector<RevertAction> actions;
  std::optional<ImportRepair> repair;
  bool wrote = false;
};

// Takes the same options as configure; the ledger decides what is restored, and the ledger's
// drop-in (else --drop-in, else the default one) which dangling import is repaired.
// FailedPrecondition, with nothing written, when a file other than the drop-in changed since
// gpunode wrote it (restoring would lose that).
absl::StatusOr<RevertResult> Revert(const ConfigureOptions& options);

}  // namespace gpunode::runtime
