#include "cdi/mig_caps.h"

#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpunode::cdi {
namespace {

std::optional<unsigned> MinorFromCapabilityFile(const core::HostRoot& host,
                                                const std::string& capability) {
  absl::StatusOr<std::string> text =
      host.ReadFile(absl::StrCat("/proc/driver/nvidia/capabilities/", capability));
  if (!text.ok()) return std::nullopt;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    if (!absl::ConsumePrefix(&line, "DeviceFileMinor:")) continue;
    unsigned minor = 0;
    if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &minor)) return minor;
  }
  return std::nullopt;
}

std::optional<unsigned> MinorFromMigMinors(const std::string& mig_minors, const std::string& key) {
  for (absl::string_view line : absl::StrSplit(mig_minors, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipWhitespace());
    unsigned minor = 0;
    if (fields.size() == 2 && fields[0] == key && absl::SimpleAtoi(fields[1], &minor)) return minor;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> MigCapabilityNodes(const core::HostRoot& host, unsigned gpu_minor,
                                            unsigned gi, unsigned ci) {
  absl::StatusOr<std::string> mig_minors = host.ReadFile("/proc/driver/nvidia-caps/mig-minors");
  std::vector<std::string> nodes;
  for (const std::string& gi_path :
       {absl::StrCat("gpu", gpu_minor, "/mig/gi", gi, "/access"),
        absl::StrCat("gpu", gpu_minor, "/mig/gi", gi, "/ci", ci, "/access")}) {
    std::optional<unsigned> minor = MinorFromCapabilityFile(host, gi_path);
    if (!minor && mig_minors.ok()) {
      // mig-minors names the same capability without the "/mig" component.
      std::string key = gi_path;
      key.erase(key.find("/mig"), 4);
      minor = MinorFromMigMinors(*mig_minors, key);
    }
    if (minor) nodes.push_back(absl::StrCat("/dev/nvidia-caps/nvidia-cap", *minor));
  }
  return nodes;
}

}  // namespace gpunode::cdi
