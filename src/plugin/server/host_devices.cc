#include "plugin/server/host_devices.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace gpunode::plugin {

HostDevices ReadHostDevices(const core::HostRoot& host, const std::string& dev_root) {
  HostDevices devices;
  for (const char* path :
       {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    if (host.Exists(UnderRoot(dev_root, path))) devices.control.push_back(path);
  }
  absl::StatusOr<std::string> minors = host.ReadFile("/proc/driver/nvidia-caps/mig-minors");
  if (minors.ok()) {
    for (absl::string_view line : absl::StrSplit(*minors, '\n', absl::SkipWhitespace())) {
      std::vector<absl::string_view> fields =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipWhitespace());
      unsigned minor = 0;
      if (fields.size() == 2 && absl::SimpleAtoi(fields[1], &minor)) {
        devices.mig_minors[std::string(fields[0])] = minor;
      }
    }
  }
  return devices;
}

}  // namespace gpunode::plugin
