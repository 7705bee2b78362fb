#include "mig/mig_config.h"

#include <cstdio>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config_map_manifest.h"
#include "core/file_io.h"
#include "core/printable.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::mig {
namespace {

// Raised inside the parser with the node the problem is at; turned into one Status line.
struct ConfigError {
  YAML::Mark mark;
  std::string message;
};

std::string Quote(std::string_view text) { return absl::StrCat("\"", core::Printable(text), "\""); }

[[noreturn]] void Fail(const YAML::Node& node, std::string message) {
  throw ConfigError{node.Mark(), std::move(message)};
}

std::string Scalar(const YAML::Node& node, absl::string_view field) {
  if (!node.IsScalar()) Fail(node, absl::StrCat(field, ": expected a single value"));
  return node.Scalar();
}

bool Bool(const YAML::Node& node, absl::string_view field) {
  std::string text = absl::AsciiStrToLower(Scalar(node, field));
  if (text == "true") return true;
  if (text == "false") return false;
  Fail(node, absl::StrCat(field, ": ", Quote(text), " is not true or false"));
}

unsigned Count(const YAML::Node& node, absl::string_view field, unsigned max) {
  std::string text = Scalar(node, field);
  unsigned value = 0;
  for (char c : text) {
    if (c < '0' || c > '9' || value > max) {
      Fail(node, absl::StrCat(field, ": ", Quote(text), " is not a count from 0 to ", max));
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  if (text.empty() || value > max)
    Fail(node, absl::StrCat(field, ": ", Quote(text), " is not a count from 0 to ", max));
  return value;
}

std::string DeviceId(const YAML::Node& node) {
  std::string text = absl::AsciiStrToUpper(Scalar(node, "device-filter"));
  bool ok = text.size() == 10 && text[0] == '0' && text[1] == 'X';
  for (size_t i = 2; ok && i < text.size(); ++i) ok = absl::ascii_isxdigit(text[i]);
  if (!ok) {
    Fail(node, absl::StrCat("device-filter: ", Quote(node.Scalar()),
                            " is not a PCI id; write the device and vendor ids as 0x20B210DE"));
  }
  text[1] = 'x';
  return text;
}

MigConfigEntry ReadEntry(const YAML::Node& node, absl::string_view where) {
  if (!node.IsMap())
    Fail(node, absl::StrCat(where, ": expected a map with devices and mig-enabled"));
  MigConfigEntry entry;
  entry.line = node.Mark().line + 1;
  bool has_devices = false, has_enabled = false;
  for (const auto& item : node) {
    std::string key = item.first.Scalar();
    const YAML::Node& value = item.second;
    if (key == "device-filter") {
      if (value.IsSequence()) {
        for (const auto& id : value) entry.device_filter.push_back(DeviceId(id));
      } else {
        entry.device_filter.push_back(DeviceId(value));
      }
    } else if (key == "devices") {
      has_devices = true;
      if (value.IsScalar() && value.Scalar() == "all") continue;
      if (!value.IsSequence())
        Fail(value, "devices: expected all or a list of GPU indices such as [0, 1]");
      entry.devices.emplace();
      for (const auto& index : value) entry.devices->push_back(Count(index, "devices", 255));
    } else if (key == "mig-enabled") {
      has_enabled = true;
      entry.mig_enabled = Bool(value, "mig-enabled");
    } else if (key == "mig-devices") {
      if (value.IsNull()) continue;
      if (!value.IsMap())
        Fail(value,
             "mig-devices: expected a map of profile names to counts, e.g. {\"1g.10gb\": 7}");
      std::set<std::string> seen;
      for (const auto& device : value) {
        std::string profile = Scalar(device.first, "mig-devices");
        if (!seen.insert(profile).second)
          Fail(device.first, absl::StrCat("mig-devices: ", Quote(profile), " twice"));
        entry.mig_devices.emplace_back(profile, Count(device.second, "mig-devices", 8));
      }
    } else {
      Fail(item.first, absl::StrCat(where, ": unknown field ", Quote(key),
                                    "; known: device-filter, devices, mig-enabled, mig-devices"));
    }
  }
  if (!has_devices) Fail(node, absl::StrCat(where, ": missing devices; write devices: all"));
  if (!has_enabled) Fail(node, absl::StrCat(where, ": missing mig-enabled; write true or false"));
  if (!entry.mig_enabled && !entry.mig_devices.empty())
    Fail(node, absl::StrCat(where, ": mig-devices given with mig-enabled: false; remove them"));
  return entry;
}

}  // namespace

absl::StatusOr<MigConfigFile> ParseMigConfig(std::string_view text, const std::string& path) {
  MigConfigFile file;
  file.path = path;
  try {
    YAML::Node root = YAML::Load(std::string(text));
    if (!root.IsMap()) Fail(root, "expected a map with version and mig-configs");
    YAML::Node version = root["version"];
    if (!version.IsDefined() || !version.IsScalar() || version.Scalar() != "v1")
      Fail(version.IsDefined() ? version : root, "version: must be v1");
    for (const auto& item : root) {
      std::string key = item.first.Scalar();
      if (key != "version" && key != "mig-configs")
        Fail(item.first,
             absl::StrCat("unknown field ", Quote(key), "; known: version, mig-configs"));
    }
    YAML::Node configs = root["mig-configs"];
    if (!configs.IsDefined() || !configs.IsMap())
      Fail(configs.IsDefined() ? configs : root, "mig-configs: expected a map of named layouts");
    for (const auto& config : configs) {
      std::string name = Scalar(config.first, "mig-configs");
      std::string printable_name = core::Printable(name);
      if (!config.second.IsSequence())
        Fail(config.second,
             absl::StrCat("mig-configs.", printable_name, ": expected a list of entries"));
      std::vector<MigConfigEntry> entries;
      size_t i = 0;
      for (const auto& entry : config.second)
        entries.push_back(
            ReadEntry(entry, absl::StrCat("mig-configs.", printable_name, "[", i++, "]")));
      file.configs[name] = std::move(entries);
    }
  } catch (const ConfigError& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": ", e.message));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(path, ":", e.mark.line + 1, ": not valid YAML: ",
                                                   core::Printable(e.msg), "; fix the syntax"));
  }
  return file;
}

absl::StatusOr<MigConfigFile> ReadMigConfig(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) return absl::InvalidArgumentError(text.status().message());
  // The manager's pod reads the one key of its ConfigMap (deploy/mig-manager/config.yaml) as a
  // file; given the manifest, read that key.
  if (std::optional<core::ConfigMapManifest> manifest = core::AsConfigMap(*text)) {
    if (manifest->data.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": this is a ConfigMap (", manifest->name, "), not a MIG config, and ",
          core::DescribeDataKeys(*manifest),
          "; give the file of one key (as the manager mounts it) or a ConfigMap with one key"));
    }
    const auto& [key, config] = manifest->data.front();
    return ParseMigConfig(config, core::DataKeyLabel(path, key));
  }
  return ParseMigConfig(*text, path);
}

std::string PciDeviceIdString(uint32_t pci_device_id) {
  char text[16];
  std::snprintf(text, sizeof text, "0x%08X", pci_device_id);
  return text;
}

bool EntryMatches(const MigConfigEntry& entry, unsigned index, uint32_t pci_device_id) {
  if (entry.devices) {
    bool listed = false;
    for (unsigned d : *entry.devices) listed = listed || d == index;
    if (!listed) return false;
  }
  if (entry.device_filter.empty()) return true;
  std::string id = PciDeviceIdString(pci_device_id);
  for (const std::string& f : entry.device_filter)
    if (f == id) return true;
  return false;
}

}  // namespace gpunode::mig
