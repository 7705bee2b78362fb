#include "brands.h"

#include <algorithm>
#include <cctype>
#include <utility>

namespace gpunode::sim {
namespace {

// Names unlike gpu_families.cc's helpers: the unity build compiles both files as one.
bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

bool has_ignoring_case(std::string_view text, std::string_view part) {
  if (part.size() > text.size()) return false;
  for (size_t i = 0; i + part.size() <= text.size(); ++i) {
    if (same_ignoring_case(text.substr(i, part.size()), part)) return true;
  }
  return false;
}

// A vGPU type's series letter, from the "-<frame buffer GB><letter>" that ends its name
// ("NVIDIA A10-12Q", "GRID A100-4C"); 0 when the name has none.
char vgpu_series(std::string_view name) {
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || name.size() - dash < 3) return 0;
  std::string_view size = name.substr(dash + 1, name.size() - dash - 2);
  if (!std::all_of(size.begin(), size.end(),
                   [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; })) {
    return 0;
  }
  return name.back();
}

// nvidia-smi's words for each brand: those of public captures where one was found, the rest as
// sim/SOURCES.md says.
constexpr std::pair<std::string_view, nvmlBrandType_t> kSmiBrands[] = {
    {"Unknown", NVML_BRAND_UNKNOWN},
    {"Quadro", NVML_BRAND_QUADRO},
    {"Tesla", NVML_BRAND_TESLA},
    {"NVS", NVML_BRAND_NVS},
    {"Grid", NVML_BRAND_GRID},
    {"GeForce", NVML_BRAND_GEFORCE},
    {"Titan", NVML_BRAND_TITAN},
    {"NVIDIA Virtual Applications", NVML_BRAND_NVIDIA_VAPPS},
    {"NVIDIA Virtual PC", NVML_BRAND_NVIDIA_VPC},
    {"NVIDIA Virtual Compute Server", NVML_BRAND_NVIDIA_VCS},
    {"NVIDIA RTX Virtual Workstation", NVML_BRAND_NVIDIA_VWS},
    {"NVIDIA Cloud Gaming", NVML_BRAND_NVIDIA_CLOUD_GAMING},
    {"Quadro RTX", NVML_BRAND_QUADRO_RTX},
    {"NVIDIA RTX", NVML_BRAND_NVIDIA_RTX},
    {"NVIDIA", NVML_BRAND_NVIDIA},
    {"GeForce RTX", NVML_BRAND_GEFORCE_RTX},
    {"Titan RTX", NVML_BRAND_TITAN_RTX},
};

constexpr unsigned kArchitectureTuring = 6;  // NVML_DEVICE_ARCH_TURING

}  // namespace

std::optional<nvmlBrandType_t> brand_from_product_name(
    std::string_view name, std::optional<unsigned> architecture,
    nvmlGpuVirtualizationMode_t virtualization_mode) {
  if (name.empty()) return std::nullopt;
  // A vGPU guest reports the licensed product of its vGPU type's series, not the board's brand.
  if (virtualization_mode == NVML_GPU_VIRTUALIZATION_MODE_VGPU) {
    switch (vgpu_series(name)) {
      case 'A':
        return NVML_BRAND_NVIDIA_VAPPS;
      case 'B':
        return NVML_BRAND_NVIDIA_VPC;
      case 'C':
        return NVML_BRAND_NVIDIA_VCS;
      case 'Q':
        return NVML_BRAND_NVIDIA_VWS;
      default:
        break;
    }
  }
  // GeForce RTX and TITAN RTX boards report the plain GeForce and Titan brands; nvml.h marks
  // GEFORCE_RTX and TITAN_RTX unused.
  if (has_ignoring_case(name, "GeForce")) return NVML_BRAND_GEFORCE;
  if (has_ignoring_case(name, "TITAN")) return NVML_BRAND_TITAN;
  // No capture of a Quadro RTX board was found to tell QUADRO from QUADRO_RTX; Quadro it is.
  if (has_ignoring_case(name, "Quadro")) return NVML_BRAND_QUADRO;
  if (name.starts_with("NVS ") || name.starts_with("NVIDIA NVS ")) return NVML_BRAND_NVS;
  // The professional line after Quadro: RTX A6000, RTX 6000 Ada Generation, RTX PRO 6000.
  if (name.starts_with("NVIDIA RTX") || name.starts_with("RTX ")) return NVML_BRAND_NVIDIA_RTX;
  // Tesla-named boards up to Volta keep the Tesla brand on current drivers; the Tesla T4
  // (Turing) reports NVIDIA.
  if (name.starts_with("Tesla")) {
    return architecture && *architecture >= kArchitectureTuring ? NVML_BRAND_NVIDIA
                                                                : NVML_BRAND_TESLA;
  }
  return NVML_BRAND_NVIDIA;  // data-center parts since Ampere: A100, A10, H100, H200...
}

std::optional<nvmlBrandType_t> brand_from_smi_text(std::string_view text) {
  for (const auto& [words, brand] : kSmiBrands) {
    if (same_ignoring_case(text, words)) return brand;
  }
  return std::nullopt;
}

}  // namespace gpunode::sim
