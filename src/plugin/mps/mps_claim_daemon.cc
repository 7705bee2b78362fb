#include "plugin/mps/mps_claim_daemon.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/log.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "host/mps_paths.h"
#include "nvml/system.h"
#include "plugin/mps/mps_control.h"
#include "plugin/mps/mps_limits.h"
#include "plugin/mps/mps_supervisor.h"
#include "spdlog/spdlog.h"

namespace gpunode::plugin {
namespace {

using core::Printable;

// What the flags say once checked, before NVML is asked about the GPUs.
struct ClaimFlags {
  std::string root;                            // normalised: no "." or "..", no trailing slash
  std::map<std::string, uint64_t> pinned_mib;  // by UUID
};

absl::StatusOr<std::string> ClaimRoot(const std::string& given) {
  if (!absl::StartsWith(given, "/")) {
    return absl::InvalidArgumentError(
        absl::StrCat("--root ", Printable(given),
                     ": not an absolute path; give the claim's directory on the host, such as "
                     "/var/lib/kubelet/plugins/gpu.nvidia.com/mps/<claim>"));
  }
  std::string root = std::filesystem::path(given).lexically_normal().string();
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/") {
    return absl::InvalidArgumentError(
        "--root /: the claim needs a directory of its own; give one such as "
        "/var/lib/kubelet/plugins/gpu.nvidia.com/mps/<claim>");
  }
  return root;
}

absl::Status CheckDevices(const std::vector<std::string>& devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError(
        "--devices: no GPU given; give the claim's GPUs as comma-separated UUIDs (GPU-...)");
  }
  std::set<std::string> seen;
  for (const std::string& uuid : devices) {
    if (uuid.empty()) {
      return absl::InvalidArgumentError(
          "--devices: an empty entry in the list; give comma-separated UUIDs (GPU-...)");
    }
    if (!seen.insert(uuid).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--devices: ", Printable(uuid), " is given twice; name each of the claim's GPUs once"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, uint64_t>> PinnedLimits(const MpsClaimOptions& options) {
  const std::set<std::string> devices(options.devices.begin(), options.devices.end());
  std::map<std::string, uint64_t> limits;
  for (const std::string& given : options.pinned_memory_limits) {
    const std::string flag = absl::StrCat("--pinned-memory-limit ", Printable(given));
    size_t equals = given.find('=');
    if (equals == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": not UUID=MIB; give one per GPU, such as GPU-...=4096"));
    }
    std::string uuid = given.substr(0, equals);
    std::string mib_text = given.substr(equals + 1);
    if (devices.count(uuid) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", Printable(uuid),
                       " is not one of --devices; give limits only for the claim's GPUs"));
    }
    uint64_t mib = 0;
    if (!absl::SimpleAtoi(mib_text, &mib) || mib == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": ", Printable(mib_text), " is not a positive whole number of MiB; give it as ",
          Printable(uuid), "=4096"));
    }
    if (!limits.emplace(uuid, mib).second) {
      return absl::InvalidArgumentError(absl::StrCat("--pinned-memory-limit: ", Printable(uuid),
                                                     " has two limits; give one per GPU"));
    }
  }
  return limits;
}

// Everything the flags alone can get wrong, said before NVML is opened or anything started.
absl::StatusOr<ClaimFlags> CheckFlags(const MpsClaimOptions& options) {
  ClaimFlags flags;
  ASSIGN_OR_RETURN(flags.root, ClaimRoot(options.root));
  RETURN_IF_ERROR(CheckDevices(options.devices));
  if (options.active_thread_percentage &&
      (*options.active_thread_percentage < 1 || *options.active_thread_percentage > 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--active-thread-percentage ", *options.active_thread_percentage,
        ": not from 1 to 100; give the percent of each GPU's SMs a client may use, or leave it "
        "out for the daemon's default"));
  }
  ASSIGN_OR_RETURN(flags.pinned_mib, PinnedLimits(options));
  return flags;
}

// A full GPU as NVML enumerates it.
struct GpuOnNode {
  std::string uuid;
  unsigned index = 0;
  nvml::Device device;
  bool mig_enabled = false;
};

struct NodeGpus {
  std::vector<GpuOnNode> gpus;
  std::set<std::string> mig_devices;  // UUIDs of the MIG devices of GPUs in MIG mode
};

absl::StatusOr<NodeGpus> ReadNodeGpus(const nvml::Library& library) {
  NodeGpus node;
  ASSIGN_OR_RETURN(unsigned count, nvml::DeviceCount(library));
  for (unsigned index = 0; index < count; ++index) {
    // A GPU that does not answer (fallen off the bus) cannot be named, so it is not offered.
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library, index);
    if (!device.ok()) continue;
    absl::StatusOr<std::string> uuid = device->Uuid();
    if (!uuid.ok()) continue;
    // NOT_SUPPORTED on a GPU without MIG, which is then not in MIG mode.
    bool mig = device->MigEnabled().value_or(false);
    if (mig) {
      for (const nvml::Device& slice : device->MigDevices().value_or(std::vector<nvml::Device>{})) {
        if (absl::StatusOr<std::string> slice_uuid = slice.Uuid(); slice_uuid.ok()) {
          node.mig_devices.insert(*slice_uuid);
        }
      }
    }
    node.gpus.push_back({*uuid, index, *device, mig});
  }
  return node;
}

absl::StatusOr<const GpuOnNode*> FindGpu(const NodeGpus& node, const std::string& uuid) {
  const std::string flag = absl::StrCat("--devices ", Printable(uuid));
  if (node.mig_devices.count(uuid) > 0 || absl::StartsWith(uuid, "MIG-")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag,
                     ": MPS through a claim on a MIG device is not supported; give full GPUs' "
                     "UUIDs (GPU-...)"));
  }
  std::vector<std::string> known;
  for (const GpuOnNode& gpu : node.gpus) {
    if (gpu.uuid != uuid) {
      known.push_back(gpu.uuid);
      continue;
    }
    if (gpu.mig_enabled) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": GPU ", gpu.index,
                       " is in MIG mode, and MPS through a claim is not supported with MIG; give "
                       "a GPU with MIG disabled"));
    }
    return &gpu;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": no such GPU on this node; its GPUs are ",
                   known.empty() ? std::string("none") : absl::StrJoin(known, ", ")));
}

absl::StatusOr<MpsPlan> PlanFromFlags(const nvml::Library& library, const ClaimFlags& flags,
                                      const MpsClaimOptions& options) {
  ASSIGN_OR_RETURN(NodeGpus node, ReadNodeGpus(library));
  MpsLimits limits;
  limits.active_thread_percentage = options.active_thread_percentage;
  for (size_t position = 0; position < options.devices.size(); ++position) {
    const std::string& uuid = options.devices[position];
    ASSIGN_OR_RETURN(const GpuOnNode* gpu, FindGpu(node, uuid));
    MpsGpuLimit limit;
    limit.gpu = ReadMpsGpu(gpu->device, uuid, gpu->index);
    limit.position = static_cast<unsigned>(position);
    limit.max_clients = MpsMaxClients(limit.gpu.cc_major);
    if (auto pinned = flags.pinned_mib.find(uuid); pinned != flags.pinned_mib.end()) {
      // A GPU that reports no memory size cannot be checked; the daemon gets the limit as given.
      const uint64_t memory_mib = limit.gpu.memory_bytes >> 20;
      if (memory_mib > 0 && pinned->second > memory_mib) {
        return absl::InvalidArgumentError(
            absl::StrCat("--pinned-memory-limit ", Printable(uuid), "=", pinned->second,
                         ": more than the ", memory_mib, " MiB of GPU ", gpu->index, " (",
                         limit.gpu.name, "); give at most ", memory_mib));
      }
      limit.pinned_mib = pinned->second;
    }
    limits.gpus.push_back(std::move(limit));
  }
  const std::string claim = std::filesystem::path(flags.root).filename().string();
  return MpsPlan{
      .resource = absl::StrCat("claim ", claim),
      .paths = host::MpsPaths{flags.root, ""},
      .limits = std::move(limits),
      .key = absl::StrCat("claim ", claim, " gpus=", absl::StrJoin(options.devices, ","))};
}

// After a start that mounted shm/ and then failed: the start's error is the one to report.
void UnmountAfterFailure(const std::string& root) {
  if (absl::Status st = UnmountMpsShm(root); !st.ok()) spdlog::error("{}", st.message());
}

}  // namespace

absl::Status RunMpsClaimDaemon(const MpsClaimOptions& options, core::Env& env) {
  ASSIGN_OR_RETURN(ClaimFlags flags, CheckFlags(options));
  ASSIGN_OR_RETURN(std::unique_ptr<nvml::Library> library, options.open_nvml(options.driver_root));
  ASSIGN_OR_RETURN(MpsPlan plan, PlanFromFlags(*library, flags, options));
  ASSIGN_OR_RETURN(std::string binary, FindMpsControl(options.driver_root));
  const host::MpsPaths paths = plan.paths;
  const std::string name = plan.resource;
  spdlog::info("{}: MPS control daemon {} in {} for GPU(s) {}", name, binary, paths.root,
               absl::StrJoin(options.devices, ","));

  RETURN_IF_ERROR(MountMpsShm(paths.root));
  if (absl::Status st = AdoptDaemons(); !st.ok()) {
    UnmountAfterFailure(paths.root);
    return st;
  }
  MpsSupervisor supervisor(*library, binary, {std::move(plan)}, env);
  if (absl::Status st = supervisor.Start(); !st.ok()) {
    UnmountAfterFailure(paths.root);
    // A stop while the daemon started ends the waits of its start: the claim is going away (its
    // Deployment deleted at once), which is no failure of this process.
    if (env.StopRequested()) {
      spdlog::warn("{}: stopped while the MPS control daemon started ({})", name, st.message());
      return absl::OkStatus();
    }
    return st;
  }
  spdlog::info("{}: MPS control daemon ready ({}); clients' pipe directory {}, /dev/shm {}", name,
               host::MpsReadyMarker(paths.root), paths.PipeDir(), host::MpsShmDir(paths.root));

  while (env.SleepFor(options.check_period)) {
    ReapChildren();
    supervisor.Check();
  }
  spdlog::warn("{}: received signal {}; quitting the MPS control daemon", name, env.stop_signal());
  supervisor.Stop();
  return UnmountMpsShm(paths.root);
}

}  // namespace gpunode::plugin
