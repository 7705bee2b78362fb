#include "kube/view_copy.h"

namespace gpunode::kube {

Labels CopyLabels(StringArena& arena, const Labels& in) {
  Labels out;
  out.reserve(in.size());
  for (const auto& [k, v] : in) out.emplace_back(arena.Intern(k), arena.Copy(v));
  return out;
}

ResourceList CopyResources(StringArena& arena, const ResourceList& in) {
  ResourceList out;
  for (const ResourceAmount& r : in) {
    out.push_back({arena.Intern(r.name), r.milli, arena.Copy(r.text)});
  }
  return out;
}

std::vector<std::string_view> CopyStrings(StringArena& arena,
                                          const std::vector<std::string_view>& in) {
  std::vector<std::string_view> out;
  out.reserve(in.size());
  for (std::string_view s : in) out.push_back(arena.Copy(s));
  return out;
}

NodeSelectorRequirement CopyRequirement(StringArena& arena, const NodeSelectorRequirement& in) {
  return {arena.Intern(in.key), arena.Intern(in.op), CopyStrings(arena, in.values)};
}

}  // namespace gpunode::kube
