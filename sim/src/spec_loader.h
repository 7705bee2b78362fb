// Turns what the user named (a built-in profile, a profile file, a capture file, and perhaps a
// topology capture) into the node model, or into the one line that says what is wrong.
#pragma once

#include <string>
#include <string_view>

#include "load_result.h"
#include "node_model.h"

namespace gpunode::sim {

// `spec` is tried as a built-in profile name first, then as a path. A file is a capture when its
// name ends in .xml or its first non-blank character is '<', else a profile YAML. A non-empty
// `topology_file` replaces the profile's link matrix (and gives NUMA nodes when it has them).
LoadResult<NodeModel> load_spec(std::string_view spec, std::string_view topology_file);

// The whole of a regular file of at most 64 MiB, or why not: missing, a directory, a device or
// FIFO (reading those could block), unreadable, too large, empty. `hint` says what to give
// instead and ends the message.
LoadResult<std::string> read_input_file(const std::string& path, std::string_view hint);

}  // namespace gpunode::sim
