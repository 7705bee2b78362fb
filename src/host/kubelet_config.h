// The kubelet's image garbage collection and image pull settings as the running kubelet has
// them: its --config file (a KubeletConfiguration, YAML or JSON), the drop-ins of --config-dir
// over it, and the command-line flags over both; every value says where it came from. Values the
// kubelet would reject (a threshold outside 0..100) are kept as read: judging them is the
// caller's business.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "core/host_root.h"

namespace gpunode::host {

enum class SettingSource { kDefault, kConfigFile, kFlag };

template <typename T>
struct KubeletSetting {
  explicit KubeletSetting(T default_value) : value(std::move(default_value)) {}
  KubeletSetting(T value, SettingSource source, std::string origin)
      : value(std::move(value)), source(source), origin(std::move(origin)) {}

  T value;
  SettingSource source = SettingSource::kDefault;
  std::string origin;  // the file or the flag that set the value; empty for a default
};

// The fields of KubeletConfiguration (v1beta1) with the kubelet's defaults.
struct KubeletImageSettings {
  KubeletSetting<int> gc_high_threshold_percent{85};  // imageGCHighThresholdPercent
  KubeletSetting<int> gc_low_threshold_percent{80};   // imageGCLowThresholdPercent
  KubeletSetting<std::string> minimum_gc_age{"2m"};   // imageMinimumGCAge, a Go duration
  KubeletSetting<std::string> maximum_gc_age{"0s"};   // imageMaximumGCAge; 0 is off
  KubeletSetting<bool> serialize_image_pulls{true};   // serializeImagePulls
  // maxParallelImagePulls; unset is no limit once pulls are not serialized.
  KubeletSetting<std::optional<int>> max_parallel_image_pulls{std::nullopt};
  std::vector<std::string> files;  // the config files read, in the order applied
};

// Applies one KubeletConfiguration document read from `path` (named in errors). Fields it does
// not hold keep their values. InvalidArgument, naming the file, line and field, when the
// document is not YAML or JSON, or a field has the wrong type.
absl::Status ApplyKubeletConfigFile(std::string_view text, const std::string& path,
                                    KubeletImageSettings& settings);

// Applies the flags that override the files: --image-gc-high-threshold, --image-gc-low-threshold,
// --minimum-image-ttl-duration, --serialize-image-pulls. InvalidArgument for a value of the
// wrong type.
absl::Status ApplyKubeletFlags(const std::vector<std::string>& args,
                               KubeletImageSettings& settings);

// All of it for the kubelet started with `args` (its command line, program first). No --config
// means the kubelet reads no file. A file that cannot be read is an error naming it.
absl::StatusOr<KubeletImageSettings> ReadKubeletImageSettings(const core::HostRoot& host,
                                                              const std::vector<std::string>& args);

// "default", "<file>" or "flag --name".
std::string DescribeSource(SettingSource source, const std::string& origin);

}  // namespace gpunode::host
