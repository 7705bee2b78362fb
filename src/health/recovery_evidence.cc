#include "health/recovery_evidence.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nvml/status.h"

namespace gpunode::health {
namespace {

// Every class needs the GPU to answer; a lost GPU also needs to be the same board.
Evidence Responds(const nvml::Device& device, const GpuBaseline& baseline, bool check_uuid) {
  absl::StatusOr<nvml::MemoryInfo> memory = device.Memory();
  if (!memory.ok() && !nvml::IsNotSupported(memory.status())) {
    return {Evidence::kNotYet,
            absl::StrCat("NVML does not answer (", memory.status().message(), ")")};
  }
  if (!check_uuid) return {Evidence::kGone, "NVML answers"};
  absl::StatusOr<std::string> uuid = device.Uuid();
  if (!uuid.ok()) {
    return {Evidence::kNotYet,
            absl::StrCat("its UUID cannot be read (", uuid.status().message(), ")")};
  }
  if (*uuid != baseline.uuid) {
    return {Evidence::kNever, absl::StrCat("the GPU on its bus now has UUID ", *uuid,
                                           ", not the advertised ", baseline.uuid)};
  }
  return {Evidence::kGone, "the GPU is back on the bus with the same UUID"};
}

Evidence RowRemapper(const nvml::Device& device) {
  absl::StatusOr<nvml::RemappedRows> rows = device.Remapped();
  if (!rows.ok()) {
    if (nvml::IsNotSupported(rows.status())) {
      return {Evidence::kNever,
              "NVML reports no row-remapping state for this GPU, so nothing can show the memory "
              "fault is gone"};
    }
    return {Evidence::kNotYet,
            absl::StrCat("its row-remapping state cannot be read (", rows.status().message(), ")")};
  }
  if (rows->failure_occurred) {
    return {Evidence::kNever, "the row remapper reports a failure (the GPU needs service)"};
  }
  if (rows->pending) {
    return {Evidence::kNotYet, "a row remap is pending until the GPU is reset"};
  }
  return {Evidence::kGone, "the row remapper shows nothing pending and no failure"};
}

Evidence NvLinks(const nvml::Device& device, const GpuBaseline& baseline) {
  if (!baseline.active_nvlinks) return {Evidence::kGone, "no NVLinks to compare"};
  absl::StatusOr<std::vector<nvml::NvLink>> links = device.ActiveNvLinks();
  if (!links.ok()) {
    return {Evidence::kNotYet,
            absl::StrCat("its NVLink state cannot be read (", links.status().message(), ")")};
  }
  if (links->size() < *baseline.active_nvlinks) {
    return {Evidence::kNotYet, absl::StrCat(links->size(), " of its ", *baseline.active_nvlinks,
                                            " NVLinks are active")};
  }
  return {Evidence::kGone, absl::StrCat("all ", *baseline.active_nvlinks, " NVLinks are active")};
}

}  // namespace

GpuBaseline BaselineOf(const nvml::Device& device, std::string uuid) {
  GpuBaseline baseline{std::move(uuid), std::nullopt};
  absl::StatusOr<std::vector<nvml::NvLink>> links = device.ActiveNvLinks();
  if (links.ok() && !links->empty()) baseline.active_nvlinks = links->size();
  return baseline;
}

Evidence JudgeRecovery(const std::optional<nvml::Device>& device, const GpuBaseline& baseline,
                       const std::set<FaultClass>& faults) {
  if (!device) return {Evidence::kNever, "the plugin has no NVML handle for it"};
  Evidence responds = Responds(*device, baseline, faults.contains(FaultClass::kGpuLost));
  if (responds.verdict != Evidence::kGone) return responds;
  std::vector<std::string> seen = {responds.what};
  for (FaultClass fault : faults) {
    Evidence e;
    if (fault == FaultClass::kMemory) {
      e = RowRemapper(*device);
    } else if (fault == FaultClass::kNvLink) {
      e = NvLinks(*device, baseline);
    } else {
      continue;  // answered above
    }
    if (e.verdict != Evidence::kGone) return e;
    seen.push_back(e.what);
  }
  return {Evidence::kGone, absl::StrJoin(seen, "; ")};
}

}  // namespace gpunode::health
