#include "metrics/node_reading.h"

namespace gpunode::metrics {

const std::array<FieldSpec, kFieldCount>& FieldSpecs() {
  using enum MetricType;
  // Names, types and help texts as dcgm-exporter's default-counters.csv has them.
  static const std::array<FieldSpec, kFieldCount> specs = {{
      {"DCGM_FI_DEV_SM_CLOCK", kGauge, "SM clock frequency (in MHz).", false},
      {"DCGM_FI_DEV_MEM_CLOCK", kGauge, "Memory clock frequency (in MHz).", false},
      {"DCGM_FI_DEV_MEMORY_TEMP", kGauge, "Memory temperature (in C).", false},
      {"DCGM_FI_DEV_GPU_TEMP", kGauge, "GPU temperature (in C).", false},
      {"DCGM_FI_DEV_POWER_USAGE", kGauge, "Power draw (in W).", true},
      {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", kCounter,
       "Total energy consumption since boot (in mJ).", false},
      {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", kCounter, "Total number of PCIe retries.", false},
      {"DCGM_FI_DEV_GPU_UTIL", kGauge, "GPU utilization (in %).", false},
      {"DCGM_FI_DEV_MEM_COPY_UTIL", kGauge, "Memory utilization (in %).", false},
      {"DCGM_FI_DEV_ENC_UTIL", kGauge, "Encoder utilization (in %).", false},
      {"DCGM_FI_DEV_DEC_UTIL", kGauge, "Decoder utilization (in %).", false},
      {"DCGM_FI_DEV_FB_FREE", kGauge, "Framebuffer memory free (in MiB).", false},
      {"DCGM_FI_DEV_FB_USED", kGauge, "Framebuffer memory used (in MiB).", false},
      {"DCGM_FI_DEV_FB_TOTAL", kGauge, "Framebuffer memory total (in MiB).", false},
      {"DCGM_FI_DEV_FB_RESERVED", kGauge, "Framebuffer memory reserved (in MiB).", false},
      {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", kCounter, "Total number of single-bit volatile ECC errors.",
       false},
      {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", kCounter, "Total number of double-bit volatile ECC errors.",
       false},
      {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", kCounter,
       "Total number of single-bit persistent ECC errors.", false},
      {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", kCounter,
       "Total number of double-bit persistent ECC errors.", false},
      {"DCGM_FI_DEV_RETIRED_SBE", kCounter,
       "Total number of retired pages due to single-bit errors.", false},
      {"DCGM_FI_DEV_RETIRED_DBE", kCounter,
       "Total number of retired pages due to double-bit errors.", false},
      {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", kCounter,
       "Number of remapped rows for correctable errors", false},
      {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", kCounter,
       "Number of remapped rows for uncorrectable errors", false},
      {"DCGM_FI_DEV_ROW_REMAP_FAILURE", kGauge, "Whether remapping of rows has failed", false},
      {"DCGM_FI_DEV_ROW_REMAP_PENDING", kGauge,
       "Whether a row remapping is pending (the GPU needs a reset)", false},
      {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", kCounter,
       "Total NVLink data sent and received over all links (in KiB).", false},
      {"DCGM_FI_DEV_VGPU_LICENSE_STATUS", kGauge, "vGPU License status", false},
      {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", kGauge, "Ratio of time the graphics engine is active.",
       true},
      {"DCGM_FI_PROF_SM_ACTIVE", kGauge, "The ratio of cycles an SM has at least 1 warp assigned.",
       true},
      {"DCGM_FI_PROF_SM_OCCUPANCY", kGauge, "The ratio of number of warps resident on an SM.",
       true},
      {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kGauge,
       "Ratio of cycles the tensor (HMMA) pipe is active.", true},
      {"DCGM_FI_PROF_DRAM_ACTIVE", kGauge,
       "Ratio of cycles the device memory interface is active sending or receiving data.", true},
      {"DCGM_FI_PROF_PIPE_FP64_ACTIVE", kGauge, "Ratio of cycles the fp64 pipes are active.", true},
      {"DCGM_FI_PROF_PIPE_FP32_ACTIVE", kGauge, "Ratio of cycles the fp32 pipes are active.", true},
      {"DCGM_FI_PROF_PIPE_FP16_ACTIVE", kGauge, "Ratio of cycles the fp16 pipes are active.", true},
      {"DCGM_FI_PROF_PCIE_TX_BYTES", kGauge,
       "The rate of data transmitted over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       false},
      {"DCGM_FI_PROF_PCIE_RX_BYTES", kGauge,
       "The rate of data received over the PCIe bus - including both protocol headers and data "
       "payloads - in bytes per second.",
       false},
      {"DCGM_FI_PROF_NVLINK_TX_BYTES", kGauge,
       "The rate of data transmitted over NVLink, not including protocol headers, in bytes per "
       "second.",
       false},
      {"DCGM_FI_PROF_NVLINK_RX_BYTES", kGauge,
       "The rate of data received over NVLink, not including protocol headers, in bytes per "
       "second.",
       false},
  }};
  return specs;
}

}  // namespace gpunode::metrics
