#include "kube/pdb_reader.h"

#include <utility>
#include <vector>

#include "core/text.h"
#include "kube/pod_spec_reader.h"
#include "kube/view_copy.h"

namespace gpunode::kube {

using core::StrCat;

namespace {

// spec.selector; null selects nothing (present stays false).
absl::Status ReadSelector(od::value& selector, const JsonWalk& walk, LabelSelector& out) {
  bool null = false;
  RETURN_IF_ERROR(walk.IsNull(selector, "spec.selector", "an object", null));
  if (null) return absl::OkStatus();
  out.present = true;
  return walk.ForEachField(selector, "spec.selector", [&](const FieldKey& key, od::value& val) {
    if (key == "matchLabels") {
      return walk.ReadStringMap(val, "spec.selector.matchLabels", out.match_labels);
    }
    if (key != "matchExpressions") return absl::OkStatus();
    std::vector<NodeSelectorRequirement> requirements;
    RETURN_IF_ERROR(ReadRequirements(val, "spec.selector.matchExpressions", walk, requirements));
    for (NodeSelectorRequirement& r : requirements) {
      out.match_expressions.push_back({r.key, r.op, std::move(r.values)});
    }
    return absl::OkStatus();
  });
}

absl::Status ReadFields(od::object& obj, const JsonWalk& walk, PdbView& pdb) {
  return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
    if (key == "metadata") {
      return walk.ForEachField(val, "metadata", [&](const FieldKey& key, od::value& val) {
        if (key == "name") {
          RETURN_IF_ERROR(walk.ReadString(val, "metadata.name", pdb.name));
          walk.where().name = pdb.name;
        } else if (key == "namespace") {
          RETURN_IF_ERROR(walk.ReadString(val, "metadata.namespace", pdb.ns));
          walk.where().ns = pdb.ns;
        }
        return absl::OkStatus();
      });
    }
    if (key == "spec") {
      return walk.ForEachField(val, "spec", [&](const FieldKey& key, od::value& val) {
        if (key == "selector") return ReadSelector(val, walk, pdb.selector);
        return absl::OkStatus();
      });
    }
    if (key != "status") return absl::OkStatus();
    return walk.ForEachField(val, "status", [&](const FieldKey& key, od::value& val) {
      int64_t* target = key == "disruptionsAllowed" ? &pdb.disruptions_allowed
                        : key == "currentHealthy"   ? &pdb.current_healthy
                        : key == "desiredHealthy"   ? &pdb.desired_healthy
                                                    : nullptr;
      if (target == nullptr) return absl::OkStatus();
      return walk.ReadRequiredInt(val, "status", *target);
    });
  });
}

}  // namespace

absl::Status ReadPdb(od::object& obj, const JsonWalk& walk, ClusterSnapshot& snap) {
  snap.has_pdbs = true;
  PdbView pdb;
  RETURN_IF_ERROR(ReadFields(obj, walk, pdb));
  if (pdb.name.empty()) return walk.Fail("metadata.name", StrCat("missing; ", kFixInput));
  StringArena& a = *snap.strings;
  PdbView& out = snap.pdbs.emplace_back();
  out.ns = a.Intern(pdb.ns);
  out.name = a.Copy(pdb.name);
  out.selector.present = pdb.selector.present;
  out.selector.match_labels = CopyLabels(a, pdb.selector.match_labels);
  for (const LabelRequirement& r : pdb.selector.match_expressions) {
    out.selector.match_expressions.push_back(
        {a.Intern(r.key), a.Intern(r.op), CopyStrings(a, r.values)});
  }
  out.disruptions_allowed = pdb.disruptions_allowed;
  out.current_healthy = pdb.current_healthy;
  out.desired_healthy = pdb.desired_healthy;
  return absl::OkStatus();
}

}  // namespace gpunode::kube
