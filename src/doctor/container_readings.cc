#include "doctor/container_readings.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpunode::doctor {
namespace {

bool AllDigits(absl::string_view text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), absl::ascii_isdigit);
}

DeviceRequest Classify(absl::string_view entry) {
  DeviceRequest request;
  request.text = std::string(entry);
  if (AllDigits(entry) && absl::SimpleAtoi(entry, &request.index)) {
    request.kind = DeviceRequest::Kind::kIndex;
  } else if (absl::StartsWith(entry, "MIG-") || absl::StrContains(entry, ':')) {
    request.kind = DeviceRequest::Kind::kMig;
  } else {
    // "GPU-..." and anything else the runtime would look up as a UUID.
    request.kind = DeviceRequest::Kind::kGpuUuid;
  }
  return request;
}

}  // namespace

VisibleDevices ParseVisibleDevices(const std::optional<std::string>& value) {
  VisibleDevices visible;
  if (!value) return visible;
  absl::string_view list = absl::StripAsciiWhitespace(*value);
  if (list.empty() || list == "none") {
    visible.kind = VisibleDevices::Kind::kNone;
    return visible;
  }
  if (list == "void") {
    visible.kind = VisibleDevices::Kind::kVoid;
    return visible;
  }
  visible.kind = VisibleDevices::Kind::kList;
  for (absl::string_view entry : absl::StrSplit(list, ',', absl::SkipEmpty())) {
    entry = absl::StripAsciiWhitespace(entry);
    if (entry.empty()) continue;
    if (entry == "all") {
      visible.kind = VisibleDevices::Kind::kAll;
      visible.devices.clear();
      return visible;
    }
    DeviceRequest request = Classify(entry);
    bool seen = std::any_of(visible.devices.begin(), visible.devices.end(),
                            [&](const DeviceRequest& d) { return d.text == request.text; });
    if (!seen) visible.devices.push_back(std::move(request));
  }
  if (visible.devices.empty()) visible.kind = VisibleDevices::Kind::kNone;
  return visible;
}

std::optional<std::string> MigParentUuid(absl::string_view entry) {
  if (!absl::ConsumePrefix(&entry, "MIG-") || !absl::StartsWith(entry, "GPU-")) {
    return std::nullopt;
  }
  return std::string(entry.substr(0, entry.find('/')));
}

std::optional<CudaVersion> CudaVersionPrefix(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits('.', 2));
  if (parts.size() < 2) return std::nullopt;
  absl::string_view minor = parts[1];
  minor = minor.substr(0, std::min(minor.find('-'), minor.size()));
  CudaVersion version;
  if (!AllDigits(parts[0]) || !AllDigits(minor) || parts[0].size() > 4 || minor.size() > 4 ||
      !absl::SimpleAtoi(parts[0], &version.major) || !absl::SimpleAtoi(minor, &version.minor) ||
      version.major == 0) {
    return std::nullopt;
  }
  return version;
}

std::optional<std::string> LibraryFileVersion(absl::string_view file_name,
                                              absl::string_view library) {
  if (!absl::ConsumePrefix(&file_name, library) || !absl::ConsumePrefix(&file_name, ".")) {
    return std::nullopt;
  }
  for (absl::string_view part : absl::StrSplit(file_name, '.')) {
    if (!AllDigits(part)) return std::nullopt;
  }
  return std::string(file_name);
}

}  // namespace gpunode::doctor
