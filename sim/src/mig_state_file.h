// GPUNODE_SIM_STATE: the MIG layouts of a simulated node kept in a file, so that one process's
// changes (gpunode mig apply) are what the next process (inventory, the device plugin) sees.
//
// The file is text, one record per line, written whole and renamed into place:
//   gpunode-sim-mig-state 1
//   gpu <uuid> <enabled 0|1> <pending 0|1>
//   gi <id> <profile id> <placement start>
//   ci <id> <profile index> <placement start>
// GPUs are matched by UUID; a GPU the configuration lacks is skipped.
#pragma once

#include <string>

#include "node_state.h"

namespace gpunode::sim {

// Applies the saved layouts to `node`. A missing file is an empty state; a file that cannot be
// read or does not parse fails with one line naming the file, the line and the fix.
bool load_mig_state(NodeState& node, const std::string& path, std::string& error);

// Writes every GPU's layout to node.mig_state_file() atomically; nothing when it is "". False
// when the file cannot be written (the change stands; the next save tries again).
bool save_mig_state(NodeState& node);

}  // namespace gpunode::sim
