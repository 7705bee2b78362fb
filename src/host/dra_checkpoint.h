// The DRA plugin's record of the claims it prepared, kept in
// <kubelet>/plugins/gpu.nvidia.com/checkpoint.json so that a restarted plugin answers a repeated
// NodePrepareResources with the same devices, rolls back a claim whose preparation it did not
// finish, and can unprepare claims it prepared before it stopped.
//
// The file holds a checksum of its content (a torn or edited file is refused, never guessed at)
// and the node's boot ID: after a reboot nothing prepared before survives (the CDI specs live in
// /var/run), so the claims of another boot are dropped.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace gpunode::host {

enum class ClaimState {
  kPrepareStarted,    // the CDI spec may be partly written; finish or roll back
  kPrepareCompleted,  // the answer below was given to the kubelet
};

struct PreparedDevice {
  std::vector<std::string> requests;
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_ids;
  // The time-slice interval the claim set on the device's GPU ("Short", "Medium", "Long",
  // "Default"); empty when it set none. Unprepare puts the GPU back to Default from it.
  std::string time_slice = {};
  friend bool operator==(const PreparedDevice&, const PreparedDevice&) = default;
};

struct PreparedClaim {
  std::string name_space;
  std::string name;
  ClaimState state = ClaimState::kPrepareStarted;
  std::vector<PreparedDevice> devices = {};
  // The MPS control daemons started for the claim (their IDs), recorded before the first one is
  // asked for: Unprepare, and a rollback, stop them.
  std::vector<std::string> mps_daemons = {};
  friend bool operator==(const PreparedClaim&, const PreparedClaim&) = default;
};

struct DraCheckpoint {
  std::string boot_id;
  std::map<std::string, PreparedClaim> claims;  // by claim UID
  friend bool operator==(const DraCheckpoint&, const DraCheckpoint&) = default;
};

std::string RenderDraCheckpoint(const DraCheckpoint& checkpoint);
// One error line naming `source` and what is wrong (not JSON, a field of the wrong type, a
// checksum that does not match) and how to recover.
absl::StatusOr<DraCheckpoint> ParseDraCheckpoint(std::string_view text, std::string_view source);

// nullopt when the file does not exist (a first start).
absl::StatusOr<std::optional<DraCheckpoint>> ReadDraCheckpoint(const std::string& path);
// Atomically (core::WriteFileAtomic), mode 0600: it names the pods' claims.
absl::Status WriteDraCheckpoint(const std::string& path, const DraCheckpoint& checkpoint);

// The plugin's checkpoint file across its writes. A Prepare waits for no disk: within a boot the
// file is replaced without fsync, which a restarted plugin still reads whole, as the page cache
// outlives the process. Only a crash of the machine can leave it torn, and that starts another
// boot, whose claims are dropped anyway. So the boot's first write is fsynced, and then
// `<path>.boot`, also fsynced, names the boot whose writes the file holds; a file marked with
// another boot that cannot be read is dropped, not refused.
//
// Thread-safety: none; the preparer calls it under its own lock.
class DraCheckpointFile {
 public:
  DraCheckpointFile(std::string path, std::string boot_id);

  // nullopt when there is none (a first start). A file of this boot, or one no boot marker
  // names (as earlier versions wrote it, fsynced), is read strictly: torn or edited, it is
  // refused with one line. A file marked with another boot that cannot be read gives an empty
  // checkpoint of that boot, and `dropped()` says why.
  absl::StatusOr<std::optional<DraCheckpoint>> Read();
  // Why the last Read dropped an unreadable file of another boot; empty when it did not.
  const std::string& dropped() const { return dropped_; }
  // Replaces the file, mode 0600: fsynced and marked with this boot the first time, unsynced
  // after that.
  absl::Status Write(const DraCheckpoint& checkpoint);

  const std::string& path() const { return path_; }

 private:
  std::string MarkerPath() const { return path_ + ".boot"; }

  std::string path_;
  std::string boot_id_;
  bool marked_ = false;  // the marker names this boot
  std::string dropped_;
};

}  // namespace gpunode::host
