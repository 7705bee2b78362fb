// gpunode's NVML declarations described for the comparison with NVIDIA's header.
#include <cstddef>

#include "abi_description.h"
#include "abi_lists.h"
#include "nvml/abi.h"
#include "signature_shape.h"

namespace gpunode::nvml_abi {

AbiDescription OurAbi() {
  AbiDescription d;
#define GPUNODE_STRUCT(ours, nvidias) d.struct_sizes[#ours] = sizeof(ours);
  GPUNODE_NVML_ABI_STRUCTS(GPUNODE_STRUCT)
#define GPUNODE_FIELD(ours, nvidias, field) \
  d.fields[#ours "." #field] = {offsetof(ours, field), sizeof(ours::field)};
  GPUNODE_NVML_ABI_FIELDS(GPUNODE_FIELD)
#define GPUNODE_CONSTANT(name) d.constants[#name] = static_cast<long long>(name);
  GPUNODE_NVML_ABI_CONSTANTS(GPUNODE_CONSTANT)
#define GPUNODE_ENTRY(name) d.entry_points[#name] = ShapeOf<decltype(::name)>();
  GPUNODE_NVML_HEADER_ENTRY_POINTS(GPUNODE_ENTRY)
  return d;
}

}  // namespace gpunode::nvml_abi
