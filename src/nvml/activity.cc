#include "nvml/activity.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "nvml/library.h"

namespace gpunode::nvml {

namespace {

// Both calls size their answer the same way: ask with no room, learn the count, ask again. Samples
// may arrive between the calls, so leave slack and retry. `ask(buffer, &capacity)` fills
// `buffer` (null when it is empty) and sets capacity to the count written or needed.
template <typename Sample, typename Ask>
absl::StatusOr<std::vector<Sample>> Samples(Ask ask, const char* symbol) {
  std::vector<Sample> raw;
  unsigned count = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    raw.resize(count);
    unsigned capacity = count;
    absl::Status st = ask(raw.empty() ? nullptr : raw.data(), &capacity);
    // NOT_FOUND: the driver has no sample newer than the timestamp.
    if (ReturnOf(st) == NVML_ERROR_NOT_FOUND) return std::vector<Sample>{};
    if (st.ok()) {
      raw.resize(std::min<size_t>(capacity, raw.size()));
      return raw;
    }
    if (ReturnOf(st) != NVML_ERROR_INSUFFICIENT_SIZE) return st;
    count = capacity + 8;
  }
  return FromReturn(NVML_ERROR_INSUFFICIENT_SIZE, symbol, "the sample count kept growing");
}

absl::StatusOr<std::vector<ProcessUtilization>> FromUtilizationInfo(const Library& library,
                                                                    const Device& device,
                                                                    uint64_t since_timestamp_us) {
  auto ask = [&](nvmlProcessUtilizationInfo_v1_t* buffer, unsigned* capacity) {
    nvmlProcessesUtilizationInfo_t request{};
    request.version = kNvmlProcessesUtilizationInfoV1Version;
    request.processSamplesCount = *capacity;
    request.lastSeenTimeStamp = since_timestamp_us;
    request.procUtilArray = buffer;
    absl::Status st = GPUNODE_NVML_CALL(library, device_get_processes_utilization_info,
                                        device.handle(), &request);
    *capacity = request.processSamplesCount;
    return st;
  };
  ASSIGN_OR_RETURN(std::vector<nvmlProcessUtilizationInfo_v1_t> raw,
                   Samples<nvmlProcessUtilizationInfo_v1_t>(
                       ask, library.entry_points().device_get_processes_utilization_info_symbol));
  std::vector<ProcessUtilization> out;
  out.reserve(raw.size());
  for (const nvmlProcessUtilizationInfo_v1_t& s : raw) {
    out.push_back(ProcessUtilization{s.pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil,
                                     s.jpgUtil, s.ofaUtil});
  }
  return out;
}

absl::StatusOr<std::vector<ProcessUtilization>> FromUtilizationSamples(
    const Library& library, const Device& device, uint64_t since_timestamp_us) {
  auto ask = [&](nvmlProcessUtilizationSample_t* buffer, unsigned* capacity) {
    return GPUNODE_NVML_CALL(library, device_get_process_utilization, device.handle(), buffer,
                             capacity, since_timestamp_us);
  };
  ASSIGN_OR_RETURN(std::vector<nvmlProcessUtilizationSample_t> raw,
                   Samples<nvmlProcessUtilizationSample_t>(
                       ask, library.entry_points().device_get_process_utilization_symbol));
  std::vector<ProcessUtilization> out;
  out.reserve(raw.size());
  for (const nvmlProcessUtilizationSample_t& s : raw) {
    out.push_back(ProcessUtilization{s.pid, s.timeStamp, s.smUtil, s.memUtil, s.encUtil, s.decUtil,
                                     std::nullopt, std::nullopt});
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<ProcessUtilization>> ProcessUtilizations(const Library& library,
                                                                    const Device& device,
                                                                    uint64_t since_timestamp_us) {
  absl::StatusOr<std::vector<ProcessUtilization>> info =
      FromUtilizationInfo(library, device, since_timestamp_us);
  // Drivers before 550 do not export the call (FUNCTION_NOT_FOUND); a driver may also have it
  // and not support it on a GPU. Both leave the older call, which every supported driver has.
  if (!IsNotSupported(info.status())) return info;
  return FromUtilizationSamples(library, device, since_timestamp_us);
}

absl::StatusOr<uint64_t> NvLinkDataKib(const Library& library, const Device& gpu,
                                       const std::vector<unsigned>& links) {
  std::vector<nvmlFieldValue_t> fields(links.size() * 2);
  for (size_t i = 0; i < links.size(); ++i) {
    fields[2 * i].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    fields[2 * i + 1].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    fields[2 * i].scopeId = fields[2 * i + 1].scopeId = links[i];
  }
  RETURN_IF_ERROR(GPUNODE_NVML_CALL(library, device_get_field_values, gpu.handle(),
                                    static_cast<int>(fields.size()), fields.data()));
  uint64_t total = 0;
  for (const nvmlFieldValue_t& field : fields) {
    // The call succeeds as a whole while each field carries its own result; one missing link
    // would make the total a lie.
    if (field.nvmlReturn != NVML_SUCCESS) {
      return FromReturn(
          field.nvmlReturn,
          absl::StrCat("nvmlDeviceGetFieldValues(NVLink throughput, link ", field.scopeId, ")"),
          library.ErrorString(field.nvmlReturn));
    }
    if (field.valueType != NVML_VALUE_TYPE_UNSIGNED_LONG_LONG) {
      return FromReturn(NVML_ERROR_NOT_SUPPORTED, "nvmlDeviceGetFieldValues(NVLink throughput)",
                        "unexpected value type");
    }
    total += field.value.ullVal;
  }
  return total;
}

}  // namespace gpunode::nvml
