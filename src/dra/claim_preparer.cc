#include "dra/claim_preparer.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cdi/mig_caps.h"
#include "cdi/spec.h"
#include "cdi/spec_file.h"
#include "cdi/validate.h"
#include "core/printable.h"
#include "core/spawn.h"
#include "core/status_macros.h"
#include "core/text.h"
#include "dra/claim_allocation.h"
#include "spdlog/spdlog.h"

namespace gpunode::dra {
namespace {

std::string ClaimName(const ClaimRef& claim) {
  return core::StrCat(claim.name_space, "/", claim.name, " (", claim.uid, ")");
}

// The spec of one claim: the driver's files in the common edits, and for each allocated device an
// entry "<uid>-<device>" with the device nodes of the GPU or MIG device, taken from the entry
// src/cdi gives that UUID, and the edits of its MPS daemon when `mps_roots` names one for it (the
// daemon's directory, by the device's place in `devices`).
absl::StatusOr<cdi::Spec> ClaimSpec(const std::string& uid,
                                    const std::vector<const gpu::DraDevice*>& devices,
                                    const std::map<size_t, std::string>& mps_roots,
                                    const cdi::DriverFiles& driver, const core::HostRoot& host,
                                    const PreparerOptions& options) {
  std::map<unsigned, cdi::GpuDevice> gpus;
  for (const gpu::DraDevice* device : devices) {
    cdi::GpuDevice& gpu = gpus[device->gpu_index];
    gpu.index = device->gpu_index;
    gpu.uuid = device->gpu_uuid;
    gpu.minor = device->gpu_minor;
    if (device->is_mig()) {
      gpu.migs.push_back({.position = device->mig_position,
                          .uuid = device->uuid,
                          .capability_nodes = cdi::MigCapabilityNodes(host, device->gpu_minor,
                                                                      *device->gi, *device->ci)});
    }
  }
  std::vector<cdi::GpuDevice> list;
  for (auto& [index, gpu] : gpus) list.push_back(std::move(gpu));
  cdi::SpecOptions spec_options{.kind = kClaimCdiKind, .dev_root = options.dev_root};
  if (!options.hook_path.empty()) spec_options.hook_path = options.hook_path;
  cdi::Spec spec = cdi::BuildSpec(list, driver, spec_options);
  std::map<std::string, cdi::Spec> by_name;
  for (const cdi::Spec& entry : spec["devices"]) by_name[entry["name"].get<std::string>()] = entry;
  cdi::Spec named = cdi::Spec::array();
  for (size_t i = 0; i < devices.size(); ++i) {
    const gpu::DraDevice* device = devices[i];
    auto it = by_name.find(device->uuid);
    if (it == by_name.end()) {
      return absl::InternalError(core::StrCat("the CDI spec has no entry for ", device->uuid));
    }
    cdi::Spec entry = it->second;
    entry["name"] = core::StrCat(uid, "-", device->name);
    if (auto root = mps_roots.find(i); root != mps_roots.end()) {
      const cdi::Spec client = MpsContainerEdits(root->second);
      cdi::Spec& edits = entry["containerEdits"];
      for (const auto& [field, added] : client.items()) {
        for (const cdi::Spec& item : added) edits[field].push_back(item);
      }
    }
    named.push_back(std::move(entry));
  }
  spec["devices"] = std::move(named);
  spec["cdiVersion"] = cdi::MinimumCdiVersion(spec);
  std::vector<cdi::SpecProblem> problems = cdi::ValidateSpec(spec);
  if (!problems.empty()) {
    return absl::InternalError(core::StrCat("the claim's CDI spec is invalid at ",
                                            problems[0].json_path, ": ", problems[0].message));
  }
  return spec;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ClaimPreparer>> ClaimPreparer::Create(PreparerOptions options,
                                                                     cdi::DriverFiles driver,
                                                                     const core::HostRoot& host,
                                                                     ClaimReader read_claim,
                                                                     MpsDaemons& mps) {
  std::unique_ptr<ClaimPreparer> preparer(
      new ClaimPreparer(std::move(options), std::move(driver), host, std::move(read_claim), mps));
  ASSIGN_OR_RETURN(std::optional<host::DraCheckpoint> loaded, preparer->checkpoint_file_.Read());
  if (!preparer->checkpoint_file_.dropped().empty()) {
    spdlog::warn("checkpoint {}: {}", preparer->checkpoint_file_.path(),
                 preparer->checkpoint_file_.dropped());
  }
  host::DraCheckpoint checkpoint = loaded.value_or(host::DraCheckpoint{});
  preparer->checkpoint_ = checkpoint;
  bool changed = !loaded.has_value();
  if (loaded && checkpoint.boot_id != preparer->options_.boot_id) {
    // Nothing prepared in another boot is still in place; a spec left in a persistent CDI root
    // would only name devices no container holds.
    for (const auto& [uid, claim] : checkpoint.claims) RETURN_IF_ERROR(preparer->RemoveSpec(uid));
    spdlog::info("checkpoint: {} claim(s) of boot {} dropped (this boot is {})",
                 checkpoint.claims.size(), checkpoint.boot_id, preparer->options_.boot_id);
    preparer->checkpoint_.claims.clear();
    changed = true;
  }
  for (auto it = preparer->checkpoint_.claims.begin(); it != preparer->checkpoint_.claims.end();) {
    if (it->second.state == host::ClaimState::kPrepareStarted) {
      RETURN_IF_ERROR(preparer->RemoveSpec(it->first));
      spdlog::info(
          "claim {}/{} ({}): preparation had not completed; rolled back, the kubelet "
          "prepares it again",
          it->second.name_space, it->second.name, it->first);
      it = preparer->checkpoint_.claims.erase(it);
      changed = true;
    } else {
      ++it;
    }
  }
  // A spec no record names was written by a plugin stopped before it recorded the claim: the
  // kubelet got no answer and asks again.
  const std::string prefix = "k8s.gpu.nvidia.com-claim_";
  std::error_code ec;
  for (const std::filesystem::directory_entry& entry :
       std::filesystem::directory_iterator(preparer->options_.cdi_root, ec)) {
    std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) != 0 || file.size() <= prefix.size() + 5 ||
        file.compare(file.size() - 5, 5, ".json") != 0) {
      continue;
    }
    std::string uid = file.substr(prefix.size(), file.size() - prefix.size() - 5);
    if (preparer->checkpoint_.claims.count(uid)) continue;
    RETURN_IF_ERROR(preparer->RemoveSpec(uid));
    spdlog::info(
        "claim {}: its spec was written but the claim never recorded; removed, the "
        "kubelet prepares it again",
        uid);
  }
  preparer->checkpoint_.boot_id = preparer->options_.boot_id;
  if (changed) {
    RETURN_IF_ERROR(preparer->checkpoint_file_.Write(preparer->checkpoint_));
  }
  // After the records are settled: a daemon whose claim was dropped or rolled back above, or
  // whose start a stopped plugin never recorded, serves no one.
  std::set<std::string> kept;
  for (const auto& [uid, claim] : preparer->checkpoint_.claims)
    kept.insert(claim.mps_daemons.begin(), claim.mps_daemons.end());
  mps.StopAllBut(kept);
  return preparer;
}

void ClaimPreparer::SetDevices(std::vector<gpu::DraDevice> devices) {
  std::lock_guard lock(mutex_);
  devices_ = std::move(devices);
}

std::string ClaimPreparer::SpecPath(const std::string& uid) const {
  // CDI's transient spec name: "<vendor>-<class>_<id>".
  return core::StrCat(options_.cdi_root, "/k8s.gpu.nvidia.com-claim_", uid, ".json");
}

absl::Status ClaimPreparer::RemoveSpec(const std::string& uid) {
  std::error_code ec;
  std::filesystem::remove(SpecPath(uid), ec);
  if (ec) {
    return absl::PermissionDeniedError(
        core::StrCat("cannot remove ", SpecPath(uid), ": ", ec.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<host::PreparedDevice>> ClaimPreparer::Prepare(const ClaimRef& claim) {
  const Clock::time_point started = Clock::now();
  std::lock_guard lock(mutex_);
  absl::StatusOr<std::vector<host::PreparedDevice>> prepared = PrepareLocked(claim, started);
  if (!prepared.ok()) {
    spdlog::warn("claim {}: not prepared: {}", ClaimName(claim),
                 std::string(prepared.status().message()));
  }
  return prepared;
}

absl::StatusOr<std::vector<host::PreparedDevice>> ClaimPreparer::PrepareLocked(
    const ClaimRef& claim, Clock::time_point started) {
  if (auto it = checkpoint_.claims.find(claim.uid);
      it != checkpoint_.claims.end() && it->second.state == host::ClaimState::kPrepareCompleted) {
    return it->second.devices;
  }
  const Clock::time_point asked = Clock::now();
  ASSIGN_OR_RETURN(std::string body, read_claim_(claim));
  const Clock::duration api_server = Clock::now() - asked;
  ASSIGN_OR_RETURN(std::vector<AllocatedDevice> allocated,
                   ReadAllocation(body, claim.uid, gpu::kDriverName, options_.node_name));
  std::vector<const gpu::DraDevice*> devices;
  std::vector<host::PreparedDevice> answer;
  for (const AllocatedDevice& a : allocated) {
    const gpu::DraDevice* found = nullptr;
    for (const gpu::DraDevice& d : devices_) {
      if (d.name == a.device) found = &d;
    }
    if (found == nullptr) {
      std::vector<std::string> names;
      for (const gpu::DraDevice& d : devices_) names.push_back(d.name);
      return absl::FailedPreconditionError(
          core::StrCat("device ", core::Printable(a.device), " is not on this node (it has ",
                       names.empty() ? "none" : absl::StrJoin(names, ", "), ")"));
    }
    if (!a.time_slice.empty() && found->is_mig()) {
      return absl::InvalidArgumentError(
          core::StrCat("device ", a.device,
                       " is a MIG device: a time-slice interval applies to "
                       "a whole GPU; leave sharing.timeSlicingConfig out of its MigDeviceConfig"));
    }
    if (a.mps && found->is_mig()) {
      return absl::InvalidArgumentError(core::StrCat(
          "device ", a.device,
          " is a MIG device: gpunode's DRA plugin shares whole GPUs through MPS, not MIG "
          "devices; leave sharing.strategy MPS out of its MigDeviceConfig"));
    }
    devices.push_back(found);
    answer.push_back({.requests = {a.request},
                      .pool = a.pool,
                      .device = a.device,
                      .cdi_ids = {core::StrCat(kClaimCdiKind, "=", claim.uid, "-", a.device)},
                      .time_slice = a.time_slice});
  }
  // The devices of one MPS config share its daemon.
  std::map<size_t, std::vector<size_t>> mps_groups;  // config index: places in `devices`
  for (size_t i = 0; i < allocated.size(); ++i) {
    if (allocated[i].mps) mps_groups[allocated[i].mps->config_index].push_back(i);
  }
  std::vector<MpsDaemonSpec> daemons;
  std::vector<std::string> daemon_ids;
  std::vector<std::vector<size_t>> daemon_places;
  for (const auto& [config_index, places] : mps_groups) {
    std::vector<std::string> gpus;
    for (size_t place : places) gpus.push_back(devices[place]->gpu_uuid);
    ASSIGN_OR_RETURN(MpsDaemonSpec daemon,
                     PlanMpsDaemon(claim.uid, *allocated[places.front()].mps, gpus));
    daemon_ids.push_back(daemon.id);
    daemons.push_back(std::move(daemon));
    daemon_places.push_back(places);
  }
  // A spec is a file of this plugin's own: one left by a plugin stopped before the record below
  // is found at start and removed (Create). A time-slice interval changes the GPU, and a daemon
  // runs beside it, which nothing on disk shows: such a preparation is recorded as started
  // first, so that a plugin stopped in the middle rolls it back.
  const bool sets_time_slice =
      std::any_of(answer.begin(), answer.end(),
                  [](const host::PreparedDevice& d) { return !d.time_slice.empty(); });
  if (sets_time_slice || !daemons.empty()) {
    checkpoint_.claims[claim.uid] = {.name_space = claim.name_space,
                                     .name = claim.name,
                                     .state = host::ClaimState::kPrepareStarted,
                                     .devices = {},
                                     .mps_daemons = daemon_ids};
    RETURN_IF_ERROR(checkpoint_file_.Write(checkpoint_));
  }
  std::map<size_t, std::string> mps_roots;
  for (size_t d = 0; d < daemons.size(); ++d) {
    // Not stopped on failure: the kubelet asks again, and finds the daemon further on; an
    // Unprepare, or a restart's rollback, stops it.
    RETURN_IF_ERROR(mps_.Start(daemons[d]));
    for (size_t place : daemon_places[d]) mps_roots[place] = mps_.Root(daemons[d].id);
  }
  if (!devices.empty()) {
    ASSIGN_OR_RETURN(cdi::Spec spec,
                     ClaimSpec(claim.uid, devices, mps_roots, driver_, host_, options_));
    RETURN_IF_ERROR(cdi::WriteSpecFile(SpecPath(claim.uid), spec, cdi::SpecFormat::kJson));
  }
  for (size_t i = 0; i < answer.size(); ++i) {
    if (!answer[i].time_slice.empty())
      RETURN_IF_ERROR(SetTimeSlice(devices[i]->gpu_uuid, answer[i].time_slice));
  }
  host::PreparedClaim& record = checkpoint_.claims[claim.uid];
  record.name_space = claim.name_space;
  record.name = claim.name;
  record.state = host::ClaimState::kPrepareCompleted;
  record.devices = answer;
  record.mps_daemons = daemon_ids;
  RETURN_IF_ERROR(checkpoint_file_.Write(checkpoint_));
  // The time split tells a slow pod start on the node from a slow API server.
  using Ms = std::chrono::duration<double, std::milli>;
  spdlog::info(
      "claim {}: prepared {} device(s) in {:.2f} ms, {:.2f} ms of it the API server's answer",
      ClaimName(claim), answer.size(), Ms(Clock::now() - started).count(), Ms(api_server).count());
  return answer;
}

absl::Status ClaimPreparer::SetTimeSlice(const std::string& gpu_uuid,
                                         const std::string& interval) const {
  // nvidia-smi's numbers for NVIDIA's intervals, as NVIDIA's DRA driver passes them.
  static const std::map<std::string, int> kTimeSlice = {
      {"Default", 0}, {"Short", 1}, {"Medium", 2}, {"Long", 3}};
  std::vector<std::string> argv = {options_.nvidia_smi, "compute-policy", "-i", gpu_uuid,
                                   core::StrCat("--set-timeslice=", kTimeSlice.at(interval))};
  absl::StatusOr<core::SpawnResult> ran =
      core::Spawn({.argv = argv, .stderr_to = core::SpawnOptions::Stream::kCapture});
  if (!ran.ok() || !ran->Succeeded()) {
    std::string why = ran.ok() ? core::StrCat(ran->Describe(), ": ", ran->output)
                               : std::string(ran.status().message());
    return absl::FailedPreconditionError(core::StrCat("cannot set the time-slice interval ",
                                                      interval, " on ", gpu_uuid, ": ",
                                                      absl::StrJoin(argv, " "), " ", why));
  }
  spdlog::info("GPU {}: time-slice interval {}", gpu_uuid, interval);
  return absl::OkStatus();
}

std::string ClaimPreparer::GpuUuidOf(const std::string& device) const {
  for (const gpu::DraDevice& d : devices_) {
    if (d.name == device) return d.gpu_uuid;
  }
  return "";
}

absl::Status ClaimPreparer::Unprepare(const std::string& uid) {
  std::lock_guard lock(mutex_);
  auto it = checkpoint_.claims.find(uid);
  if (it == checkpoint_.claims.end()) return RemoveSpec(uid);
  for (const std::string& daemon : it->second.mps_daemons) RETURN_IF_ERROR(mps_.Stop(daemon));
  RETURN_IF_ERROR(RemoveSpec(uid));
  std::string name = core::StrCat(it->second.name_space, "/", it->second.name);
  std::vector<host::PreparedDevice> released = it->second.devices;
  checkpoint_.claims.erase(it);
  RETURN_IF_ERROR(checkpoint_file_.Write(checkpoint_));
  for (const host::PreparedDevice& device : released) {
    std::string gpu = GpuUuidOf(device.device);
    if (device.time_slice.empty() || gpu.empty()) continue;
    bool still_set = false;
    for (const auto& [other_uid, other] : checkpoint_.claims) {
      for (const host::PreparedDevice& held : other.devices)
        still_set |= !held.time_slice.empty() && GpuUuidOf(held.device) == gpu;
    }
    // The claim is gone either way: a GPU left at its interval is said, not an error.
    if (absl::Status st = still_set ? absl::OkStatus() : SetTimeSlice(gpu, "Default"); !st.ok())
      spdlog::warn("claim {} ({}): {}", name, uid, std::string(st.message()));
  }
  spdlog::info("claim {} ({}): unprepared", name, uid);
  return absl::OkStatus();
}

std::vector<std::string> ClaimPreparer::PreparedClaims() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> uids;
  for (const auto& [uid, claim] : checkpoint_.claims) uids.push_back(uid);
  return uids;
}

}  // namespace gpunode::dra
