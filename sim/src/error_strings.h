// nvmlErrorString's texts.
#pragma once

#include "nvml/abi.h"

namespace gpunode::sim {

// The strings libnvidia-ml returns (see sim/SOURCES.md); "Unknown Error" for unknown codes.
const char* nvml_error_text(nvmlReturn_t result);

}  // namespace gpunode::sim
