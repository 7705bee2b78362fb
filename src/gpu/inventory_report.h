// `gpunode inventory` output: the `nvidia-smi -L` + `nvidia-smi topo -m` table, and the JSON
// contract other tools read (keys are stable: add, never rename).
#pragma once

#include <string>

#include "gpu/node_snapshot.h"
#include "nlohmann/json.hpp"

namespace gpunode::gpu {

nlohmann::ordered_json InventoryJson(const NodeSnapshot& node);
std::string InventoryTable(const NodeSnapshot& node);

}  // namespace gpunode::gpu
