// The NVIDIA device resources of a node or a pod, by name, in exact milli-units.
#pragma once

#include <cstdint>
#include <string_view>

#include "absl/container/inlined_vector.h"

namespace gpunode::kube {

struct ResourceAmount {
  std::string_view name;  // e.g. nvidia.com/gpu, nvidia.com/mig-1g.10gb
  int64_t milli = 0;
  std::string_view text;  // as written in the object, for messages ("500m")
};

// Almost every object carries zero or one NVIDIA resource, so one inline slot avoids a heap
// allocation for each of the many pods.
using ResourceList = absl::InlinedVector<ResourceAmount, 1>;

inline const ResourceAmount* FindResource(const ResourceList& list, std::string_view name) {
  for (const ResourceAmount& r : list) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

inline int64_t MilliOf(const ResourceList& list, std::string_view name) {
  const ResourceAmount* r = FindResource(list, name);
  return r ? r->milli : 0;
}

// Adds `milli` to the entry for `name`, creating it (text-less) when absent.
inline void AddMilli(ResourceList& list, std::string_view name, int64_t milli) {
  for (ResourceAmount& r : list) {
    if (r.name == name) {
      r.milli += milli;
      return;
    }
  }
  list.push_back({name, milli, {}});
}

}  // namespace gpunode::kube
