// NVIDIA's own nvml.h, compiled alone (its declarations and ours cannot share a translation unit)
// and described by the same lists as ours.
#include <cstddef>

// Keeps the unversioned names (nvmlInit, nvmlDeviceGetPciInfo_v2...) declared as themselves
// instead of macros that rename them to the newest version.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include "abi_description.h"
#include "abi_lists.h"
#include "signature_shape.h"

// gpunode's names for NVIDIA's struct version macros.
#define kNvmlMemoryV2Version nvmlMemory_v2
#define kNvmlGpuInstanceProfileInfoV2Version nvmlGpuInstanceProfileInfo_v2
#define kNvmlComputeInstanceProfileInfoV2Version nvmlComputeInstanceProfileInfo_v2

namespace gpunode::nvml_abi {

AbiDescription NvidiaAbi() {
  AbiDescription d;
#define GPUNODE_STRUCT(ours, nvidias) d.struct_sizes[#ours] = sizeof(nvidias);
  GPUNODE_NVML_ABI_STRUCTS(GPUNODE_STRUCT)
#define GPUNODE_FIELD(ours, nvidias, field) \
  d.fields[#ours "." #field] = {offsetof(nvidias, field), sizeof(nvidias::field)};
  GPUNODE_NVML_ABI_FIELDS(GPUNODE_FIELD)
#define GPUNODE_CONSTANT(name) d.constants[#name] = static_cast<long long>(name);
  GPUNODE_NVML_ABI_CONSTANTS(GPUNODE_CONSTANT)
#define GPUNODE_ENTRY(name) d.entry_points[#name] = ShapeOf<decltype(::name)>();
  GPUNODE_NVML_HEADER_ENTRY_POINTS(GPUNODE_ENTRY)
  return d;
}

}  // namespace gpunode::nvml_abi
