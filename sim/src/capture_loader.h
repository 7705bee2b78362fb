// Loads an `nvidia-smi -q -x` capture as the node to replay (mapping in docs/SIMULATOR.md).
#pragma once

#include <string_view>

#include "load_result.h"
#include "node_model.h"

namespace gpunode::sim {

// Every <gpu> element becomes a GPU. Values that say N/A, are missing or do not parse are left
// empty (NOT_SUPPORTED); only XML that is not well formed, a root other than <nvidia_smi_log>
// or a capture without GPUs is an error, reported as "<source>[:line]: ...".
LoadResult<NodeModel> load_capture(std::string_view text, std::string_view source);

}  // namespace gpunode::sim
