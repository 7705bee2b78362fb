#include "runtime/configure.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <optional>

#include "absl/strings/str_cat.h"
#include "containerd/containerd_config.h"
#include "containerd/import_chain.h"
#include "core/file_io.h"
#include "core/status_macros.h"
#include "runtime/backup_ledger.h"
#include "runtime/drop_in.h"
#include "runtime/imports_splice.h"
#include "runtime/toml_text_edit.h"

namespace gpunode::runtime {
namespace {

namespace fs = std::filesystem;

mode_t FileMode(const std::string& path, mode_t fallback) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : fallback;
}

std::string PluginKey(const std::string& plugin) {
  return absl::StrCat("plugins.", containerd::FormatTomlKey(plugin));
}

// The CRI table containerd ends up with from the files merged before the drop-in (before 2.1 each
// file that sets the plugin replaces its whole table), refusing when a later file would hide it.
absl::StatusOr<toml::table> CriBeforeDropIn(const containerd::ImportChain& chain,
                                            const std::string& plugin, const std::string& drop_in) {
  toml::table source;
  for (size_t i = 0; i < chain.files.size(); ++i) {
    if (i == chain.drop_in_index) continue;
    const toml::table* cri = containerd::FindTable(chain.files[i].doc, {"plugins", plugin});
    if (cri == nullptr) continue;
    if (i > chain.drop_in_index) {
      return absl::InvalidArgumentError(absl::StrCat(
          chain.files[i].path, ": sets ", PluginKey(plugin), " and containerd reads it after ",
          drop_in, ", so it would hide the nvidia handler; move those settings into ",
          chain.files[0].path, " or pass a --drop-in that sorts after it"));
    }
    source = *cri;
  }
  return source;
}

absl::StatusOr<std::string> InPlaceText(const containerd::ContainerdConfig& main,
                                        const std::string& plugin,
                                        const std::optional<Ledger>& ledger,
                                        const HandlerRequest& handler) {
  ASSIGN_OR_RETURN(containerd::ImportChain chain, containerd::ResolveImportChain(main, ""));
  for (size_t i = 1; i < chain.files.size(); ++i) {
    if (containerd::FindTable(chain.files[i].doc, {"plugins", plugin}) != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          chain.files[i].path, ": sets ", PluginKey(plugin), " and replaces that table of ",
          main.path, " when containerd merges it; configure that file instead (--config ",
          chain.files[i].path, " --in-place)"));
    }
  }
  // What the operator had before gpunode's first edit decides which defaults gpunode owns.
  toml::table original = main.doc;
  if (ledger) {
    if (const LedgerEntry* entry = ledger->Find(main.path); entry && entry->existed) {
      ASSIGN_OR_RETURN(std::string backup, core::ReadFile(entry->backup));
      ASSIGN_OR_RETURN(original, containerd::ParseToml(backup, entry->backup));
    }
  }
  const toml::table* current_cri = containerd::FindTable(main.doc, {"plugins", plugin});
  const toml::table* original_cri = containerd::FindTable(original, {"plugins", plugin});
  ASSIGN_OR_RETURN(toml::table cri,
                   WithNvidiaHandler(current_cri ? *current_cri : toml::table{},
                                     original_cri ? *original_cri : toml::table{}, handler));
  TomlTextEdit edit(main.path, main.text);
  if (main.blank) RETURN_IF_ERROR(edit.Set({}, "version", toml::value<int64_t>(main.version)));
  absl::Status st = edit.Set({"plugins"}, plugin, cri);
  if (absl::IsUnimplemented(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat(st.message(), "; use the drop-in mode instead (leave out --in-place)"));
  }
  RETURN_IF_ERROR(st);
  return edit.Finish();
}

// Refuses to overwrite a file that holds neither what gpunode last wrote nor the original.
absl::Status CheckUntouched(const LedgerEntry& entry, const std::string& ledger_path) {
  ASSIGN_OR_RETURN(std::optional<std::string> current, ReadIfExists(entry.path));
  if (HoldsWritten(entry, current)) return absl::OkStatus();
  if (!entry.existed && !current) return absl::OkStatus();
  if (entry.existed && current) {
    ASSIGN_OR_RETURN(std::optional<std::string> backup, ReadIfExists(entry.backup));
    if (backup == current) return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      entry.path,
      ": changed since gpunode wrote it, so gpunode leaves it alone (nothing written); ",
      entry.existed
          ? absl::StrCat("its original is ", entry.backup, ": restore that and rerun, or ")
          : "gpunode created it: delete it and rerun, or ",
      "remove ", ledger_path, " to take the current files as the new original"));
}

absl::Status Apply(const std::vector<FileChange>& files, std::optional<Ledger> ledger,
                   const std::string& mode, const std::string& drop_in,
                   const std::string& config_path) {
  Ledger record;
  if (ledger) {
    record = std::move(*ledger);
  } else {
    record.mode = mode;
    record.drop_in = drop_in;
  }
  for (const FileChange& file : files) {
    if (!file.changed) continue;
    if (const LedgerEntry* entry = record.Find(file.path)) {
      RETURN_IF_ERROR(CheckUntouched(*entry, LedgerPath(config_path)));
    }
  }
  // Backups first, then the record, then the files: a crash at any point leaves a state that a
  // rerun of configure or revert understands.
  for (const FileChange& file : files) {
    if (!file.changed) continue;
    LedgerEntry* entry = record.Find(file.path);
    if (entry == nullptr) {
      LedgerEntry fresh;
      fresh.path = file.path;
      fresh.existed = file.exists;
      if (file.exists) {
        fresh.backup = BackupPath(file.path);
        ASSIGN_OR_RETURN(std::string original, core::ReadFile(file.path));
        ASSIGN_OR_RETURN(std::optional<std::string> old_backup, ReadIfExists(fresh.backup));
        if (old_backup && *old_backup != original) {
          return absl::FailedPreconditionError(
              absl::StrCat(fresh.backup, ": already exists and differs from ", file.path,
                           "; move it away so gpunode can keep the original there"));
        }
        RETURN_IF_ERROR(core::WriteFileAtomic(fresh.backup, original, FileMode(file.path, 0600),
                                              core::Backup::kNone));
      }
      record.files.push_back(std::move(fresh));
      entry = &record.files.back();
    }
    entry->written_hash = ContentHash(file.content);
    entry->written_size = file.content.size();
    std::vector<std::string> missing;
    for (fs::path dir = fs::path(file.path).parent_path(); !dir.empty() && !fs::exists(dir);
         dir = dir.parent_path()) {
      missing.insert(missing.begin(), dir.string());
    }
    for (const std::string& dir : missing) {
      if (std::find(record.created_dirs.begin(), record.created_dirs.end(), dir) ==
          record.created_dirs.end()) {
        record.created_dirs.push_back(dir);
      }
    }
  }
  RETURN_IF_ERROR(WriteLedger(config_path, record));
  for (const FileChange& file : files) {
    if (!file.changed) continue;
    std::error_code ec;
    fs::path dir = fs::path(file.path).parent_path();
    if (!dir.empty()) fs::create_directories(dir, ec);
    if (ec) {
      // Named by the file the user asked for; a path that cannot hold a directory, or may not,
      // is theirs to fix.
      const int err = ec.value();
      const bool denied = err == EACCES || err == EPERM || err == EROFS;
      const absl::StatusCode code = denied ? absl::StatusCode::kPermissionDenied
                                    : err == ENOTDIR || err == EEXIST ? absl::StatusCode::kNotFound
                                                                      : absl::StatusCode::kInternal;
      return absl::Status(
          code, absl::StrCat(file.path, ": cannot create its directory ", dir.string(), ": ",
                             ec.message(), denied ? "; run as root?" : ""));
    }
    RETURN_IF_ERROR(core::WriteFileAtomic(file.path, file.content, FileMode(file.path, 0644),
                                          core::Backup::kNone));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOptions(const ConfigureOptions& options, bool drop_in_given) {
  if (options.runtime != "containerd") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--runtime ", options.runtime,
        ": only containerd is supported (not CRI-O or Docker); pass --runtime containerd"));
  }
  if (drop_in_given && options.in_place) {
    return absl::InvalidArgumentError(
        "--drop-in and --in-place exclude each other: --drop-in names the file to write beside "
        "the config, --in-place edits the config itself; pass one of them");
  }
  return absl::OkStatus();
}

absl::StatusOr<ConfigureResult> Configure(const ConfigureOptions& requested) {
  RETURN_IF_ERROR(ValidateOptions(requested, !requested.drop_in.empty()));
  // Absolute paths in the ledger, so revert works from any directory.
  ConfigureOptions options = requested;
  options.config_path = containerd::NormalPath(requested.config_path);
  ASSIGN_OR_RETURN(containerd::ContainerdConfig main,
                   containerd::LoadContainerdConfig(options.config_path));
  ASSIGN_OR_RETURN(std::optional<Ledger> ledger, ReadLedger(options.config_path));
  const std::string mode = options.in_place ? kModeInPlace : kModeDropIn;
  const std::string drop_in =
      options.in_place
          ? ""
          : containerd::NormalPath(options.drop_in.empty() ? DefaultDropInPath(options.config_path)
                                                           : options.drop_in);
  if (ledger && (ledger->mode != mode || ledger->drop_in != drop_in)) {
    return absl::FailedPreconditionError(absl::StrCat(
        options.config_path, ": gpunode configured it in ", ledger->mode, " mode",
        ledger->drop_in.empty() ? "" : absl::StrCat(" (", ledger->drop_in, ")"),
        "; run `gpunode runtime revert --config ", options.config_path, "` first to switch"));
  }
  const std::string plugin = containerd::CriPluginId(main.version);

  std::vector<std::pair<std::string, std::string>> outputs;
  if (options.in_place) {
    ASSIGN_OR_RETURN(std::string text, InPlaceText(main, plugin, ledger, options.handler));
    outputs.emplace_back(main.path, std::move(text));
  } else {
    ASSIGN_OR_RETURN(containerd::ImportChain chain, containerd::ResolveImportChain(main, drop_in));
    ASSIGN_OR_RETURN(toml::table source, CriBeforeDropIn(chain, plugin, drop_in));
    ASSIGN_OR_RETURN(toml::table cri, WithNvidiaHandler(source, source, options.handler));
    // The drop-in goes first so that the import never points at a missing file.
    outputs.emplace_back(drop_in, RenderDropIn(main.version, plugin, cri, main.path));
    if (!chain.drop_in_already_imported) {
      ASSIGN_OR_RETURN(std::string text, SpliceImport(main, drop_in));
      outputs.emplace_back(main.path, std::move(text));
    }
  }

  ConfigureResult result;
  if (::access(options.handler.binary.c_str(), X_OK) != 0) {
    result.warnings.push_back(
        absl::StrCat(options.handler.binary,
                     " does not exist or is not executable: pods using the ", options.handler.name,
                     " handler will fail until nvidia-container-toolkit is installed there"));
  }
  for (auto& [path, content] : outputs) {
    ASSIGN_OR_RETURN(std::optional<std::string> current, ReadIfExists(path));
    bool changed = current != content;
    result.files.push_back({.path = path,
                            .content = std::move(content),
                            .exists = current.has_value(),
                            .changed = changed});
  }
  bool any_change = std::any_of(result.files.begin(), result.files.end(),
                                [](const FileChange& file) { return file.changed; });
  if (options.dry_run || !any_change) return result;
  RETURN_IF_ERROR(Apply(result.files, std::move(ledger), mode, drop_in, options.config_path));
  result.wrote = true;
  return result;
}

}  // namespace gpunode::runtime
