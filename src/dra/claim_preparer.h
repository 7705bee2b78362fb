// NodePrepareResources and NodeUnprepareResources for one node: a claim's allocated devices
// become a transient CDI spec (vendor k8s.gpu.nvidia.com, class claim, one device
// "<claimUID>-<device>" per allocated device, as NVIDIA's DRA driver names them), recorded in the
// checkpoint once the spec is on disk. A plugin restarted at any point answers the kubelet as if
// it had not stopped: a spec no record names is removed at start (the kubelet, which got no
// answer, asks again), and a preparation that changes the GPU itself (a time-slice interval) or
// starts something beside it (a claim's MPS control daemon, claim_mps.h) is recorded as started
// before it begins, so that it is rolled back.
//
// Thread-safety: Prepare, Unprepare and SetDevices may be called from any thread; one mutex
// serializes them (the kubelet sends a pod's claims in one call, and a claim's preparation is
// a few file writes, so there is nothing to gain from running two at once; a claim that waits
// for its MPS daemon's pod holds the others back, as NVIDIA's driver does).
#pragma once

#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cdi/driver_files.h"
#include "core/host_root.h"
#include "dra/claim_mps.h"
#include "gpu/dra_devices.h"
#include "host/dra_checkpoint.h"

namespace gpunode::dra {

// The kind of the claims' CDI specs: "k8s.gpu.nvidia.com/claim".
inline constexpr char kClaimCdiKind[] = "k8s.gpu.nvidia.com/claim";

struct ClaimRef {
  std::string name_space;
  std::string name;
  std::string uid;
};

struct PreparerOptions {
  std::string node_name;        // the pool
  std::string checkpoint_path;  // <plugins>/gpu.nvidia.com/checkpoint.json
  std::string cdi_root = "/var/run/cdi";
  std::string dev_root = "/";  // prefix of the device nodes' host paths
  std::string hook_path = {};  // nvidia-cdi-hook for the spec's hooks; empty: none
  std::string boot_id = {};    // the node's, from /proc/sys/kernel/random/boot_id
  // nvidia-smi, which sets a GPU's time-slice interval (`compute-policy --set-timeslice`; NVML
  // has no call for it); a path, or a name looked up on PATH.
  std::string nvidia_smi = "nvidia-smi";
};

class ClaimPreparer {
 public:
  // Reads the claim from the API server: the body of GET .../resourceclaims/<name>.
  using ClaimReader = std::function<absl::StatusOr<std::string>(const ClaimRef&)>;

  // Loads the checkpoint: claims of another boot are dropped, claims whose preparation had
  // started but not completed are rolled back (their spec removed; the kubelet asks again),
  // claim specs in the CDI root that no record names are removed, and MPS daemons that no
  // remaining record names are stopped.
  // Fails on a checkpoint that does not parse, deleting nothing. `mps` outlives the preparer.
  static absl::StatusOr<std::unique_ptr<ClaimPreparer>> Create(PreparerOptions options,
                                                               cdi::DriverFiles driver,
                                                               const core::HostRoot& host,
                                                               ClaimReader read_claim,
                                                               MpsDaemons& mps);

  // The devices of the node now (after a MIG change, a GPU lost or back).
  void SetDevices(std::vector<gpu::DraDevice> devices);

  // The claim's devices with their CDI IDs; the same answer again for a claim already prepared.
  // A time-slice interval its config asks for is set on the GPUs, and the MPS daemons it asks
  // for are running with their limits, before the answer is given.
  absl::StatusOr<std::vector<host::PreparedDevice>> Prepare(const ClaimRef& claim);
  // Stops the claim's MPS daemons, then removes its spec and record (a daemon that does not stop
  // fails the call and changes nothing else: the kubelet asks again); a claim not prepared here
  // is already unprepared. A GPU whose interval the claim set goes back to Default when no other
  // prepared claim set one.
  absl::Status Unprepare(const std::string& uid);

  // The UIDs of the prepared claims, for doctor and the tests.
  std::vector<std::string> PreparedClaims() const;
  // The spec file of a claim: <cdi_root>/k8s.gpu.nvidia.com-claim_<uid>.json.
  std::string SpecPath(const std::string& uid) const;

 private:
  ClaimPreparer(PreparerOptions options, cdi::DriverFiles driver, const core::HostRoot& host,
                ClaimReader read_claim, MpsDaemons& mps)
      : options_(std::move(options)),
        driver_(std::move(driver)),
        host_(host),
        read_claim_(std::move(read_claim)),
        mps_(mps),
        checkpoint_file_(options_.checkpoint_path, options_.boot_id) {}

  using Clock = std::chrono::steady_clock;
  // `started`: when the kubelet's request reached Prepare, for the log line that says how long
  // the preparation took and how much of it was the API server's answer.
  absl::StatusOr<std::vector<host::PreparedDevice>> PrepareLocked(const ClaimRef& claim,
                                                                  Clock::time_point started);
  absl::Status RemoveSpec(const std::string& uid);
  // Sets the time-slice interval of the GPU `gpu_uuid` through nvidia-smi.
  absl::Status SetTimeSlice(const std::string& gpu_uuid, const std::string& interval) const;
  // The GPU of a prepared device of this node, by the device's name; empty when not known.
  std::string GpuUuidOf(const std::string& device) const;

  const PreparerOptions options_;
  const cdi::DriverFiles driver_;
  const core::HostRoot& host_;
  const ClaimReader read_claim_;
  MpsDaemons& mps_;
  mutable std::mutex mutex_;
  host::DraCheckpointFile checkpoint_file_;
  host::DraCheckpoint checkpoint_;  // as on disk
  std::vector<gpu::DraDevice> devices_;
};

}  // namespace gpunode::dra
