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

namespace gpunode::runtime {
namespace {

namespace fs = std::filesystem;

absl::StatusOr<RevertAction> Plan(const LedgerEntry& entry, const std::string& ledger_path) {
  ASSIGN_OR_RETURN(std::optional<std::string> current, ReadIfExists(entry.path));
  if (!entry.existed) {
    if (!current) return RevertAction{RevertAction::Kind::kAlreadyOriginal, entry.path, ""};
    if (HoldsWritten(entry, current))
      return RevertAction{RevertAction::Kind::kDelete, entry.path, ""};
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

}  // namespace

absl::StatusOr<RevertResult> Revert(const ConfigureOptions& options) {
  RETURN_IF_ERROR(ValidateOptions(options, !options.drop_in.empty()));
  RevertResult result;
  const std::string config_path = containerd::NormalPath(options.config_path);
  result.ledger_path = LedgerPath(config_path);
  ASSIGN_OR_RETURN(std::optional<Ledger> ledger, ReadLedger(config_path));
  if (!ledger) return result;
  result.had_record = true;
  // Every file is checked before any is touched: revert is all or nothing.
  // In reverse write order: the main config drops its import before the drop-in goes.
  for (auto entry = ledger->files.rbegin(); entry != ledger->files.rend(); ++entry) {
    ASSIGN_OR_RETURN(RevertAction action, Plan(*entry, result.ledger_path));
    result.actions.push_back(std::move(action));
  }
  if (options.dry_run) return result;

  for (auto it = result.actions.begin(); it != result.actions.end(); ++it) {
    if (it->kind == RevertAction::Kind::kRestore) {
      ASSIGN_OR_RETURN(std::string original, core::ReadFile(it->backup));
      struct stat st {};
      mode_t mode = ::stat(it->path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
      RETURN_IF_ERROR(
          core::WriteFileAtomic(it->path, original, {.mode = mode, .backup_existing = false}));
    } else if (it->kind == RevertAction::Kind::kDelete && ::unlink(it->path.c_str()) != 0 &&
               errno != ENOENT) {
      return absl::InternalError(absl::StrCat(it->path, ": cannot delete: ", std::strerror(errno)));
    }
  }
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
  result.wrote = true;
  return result;
}

}  // namespace gpunode::runtime
