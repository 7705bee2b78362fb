// The product brand nvmlDeviceGetBrand reports (NVML_BRAND_*), from what a profile or a capture
// says about the GPU.
#pragma once

#include <optional>
#include <string_view>

#include "nvml/abi.h"

namespace gpunode::sim {

// The brand current drivers report for a product, judged from its name as nvmlDeviceGetName gives
// it ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "NVIDIA A10-12Q" in a vGPU guest), its
// nvmlDeviceArchitecture_t and its virtualization mode. NVIDIA publishes no rule for it; these
// rules reproduce the public captures listed in sim/SOURCES.md. nullopt for an empty name.
std::optional<nvmlBrandType_t> brand_from_product_name(
    std::string_view name, std::optional<unsigned> architecture,
    nvmlGpuVirtualizationMode_t virtualization_mode);

// The brand behind nvidia-smi's "Product Brand" text (`<product_brand>` in -q -x), matched
// without regard to case: "NVIDIA", "Tesla", "GeForce", "NVIDIA RTX"... nullopt for "N/A" and for
// text nvidia-smi is not known to print.
std::optional<nvmlBrandType_t> brand_from_smi_text(std::string_view text);

}  // namespace gpunode::sim
