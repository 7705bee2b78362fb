#include "runtime/backup_ledger.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"
#include "core/json_field.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace gpunode::runtime {
namespace {

constexpr int kLedgerFormat = 1;

}  // namespace

LedgerEntry* Ledger::Find(const std::string& path) {
  for (LedgerEntry& entry : files) {
    if (entry.path == path) return &entry;
  }
  return nullptr;
}

const LedgerEntry* Ledger::Find(const std::string& path) const {
  return const_cast<Ledger*>(this)->Find(path);
}

std::string LedgerPath(const std::string& config_path) { return config_path + ".gpunode.json"; }
std::string BackupPath(const std::string& path) { return path + ".gpunode.bak"; }

uint64_t ContentHash(std::string_view bytes) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

absl::StatusOr<std::optional<std::string>> ReadIfExists(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (absl::IsNotFound(text.status())) return std::optional<std::string>();
  if (!text.ok()) return text.status();
  return std::optional<std::string>(std::move(*text));
}

bool HoldsWritten(const LedgerEntry& entry, const std::optional<std::string>& current) {
  return current && current->size() == entry.written_size &&
         ContentHash(*current) == entry.written_hash;
}

absl::StatusOr<std::optional<Ledger>> ReadLedger(const std::string& config_path) {
  std::string path = LedgerPath(config_path);
  ASSIGN_OR_RETURN(std::optional<std::string> text, ReadIfExists(path));
  if (!text) return std::optional<Ledger>();
  auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", std::string(why),
                     "; this is gpunode's record of what it changed: restore the files from their "
                     ".gpunode.bak copies by hand, then remove it"));
  };
  nlohmann::json json = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded() || !json.is_object()) return bad("not JSON");
  if (core::JsonInteger(json, "format", 0) != kLedgerFormat) return bad("unknown format");
  try {
    Ledger ledger;
    ledger.mode = json.at("mode").get<std::string>();
    if (json.contains("drop_in")) ledger.drop_in = json.at("drop_in").get<std::string>();
    for (const nlohmann::json& file : json.at("files")) {
      LedgerEntry entry;
      entry.path = file.at("path").get<std::string>();
      entry.existed = file.at("existed").get<bool>();
      if (file.contains("backup")) entry.backup = file.at("backup").get<std::string>();
      entry.written_hash = std::stoull(file.at("written_fnv1a64").get<std::string>(), nullptr, 16);
      entry.written_size = file.at("written_size").get<uint64_t>();
      ledger.files.push_back(std::move(entry));
    }
    if (json.contains("created_dirs")) {
      for (const nlohmann::json& dir : json.at("created_dirs")) {
        ledger.created_dirs.push_back(dir.get<std::string>());
      }
    }
    return std::optional<Ledger>(std::move(ledger));
  } catch (const std::exception& e) {
    return bad(e.what());
  }
}

absl::Status WriteLedger(const std::string& config_path, const Ledger& ledger) {
  nlohmann::json json = {{"format", kLedgerFormat},
                         {"written_by", "gpunode runtime configure"},
                         {"mode", ledger.mode},
                         {"files", nlohmann::json::array()},
                         {"created_dirs", ledger.created_dirs}};
  if (!ledger.drop_in.empty()) json["drop_in"] = ledger.drop_in;
  for (const LedgerEntry& entry : ledger.files) {
    nlohmann::json file = {{"path", entry.path},
                           {"existed", entry.existed},
                           {"written_size", entry.written_size},
                           {"written_fnv1a64", absl::StrCat(absl::Hex(entry.written_hash))}};
    if (entry.existed) file["backup"] = entry.backup;
    json["files"].push_back(std::move(file));
  }
  return core::WriteFileAtomic(LedgerPath(config_path), json.dump(2) + "\n", 0600,
                               core::Backup::kNone);
}

}  // namespace gpunode::runtime
