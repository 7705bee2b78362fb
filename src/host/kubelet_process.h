// The running kubelet as /proc shows it under the host root: its command line, and the flags on
// it. doctor's kubelet checks read the kubelet's settings from there.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/host_root.h"

namespace gpunode::host {

// The arguments of the first /proc/<pid>/cmdline whose program is "kubelet", or nullopt when no
// such process is visible.
std::optional<std::vector<std::string>> KubeletCommandLine(const core::HostRoot& host);

enum class FlagKind { kValue, kBoolean };

// The value of the flag `name` ("--config") given as `--config=VALUE` or `--config VALUE`; the
// last one on the line wins, as with the kubelet's flag parser (pflag). A boolean takes its value
// only as `--name=VALUE`; bare `--name` is "true", and the next argument is not its value.
std::optional<std::string> FlagValue(const std::vector<std::string>& args, std::string_view name,
                                     FlagKind kind = FlagKind::kValue);

}  // namespace gpunode::host
