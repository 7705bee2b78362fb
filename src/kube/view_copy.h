// Copies what the per-kind snapshot readers keep out of the JSON input (whose views die with the
// next document, see json_walk.h) into a snapshot's StringArena: names and keys that repeat
// across objects (namespaces, label keys, operators) are interned, other text is copied.
#pragma once

#include <string_view>
#include <vector>

#include "kube/node_view.h"
#include "kube/pod_view.h"
#include "kube/resource_list.h"
#include "kube/string_arena.h"

namespace gpunode::kube {

Labels CopyLabels(StringArena& arena, const Labels& in);
ResourceList CopyResources(StringArena& arena, const ResourceList& in);
std::vector<std::string_view> CopyStrings(StringArena& arena,
                                          const std::vector<std::string_view>& in);
NodeSelectorRequirement CopyRequirement(StringArena& arena, const NodeSelectorRequirement& in);

}  // namespace gpunode::kube
