#include "nvml/activity.h"

#include "absl/strings/str_cat.h"
#include "core/status_macros.h"
#include "nvml/library.h"

namespace gpunode::nvml {

absl::StatusOr<std::vector<ProcessUtilization>> ProcessUtilizations(const Library& library,
                                                                    const Device& device,
                                                                    uint64_t since_timestamp_us) {
  // Ask for the count first; samples may arrive between the calls, so leave slack and retry.
  std::vector<nvmlProcessUtilizationSample_t> raw;
  unsigned count = 0;
  for (int attempt = 0; attempt < 4; ++attempt) {
    raw.resize(count);
    unsigned capacity = count;
    absl::Status st =
        GPUNODE_NVML_CALL(library, device_get_process_utilization, device.handle(),
                          raw.empty() ? nullptr : raw.data(), &capacity, since_timestamp_us);
    // NOT_FOUND: the driver has no sample newer than the timestamp.
    if (ReturnOf(st) == NVML_ERROR_NOT_FOUND) return std::vector<ProcessUtilization>{};
    if (st.ok()) {
      raw.resize(std::min<size_t>(capacity, raw.size()));
      std::vector<ProcessUtilization> out;
      out.reserve(raw.size());
      for (const nvmlProcessUtilizationSample_t& s : raw)
        out.push_back(ProcessUtilization{s.pid, s.timeStamp, s.smUtil, s.memUtil});
      return out;
    }
    if (ReturnOf(st) != NVML_ERROR_INSUFFICIENT_SIZE) return st;
    count = capacity + 8;
  }
  return FromReturn(NVML_ERROR_INSUFFICIENT_SIZE, "nvmlDeviceGetProcessUtilization",
                    "the sample count kept growing");
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
