#include "host/kubelet_config.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "host/kubelet_process.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::host {
namespace {

constexpr char kHighFlag[] = "--image-gc-high-threshold";
constexpr char kLowFlag[] = "--image-gc-low-threshold";
constexpr char kMinimumAgeFlag[] = "--minimum-image-ttl-duration";
constexpr char kSerializeFlag[] = "--serialize-image-pulls";

absl::Status FieldError(const std::string& where, int line, const char* field,
                        const std::string& problem) {
  return absl::InvalidArgumentError(
      absl::StrCat(where, line > 0 ? absl::StrCat(":", line) : "", ": ", field, ": ", problem));
}

// A Go duration as the kubelet's metav1.Duration reads it ("2m", "168h", "1h30m", "0").
bool IsDuration(const std::string& text) {
  absl::Duration duration;
  return absl::ParseDuration(text, &duration);
}

// strconv.ParseBool's spellings.
std::optional<bool> ParseGoBool(absl::string_view text) {
  for (const char* yes : {"1", "t", "T", "TRUE", "true", "True"}) {
    if (text == yes) return true;
  }
  for (const char* no : {"0", "f", "F", "FALSE", "false", "False"}) {
    if (text == no) return false;
  }
  return std::nullopt;
}

// Reads `field` of `document` into `setting` when present; the value's conversion decides T.
template <typename T>
absl::Status ReadField(const YAML::Node& document, const char* field, const std::string& path,
                       KubeletSetting<T>& setting) {
  YAML::Node node = document[field];
  if (!node.IsDefined() || node.IsNull()) return absl::OkStatus();
  int line = node.Mark().line + 1;
  if (!node.IsScalar()) return FieldError(path, line, field, "not a single value");
  try {
    if constexpr (std::is_same_v<T, std::optional<int>>) {
      setting.value = node.as<int>();
    } else {
      setting.value = node.as<T>();
    }
  } catch (const YAML::Exception&) {
    const char* expected = std::is_same_v<T, bool> ? "true or false" : "an integer";
    if constexpr (std::is_same_v<T, std::string>) expected = "a string";
    return FieldError(path, line, field, absl::StrCat("\"", node.Scalar(), "\" is not ", expected));
  }
  if constexpr (std::is_same_v<T, std::string>) {
    if (!IsDuration(setting.value)) {
      return FieldError(path, line, field,
                        absl::StrCat("\"", setting.value, "\" is not a duration (e.g. 2m, 168h)"));
    }
  }
  setting.source = SettingSource::kConfigFile;
  setting.origin = path;
  return absl::OkStatus();
}

absl::Status IntFlag(const std::vector<std::string>& args, const char* flag,
                     KubeletSetting<int>& setting) {
  std::optional<std::string> value = FlagValue(args, flag);
  if (!value) return absl::OkStatus();
  if (!absl::SimpleAtoi(*value, &setting.value)) {
    return FieldError("kubelet command line", 0, flag,
                      absl::StrCat("\"", *value, "\" is not an integer"));
  }
  setting.source = SettingSource::kFlag;
  setting.origin = flag;
  return absl::OkStatus();
}

absl::Status ApplyFile(const core::HostRoot& host, const std::string& path,
                       KubeletImageSettings& settings) {
  absl::StatusOr<std::string> text = host.ReadFile(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(),
                        absl::StrCat("the kubelet's config ", path, ": ", text.status().message()));
  }
  return ApplyKubeletConfigFile(*text, path, settings);
}

}  // namespace

absl::Status ApplyKubeletConfigFile(std::string_view text, const std::string& path,
                                    KubeletImageSettings& settings) {
  YAML::Node document;
  try {
    document = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", e.mark.line + 1, ": not YAML or JSON: ", core::Printable(e.msg)));
  }
  if (document.IsNull()) {
    settings.files.push_back(path);
    return absl::OkStatus();
  }
  if (!document.IsMap()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a KubeletConfiguration (the document is not a mapping)"));
  }
  RETURN_IF_ERROR(
      ReadField(document, "imageGCHighThresholdPercent", path, settings.gc_high_threshold_percent));
  RETURN_IF_ERROR(
      ReadField(document, "imageGCLowThresholdPercent", path, settings.gc_low_threshold_percent));
  RETURN_IF_ERROR(ReadField(document, "imageMinimumGCAge", path, settings.minimum_gc_age));
  RETURN_IF_ERROR(ReadField(document, "imageMaximumGCAge", path, settings.maximum_gc_age));
  RETURN_IF_ERROR(ReadField(document, "serializeImagePulls", path, settings.serialize_image_pulls));
  RETURN_IF_ERROR(
      ReadField(document, "maxParallelImagePulls", path, settings.max_parallel_image_pulls));
  settings.files.push_back(path);
  return absl::OkStatus();
}

absl::Status ApplyKubeletFlags(const std::vector<std::string>& args,
                               KubeletImageSettings& settings) {
  RETURN_IF_ERROR(IntFlag(args, kHighFlag, settings.gc_high_threshold_percent));
  RETURN_IF_ERROR(IntFlag(args, kLowFlag, settings.gc_low_threshold_percent));
  if (std::optional<std::string> age = FlagValue(args, kMinimumAgeFlag)) {
    if (!IsDuration(*age)) {
      return FieldError("kubelet command line", 0, kMinimumAgeFlag,
                        absl::StrCat("\"", *age, "\" is not a duration (e.g. 2m)"));
    }
    settings.minimum_gc_age = {*age, SettingSource::kFlag, kMinimumAgeFlag};
  }
  if (std::optional<std::string> serialize = FlagValue(args, kSerializeFlag, FlagKind::kBoolean)) {
    std::optional<bool> on = ParseGoBool(*serialize);
    if (!on) {
      return FieldError("kubelet command line", 0, kSerializeFlag,
                        absl::StrCat("\"", *serialize, "\" is not true or false"));
    }
    settings.serialize_image_pulls = {*on, SettingSource::kFlag, kSerializeFlag};
  }
  return absl::OkStatus();
}

absl::StatusOr<KubeletImageSettings> ReadKubeletImageSettings(
    const core::HostRoot& host, const std::vector<std::string>& args) {
  KubeletImageSettings settings;
  if (std::optional<std::string> config = FlagValue(args, "--config"); config && !config->empty()) {
    RETURN_IF_ERROR(ApplyFile(host, *config, settings));
  }
  // Drop-ins (Kubernetes 1.28+): every *.conf of the directory, in name order, over the file.
  if (std::optional<std::string> dir = FlagValue(args, "--config-dir"); dir && !dir->empty()) {
    absl::StatusOr<std::vector<std::string>> names = host.ListDir(*dir);
    if (!names.ok()) {
      return absl::Status(names.status().code(),
                          absl::StrCat("the kubelet's --config-dir: ", names.status().message()));
    }
    for (const std::string& name : *names) {
      if (!absl::EndsWith(name, ".conf")) continue;
      RETURN_IF_ERROR(ApplyFile(host, absl::StrCat(*dir, "/", name), settings));
    }
  }
  RETURN_IF_ERROR(ApplyKubeletFlags(args, settings));
  return settings;
}

std::string DescribeSource(SettingSource source, const std::string& origin) {
  switch (source) {
    case SettingSource::kDefault:
      return "default";
    case SettingSource::kConfigFile:
      return origin;
    case SettingSource::kFlag:
      return absl::StrCat("flag ", origin);
  }
  return "default";
}

}  // namespace gpunode::host
