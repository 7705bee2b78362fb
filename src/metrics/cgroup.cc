#include "metrics/cgroup.h"

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace gpunode::metrics {
namespace {

bool IsHex(absl::string_view text) {
  for (char c : text) {
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Pod UIDs are RFC 4122 UUIDs, or 32 hex digits for static (file) pods; the systemd driver writes
// them with '_' for '-'.
std::string PodUid(absl::string_view text) {
  if (text.size() < 32 || text.size() > 36) return "";
  std::string uid;
  for (char c : text) {
    if (c == '_' || c == '-') {
      uid.push_back('-');
    } else if (absl::ascii_isxdigit(static_cast<unsigned char>(c))) {
      uid.push_back(static_cast<char>(absl::ascii_tolower(static_cast<unsigned char>(c))));
    } else {
      return "";
    }
  }
  return uid;
}

// "kubepods-burstable-pod<uid>.slice" (systemd) or "pod<uid>" (cgroupfs).
std::string PodUidOfSegment(absl::string_view segment) {
  if (absl::ConsumeSuffix(&segment, ".slice")) {
    size_t at = segment.rfind("-pod");
    if (at == absl::string_view::npos || !absl::StrContains(segment.substr(0, at), "kubepods"))
      return "";
    return PodUid(segment.substr(at + 4));
  }
  if (!absl::ConsumePrefix(&segment, "pod")) return "";
  return PodUid(segment);
}

// "cri-containerd-<id>.scope", "crio-<id>.scope", "docker-<id>.scope" (systemd) or "<id>"
// (cgroupfs). CRI-O's "crio-conmon-<id>.scope" is the monitor, not the container.
std::string ContainerIdOfSegment(absl::string_view segment) {
  if (absl::ConsumeSuffix(&segment, ".scope")) {
    if (absl::StartsWith(segment, "crio-conmon-")) return "";
    size_t dash = segment.rfind('-');
    if (dash == absl::string_view::npos) return "";
    absl::string_view runtime = segment.substr(0, dash);
    if (runtime != "cri-containerd" && runtime != "crio" && runtime != "docker" &&
        runtime != "libpod") {
      return "";
    }
    segment = segment.substr(dash + 1);
  }
  if (segment.size() < 12 || segment.size() > 128 || !IsHex(segment)) return "";
  return absl::AsciiStrToLower(segment);
}

CgroupIdentity ParsePath(absl::string_view path) {
  CgroupIdentity identity;
  std::vector<absl::string_view> segments = absl::StrSplit(path, '/', absl::SkipEmpty());
  bool under_kubepods = false;
  for (size_t i = 0; i < segments.size(); ++i) {
    absl::string_view segment = segments[i];
    if (absl::StrContains(segment, "kubepods")) under_kubepods = true;
    if (under_kubepods && identity.pod_uid.empty()) {
      if (std::string uid = PodUidOfSegment(segment); !uid.empty()) {
        identity.pod_uid = std::move(uid);
        // The container's cgroup is the pod's child; anything deeper belongs to that container.
        if (i + 1 < segments.size()) identity.container_id = ContainerIdOfSegment(segments[i + 1]);
        return identity;
      }
    }
  }
  // Outside Kubernetes: a container of a runtime's own (docker run) still has an id worth showing.
  if (!segments.empty()) {
    for (absl::string_view segment : segments) {
      if (absl::EndsWith(segment, ".scope")) {
        identity.container_id = ContainerIdOfSegment(segment);
        if (!identity.container_id.empty()) break;
      }
    }
  }
  return identity;
}

}  // namespace

CgroupIdentity ParseProcCgroup(std::string_view text) {
  absl::string_view contents(text.data(), text.size());
  CgroupIdentity fallback;
  for (absl::string_view line : absl::StrSplit(contents, '\n', absl::SkipEmpty())) {
    // hierarchy-id:controllers:path; the path may itself contain ':'.
    size_t first = line.find(':');
    if (first == absl::string_view::npos) continue;
    size_t second = line.find(':', first + 1);
    if (second == absl::string_view::npos) continue;
    CgroupIdentity identity = ParsePath(line.substr(second + 1));
    if (!identity.pod_uid.empty()) return identity;
    if (fallback.container_id.empty()) fallback = std::move(identity);
  }
  return fallback;
}

}  // namespace gpunode::metrics
