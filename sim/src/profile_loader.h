// Loads a profile: the simulator's YAML description of a node (schema in docs/SIMULATOR.md).
#pragma once

#include <string_view>

#include "load_result.h"
#include "node_model.h"

namespace gpunode::sim {

// Parses and checks the whole profile, its topology matrix and timeline included. `source` names
// the input in messages ("profile.yaml", "built-in profile dgx-h100"); every error is one line
// "<source>:<line>: <field path>: <what is wrong>; <how to fix it>".
LoadResult<NodeModel> load_profile(std::string_view text, std::string_view source);

}  // namespace gpunode::sim
