#include "host/kubelet_process.h"

#include "absl/strings/str_split.h"

namespace gpunode::host {

std::optional<std::vector<std::string>> KubeletCommandLine(const core::HostRoot& host) {
  absl::StatusOr<std::vector<std::string>> entries = host.ListDir("/proc");
  if (!entries.ok()) return std::nullopt;
  for (const std::string& pid : *entries) {
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    absl::StatusOr<std::string> cmdline = host.ReadFile("/proc/" + pid + "/cmdline");
    if (!cmdline.ok() || cmdline->empty()) continue;
    std::vector<std::string> args = absl::StrSplit(*cmdline, '\0', absl::SkipEmpty());
    if (args.empty()) continue;
    std::string program = args[0].substr(args[0].rfind('/') + 1);
    if (program == "kubelet") return args;
  }
  return std::nullopt;
}

std::optional<std::string> FlagValue(const std::vector<std::string>& args, std::string_view name,
                                     FlagKind kind) {
  std::optional<std::string> value;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == name) {
      if (kind == FlagKind::kBoolean) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      }
    } else if (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 &&
               arg[name.size()] == '=') {
      value = arg.substr(name.size() + 1);
    }
  }
  return value;
}

}  // namespace gpunode::host
