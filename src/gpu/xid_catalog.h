// NVIDIA's XID catalog as one table: what each XID means, whether the application or the GPU
// caused it, and what a GPU must show before a device lost to it is offered again. The exporter's
// `err_msg` label and the device plugin's health decisions both read it, so a text or a class
// changes in one place.
//
// The texts are those of NVIDIA's XID catalog as dcgm-exporter 4.x writes them in `err_msg`,
// byte for byte, so alert rules and dashboards written for dcgm-exporter match gpunode's series
// (src/gpu/SOURCES.md says where they come from).
#pragma once

#include <cstdint>
#include <string_view>

namespace gpunode::gpu {

enum class XidCause : uint8_t {
  kGpu,          // the GPU, its memory, links or firmware
  kApplication,  // the program running on the GPU (NVIDIA's device plugin ignores these)
};

// What a GPU must show before a device it lost to an XID is offered again
// (docs/DEVICE_PLUGIN.md, "Health and recovery", has the table).
enum class XidRecovery : uint8_t {
  kResponds,  // NVML answers queries of the GPU
  kMemory,    // the row remapper shows nothing pending and no failure
  kGpuLost,   // the GPU is back on the bus with the same UUID
  kNvLink,    // every NVLink that was active at the start is active again
};

struct XidEntry {
  uint16_t xid = 0;
  std::string_view description;
  XidCause cause = XidCause::kGpu;
  XidRecovery recovery = XidRecovery::kResponds;
};

// The catalog's row for `xid`; null for an XID the catalog does not list (newer drivers add
// XIDs: such an XID is a GPU fault that needs NVML to answer again).
const XidEntry* FindXid(uint64_t xid);

// dcgm-exporter's `err_msg` for DCGM_FI_DEV_XID_ERRORS: "No Error" for 0, the catalog's text,
// "Unknown Error" for an XID the catalog does not list.
std::string_view XidErrorMessage(uint64_t xid);

}  // namespace gpunode::gpu
