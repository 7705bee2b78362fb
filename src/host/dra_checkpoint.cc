#include "host/dra_checkpoint.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/file_io.h"
#include "core/printable.h"
#include "core/text.h"
#include "nlohmann/json.hpp"

namespace gpunode::host {
namespace {

using ordered = nlohmann::ordered_json;

constexpr char kStarted[] = "PrepareStarted";
constexpr char kCompleted[] = "PrepareCompleted";

// FNV-1a, 64 bits, over the compact dump of "v1": enough to tell a torn or hand-edited file
// from the one written, which is all the checksum is for.
std::string Checksum(const ordered& data) {
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : data.dump()) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return absl::StrFormat("%016x", hash);
}

const ordered kAbsent;

// The member `key` of `object`, or null: a file's content read without a throw.
const ordered& Member(const ordered& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() ? kAbsent : *it;
}

absl::Status Invalid(std::string_view source, std::string_view what) {
  return absl::DataLossError(
      core::StrCat(source, ": ", what,
                   "; the file was changed or torn: move it away and restart the plugin (claims it "
                   "recorded are then prepared again by the kubelet)"));
}

absl::StatusOr<std::vector<std::string>> Strings(const ordered& value, std::string_view source,
                                                 std::string_view field) {
  std::vector<std::string> out;
  if (value.is_null()) return out;
  if (!value.is_array()) return Invalid(source, core::StrCat(field, " is not a list"));
  for (const ordered& item : value) {
    if (!item.is_string()) return Invalid(source, core::StrCat(field, " holds a non-string"));
    out.push_back(item.get<std::string>());
  }
  return out;
}

absl::StatusOr<std::string> String(const ordered& object, const char* key, std::string_view source,
                                   std::string_view where) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) {
    return Invalid(source, core::StrCat(where, ".", key, " is missing or not a string"));
  }
  return it->get<std::string>();
}

}  // namespace

std::string RenderDraCheckpoint(const DraCheckpoint& checkpoint) {
  ordered claims = ordered::object();
  for (const auto& [uid, claim] : checkpoint.claims) {
    ordered devices = ordered::array();
    for (const PreparedDevice& device : claim.devices) {
      ordered entry = {{"requests", device.requests},
                       {"poolName", device.pool},
                       {"deviceName", device.device},
                       {"cdiDeviceIDs", device.cdi_ids}};
      if (!device.time_slice.empty()) entry["timeSliceInterval"] = device.time_slice;
      devices.push_back(std::move(entry));
    }
    claims[uid] = {
        {"checkpointState", claim.state == ClaimState::kPrepareCompleted ? kCompleted : kStarted},
        {"namespace", claim.name_space},
        {"name", claim.name},
        {"preparedDevices", devices}};
    if (!claim.mps_daemons.empty()) claims[uid]["mpsControlDaemons"] = claim.mps_daemons;
  }
  ordered data = {{"nodeBootID", checkpoint.boot_id}, {"preparedClaims", claims}};
  ordered file = {{"checksum", Checksum(data)}, {"v1", data}};
  return file.dump(2) + "\n";
}

absl::StatusOr<DraCheckpoint> ParseDraCheckpoint(std::string_view text, std::string_view source) {
  ordered file = ordered::parse(text, nullptr, false);
  if (file.is_discarded() || !file.is_object()) return Invalid(source, "not a JSON object");
  auto data = file.find("v1");
  auto checksum = file.find("checksum");
  if (data == file.end() || !data->is_object()) return Invalid(source, "v1 is missing");
  if (checksum == file.end() || !checksum->is_string() || *checksum != Checksum(*data)) {
    return Invalid(source, "its checksum does not match its content");
  }
  DraCheckpoint checkpoint;
  auto boot = data->find("nodeBootID");
  if (boot != data->end() && boot->is_string()) checkpoint.boot_id = boot->get<std::string>();
  auto claims = data->find("preparedClaims");
  if (claims == data->end() || !claims->is_object()) {
    return Invalid(source, "v1.preparedClaims is missing");
  }
  for (const auto& [uid, entry] : claims->items()) {
    std::string where = core::StrCat("v1.preparedClaims[", core::Printable(uid), "]");
    if (!entry.is_object()) return Invalid(source, core::StrCat(where, " is not an object"));
    PreparedClaim claim;
    absl::StatusOr<std::string> state = String(entry, "checkpointState", source, where);
    if (!state.ok()) return state.status();
    if (*state == kCompleted) {
      claim.state = ClaimState::kPrepareCompleted;
    } else if (*state == kStarted) {
      claim.state = ClaimState::kPrepareStarted;
    } else {
      return Invalid(source, core::StrCat(where, ".checkpointState is ", core::Printable(*state),
                                          ", not ", kStarted, " or ", kCompleted));
    }
    absl::StatusOr<std::string> ns = String(entry, "namespace", source, where);
    absl::StatusOr<std::string> name = String(entry, "name", source, where);
    if (!ns.ok()) return ns.status();
    if (!name.ok()) return name.status();
    claim.name_space = *ns;
    claim.name = *name;
    auto devices = entry.find("preparedDevices");
    if (devices != entry.end() && !devices->is_array()) {
      return Invalid(source, core::StrCat(where, ".preparedDevices is not a list"));
    }
    if (devices != entry.end()) {
      for (const ordered& d : *devices) {
        if (!d.is_object())
          return Invalid(source, core::StrCat(where, " has a device that is not an object"));
        PreparedDevice device;
        absl::StatusOr<std::string> pool = String(d, "poolName", source, where);
        absl::StatusOr<std::string> device_name = String(d, "deviceName", source, where);
        if (!pool.ok()) return pool.status();
        if (!device_name.ok()) return device_name.status();
        device.pool = *pool;
        device.device = *device_name;
        absl::StatusOr<std::vector<std::string>> requests =
            Strings(Member(d, "requests"), source, core::StrCat(where, ".requests"));
        absl::StatusOr<std::vector<std::string>> ids =
            Strings(Member(d, "cdiDeviceIDs"), source, core::StrCat(where, ".cdiDeviceIDs"));
        if (!requests.ok()) return requests.status();
        if (!ids.ok()) return ids.status();
        device.requests = *requests;
        device.cdi_ids = *ids;
        if (d.contains("timeSliceInterval")) {
          absl::StatusOr<std::string> interval = String(d, "timeSliceInterval", source, where);
          if (!interval.ok()) return interval.status();
          device.time_slice = *interval;
        }
        claim.devices.push_back(std::move(device));
      }
    }
    if (entry.contains("mpsControlDaemons")) {
      absl::StatusOr<std::vector<std::string>> daemons = Strings(
          Member(entry, "mpsControlDaemons"), source, core::StrCat(where, ".mpsControlDaemons"));
      if (!daemons.ok()) return daemons.status();
      claim.mps_daemons = *daemons;
    }
    checkpoint.claims[uid] = std::move(claim);
  }
  return checkpoint;
}

absl::StatusOr<std::optional<DraCheckpoint>> ReadDraCheckpoint(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::optional<DraCheckpoint>();
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<DraCheckpoint> checkpoint = ParseDraCheckpoint(*text, path);
  if (!checkpoint.ok()) return checkpoint.status();
  return std::optional<DraCheckpoint>(std::move(*checkpoint));
}

absl::Status WriteDraCheckpoint(const std::string& path, const DraCheckpoint& checkpoint) {
  return core::WriteFileAtomic(path, RenderDraCheckpoint(checkpoint), 0600, core::Backup::kNone);
}

DraCheckpointFile::DraCheckpointFile(std::string path, std::string boot_id)
    : path_(std::move(path)), boot_id_(std::move(boot_id)) {}

absl::StatusOr<std::optional<DraCheckpoint>> DraCheckpointFile::Read() {
  dropped_.clear();
  std::error_code ec;
  std::string marker;
  if (std::filesystem::exists(MarkerPath(), ec)) {
    absl::StatusOr<std::string> text = core::ReadFile(MarkerPath());
    if (!text.ok()) return text.status();
    marker = std::string(core::TrimSpace(*text));
  }
  marked_ = !marker.empty() && marker == boot_id_;
  absl::StatusOr<std::optional<DraCheckpoint>> read = ReadDraCheckpoint(path_);
  if (read.ok() || marker.empty() || marked_) return read;
  dropped_ = absl::StrCat("the checkpoint of boot ", core::Printable(marker), " cannot be read (",
                          read.status().message(),
                          "): a machine crash may leave it so; its claims ended with that boot");
  DraCheckpoint empty;
  empty.boot_id = marker;
  return std::optional<DraCheckpoint>(std::move(empty));
}

absl::Status DraCheckpointFile::Write(const DraCheckpoint& checkpoint) {
  std::string text = RenderDraCheckpoint(checkpoint);
  if (marked_) {
    return core::WriteFileAtomic(path_, text, 0600, core::Backup::kNone,
                                 core::Durability::kThisBoot);
  }
  // The file first: a marker of this boot must never name a file written in another.
  if (absl::Status st = core::WriteFileAtomic(path_, text, 0600, core::Backup::kNone); !st.ok())
    return st;
  if (absl::Status st =
          core::WriteFileAtomic(MarkerPath(), boot_id_ + "\n", 0600, core::Backup::kNone);
      !st.ok())
    return st;
  marked_ = true;
  return absl::OkStatus();
}

}  // namespace gpunode::host
