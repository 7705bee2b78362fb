#include "cluster/doctor_report.h"

#include "core/text.h"
#include "kube/api_object.h"

namespace gpunode::cluster {

namespace {

namespace od = kube::od;
using kube::FieldKey;
using kube::JsonWalk;

constexpr std::string_view kFixReport = "expected the report `gpunode doctor -o json` prints";

absl::Status ReadFinding(od::value& finding, const JsonWalk& walk, DoctorFinding& out) {
  return walk.ForEachField(finding, "findings[]", [&](const FieldKey& key, od::value& val) {
    if (key == "id") return walk.ReadStringCopy(val, "findings[].id", out.id);
    if (key == "status") return walk.ReadStringCopy(val, "findings[].status", out.status);
    if (key == "summary") return walk.ReadStringCopy(val, "findings[].summary", out.summary);
    if (key == "evidence") return walk.ReadStringCopy(val, "findings[].evidence", out.evidence);
    return absl::OkStatus();
  });
}

}  // namespace

absl::StatusOr<std::vector<DoctorFinding>> ReadDoctorReport(std::string_view json,
                                                            std::string_view source) {
  std::vector<DoctorFinding> findings;
  bool has_findings = false;
  RETURN_IF_ERROR(kube::ReadJsonObject(
      json, source, "doctor report", kFixReport, [&](od::object& obj, const JsonWalk& walk) {
        return walk.ForEachField(obj, "", [&](const FieldKey& key, od::value& val) {
          if (key != "findings") return absl::OkStatus();
          has_findings = true;
          return walk.ForEachElement(val, "findings", [&](od::value& finding) {
            return ReadFinding(finding, walk, findings.emplace_back());
          });
        });
      }));
  if (!has_findings) {
    return absl::InvalidArgumentError(core::StrCat(source, ": no findings; ", kFixReport));
  }
  return findings;
}

}  // namespace gpunode::cluster
