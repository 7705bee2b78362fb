#include "runtime/revert.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "containerd/import_chain.h"
#include "core/file_io.h"
#include "core/status_macros.h"
#include "runtime/backup_ledger.h"
#include "runtime/dangling_import.h"
#include "runtime/drop_in.h"

namespace gpunode::runtime {
namespace {

namespace fs = std::filesystem;

// `base`, or `base.N` for the first N that names nothing yet: a set-aside copy never replaces
// another.
std::string UnusedPath(const std::string& base) {
  std::string candidate = base;
  struct stat st {};
  for (int n = 1; ::lstat(candidate.c_str(), &st) == 0; ++n) candidate = absl::StrCat(base, ".", n);
  return candidate;
}

// Where an edited drop-in is kept: beside the main config, where gpunode's other backups are, and
// out of any glob import (`conf.d/*`) that would make containerd read it again.
std::string SetAsidePath(const std::string& drop_in, const std::string& config_path) {
  return UnusedPath((fs::path(config_path).parent_path() /
                     absl::StrCat(fs::path(drop_in).filename().string(), ".edited.gpunode.bak"))
                        .string());
}

absl::StatusOr<RevertAction> Plan(const LedgerEntry& entry, const Ledger& ledger,
                                  const std::string& config_path, const std::string& ledger_path) {
  ASSIGN_OR_RETURN(std::optional<std::string> current, ReadIfExists(entry.path));
  if (!entry.existed) {
    if (!current) return RevertAction{RevertAction::Kind::kAlreadyOriginal, entry.path, ""};
    if (HoldsWritten(entry, current))
      return RevertAction{RevertAction::Kind::kDelete, entry.path, ""};
    if (ledger.mode == kModeDropIn && entry.path == ledger.drop_in) {
      return RevertAction{RevertAction::Kind::kSetAside, entry.path,
                          SetAsidePath(entry.path, config_path)};
    }
    return absl::FailedPreconditionError(
        absl::StrCat(entry.path,
                     ": gpunode created it but it changed since, so revert would lose those "
                     "changes; nothing reverted. Delete it by hand, then remove ",
                     ledger_path));
  }
  ASSIGN_OR_RETURN(std::optional<std::string> original, ReadIfExists(entry.backup));
  if (!original) {
    return absl::FailedPreconditionError(absl::StrCat(
        entry.backup, ": the backup of ", entry.path,
        " is missing, so its original bytes are gone; nothing reverted. Fix the file by hand, "
        "then remove ",
        ledger_path));
  }
  if (current == original) {
    return RevertAction{RevertAction::Kind::kAlreadyOriginal, entry.path, entry.backup};
  }
  if (HoldsWritten(entry, current)) {
    return RevertAction{RevertAction::Kind::kRestore, entry.path, entry.backup};
  }
  return absl::FailedPreconditionError(absl::StrCat(
      entry.path, ": changed since gpunode wrote it, so restoring ", entry.backup,
      " would lose those changes; nothing reverted. Merge them into the backup and copy it back, "
      "then remove ",
      ledger_path));
}

const RevertAction* ActionOn(const std::vector<RevertAction>& actions, const std::string& path) {
  for (const RevertAction& action : actions) {
    if (action.path == path) return &action;
  }
  return nullptr;
}

// What a file will hold once `actions` ran (nullopt: absent), so that a dry run sees the repair
// a real revert would make.
absl::StatusOr<std::optional<std::string>> AfterActions(const std::vector<RevertAction>& actions,
                                                        const std::string& path) {
  const RevertAction* action = ActionOn(actions, path);
  if (action == nullptr || action->kind == RevertAction::Kind::kAlreadyOriginal) {
    return ReadIfExists(path);
  }
  if (action->kind == RevertAction::Kind::kRestore) return ReadIfExists(action->backup);
  return std::optional<std::string>();
}

absl::Status Execute(const RevertAction& action) {
  switch (action.kind) {
    case RevertAction::Kind::kRestore: {
      ASSIGN_OR_RETURN(std::string original, core::ReadFile(action.backup));
      struct stat st {};
      mode_t mode = ::stat(action.path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
      return core::WriteFileAtomic(action.path, original, mode, core::Backup::kNone);
    }
    case RevertAction::Kind::kSetAside: {
      // A copy first, then the unlink: whatever happens in between, the edits exist somewhere.
      ASSIGN_OR_RETURN(std::string edited, core::ReadFile(action.path));
      struct stat st {};
      mode_t mode = ::stat(action.path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
      RETURN_IF_ERROR(core::WriteFileAtomic(action.backup, edited, mode, core::Backup::kNone));
      [[fallthrough]];
    }
    case RevertAction::Kind::kDelete:
      if (::unlink(action.path.c_str()) != 0 && errno != ENOENT) {
        return absl::InternalError(
            absl::StrCat(action.path, ": cannot delete: ", std::strerror(errno)));
      }
      return absl::OkStatus();
    case RevertAction::Kind::kAlreadyOriginal:
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RevertResult> Revert(const ConfigureOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options, !options.drop_in.empty()));
  RevertResult result;
  const std::string config_path = containerd::NormalPath(options.config_path);
  result.ledger_path = LedgerPath(config_path);
  ASSIGN_OR_RETURN(std::optional<Ledger> ledger, ReadLedger(config_path));
  result.had_record = ledger.has_value();
  if (ledger) {
    // Every file is checked before any is touched: revert is all or nothing.
    // In reverse write order: the main config drops its import before the drop-in goes.
    for (auto entry = ledger->files.rbegin(); entry != ledger->files.rend(); ++entry) {
      ASSIGN_OR_RETURN(RevertAction action, Plan(*entry, *ledger, config_path, result.ledger_path));
      result.actions.push_back(std::move(action));
    }
  }

  // Whatever the ledger says (or when there is none: it may have been removed by hand), the config
  // must not be left importing gpunode's drop-in once that is gone.
  const std::string drop_in = containerd::NormalPath(
      ledger && ledger->mode == kModeDropIn
          ? ledger->drop_in
          : (options.drop_in.empty() ? DefaultDropInPath(config_path) : options.drop_in));
  ASSIGN_OR_RETURN(std::optional<std::string> config_after,
                   AfterActions(result.actions, config_path));
  ASSIGN_OR_RETURN(std::optional<std::string> drop_in_after, AfterActions(result.actions, drop_in));
  std::optional<DanglingImport> dangling;
  if (config_after) {
    ASSIGN_OR_RETURN(dangling, FindDanglingImport(config_path, *config_after, drop_in,
                                                  drop_in_after.has_value()));
  }
  if (dangling) {
    result.repair =
        ImportRepair{config_path, dangling->drop_in,
                     UnusedPath(absl::StrCat(config_path, ".dangling-import.gpunode.bak"))};
  }
  if (options.dry_run || (!ledger && !dangling)) return result;

  for (const RevertAction& action : result.actions) RETURN_IF_ERROR(Execute(action));
  if (dangling) {
    // The bytes before the repair are kept: the operator may want to see what changed.
    ASSIGN_OR_RETURN(std::string before, core::ReadFile(config_path));
    struct stat st {};
    mode_t mode = ::stat(config_path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
    RETURN_IF_ERROR(
        core::WriteFileAtomic(result.repair->backup, before, mode, core::Backup::kNone));
    RETURN_IF_ERROR(
        core::WriteFileAtomic(config_path, dangling->repaired_text, mode, core::Backup::kNone));
  }
  if (ledger) {
    for (const LedgerEntry& entry : ledger->files) {
      if (entry.existed) ::unlink(entry.backup.c_str());
    }
    for (auto it = ledger->created_dirs.rbegin(); it != ledger->created_dirs.rend(); ++it) {
      std::error_code ec;
      if (fs::is_empty(*it, ec) && !ec) fs::remove(*it, ec);  // never a directory others now use
    }
    if (::unlink(result.ledger_path.c_str()) != 0 && errno != ENOENT) {
      return absl::InternalError(
          absl::StrCat(result.ledger_path, ": cannot delete: ", std::strerror(errno)));
    }
  }
  result.wrote = true;
  return result;
}

}  // namespace gpunode::runtime
