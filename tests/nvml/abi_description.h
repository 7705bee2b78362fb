// The ABI facts one translation unit sees of the NVML declarations it includes, by name.
#pragma once

#include <cstddef>
#include <map>
#include <string>

namespace gpunode::nvml_abi {

struct FieldLayout {
  size_t offset = 0;
  size_t size = 0;
  bool operator==(const FieldLayout&) const = default;
};

struct AbiDescription {
  std::map<std::string, size_t> struct_sizes;       // by our struct name
  std::map<std::string, FieldLayout> fields;        // "nvmlPciInfo_t.busId"
  std::map<std::string, long long> constants;       // "NVML_ERROR_GPU_IS_LOST"
  std::map<std::string, std::string> entry_points;  // symbol -> ShapeOf (signature_shape.h)
};

// src/nvml/abi.h, gpunode's own declarations.
AbiDescription OurAbi();
// NVIDIA's nvml.h from the libnvidia-ml-dev package; the version is NVIDIA_NVML_HEADER_VERSION.
AbiDescription NvidiaAbi();

}  // namespace gpunode::nvml_abi
