#include "cli/config_flags.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string_view>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "plugin_config/config.h"

namespace gpunode::cli {
namespace {

using plugin_config::ConfigLayer;

enum class Kind {
  kText,  // --flag VALUE
  kBool,  // --flag alone is true, or --flag=BOOL
  kList,  // repeated or comma-separated
};

struct Row {
  const char* names;  // CLI11's; the first names the flag in errors
  const char* help;
  Kind kind;
  // Sets what the flag gave (`text` given, or `list` not empty) into `layer`.
  absl::Status (*apply)(const char* flag, const std::optional<std::string>& text,
                        const std::vector<std::string>& list, ConfigLayer& layer);
};

// A flag's text through the same parser as the config file, naming the flag on error.
template <auto Member, auto Parse>
absl::Status Parsed(const char* flag, const std::optional<std::string>& text,
                    const std::vector<std::string>&, ConfigLayer& layer) {
  if (!text) return absl::OkStatus();
  auto value = Parse(*text);
  if (!value.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", value.status().message()));
  }
  layer.*Member = *value;
  return absl::OkStatus();
}

absl::StatusOr<std::string> Text(absl::string_view text) { return std::string(text); }

absl::StatusOr<std::string> DiscoveryStrategy(absl::string_view text) {
  if (absl::Status st = plugin_config::CheckDeviceDiscoveryStrategy(text); !st.ok()) return st;
  return std::string(text);
}

// A feature of NVIDIA's plugin gpunode does not have: accepted when off, refused when on.
template <const char* Setting>
absl::Status Unsupported(const char* flag, const std::optional<std::string>& text,
                         const std::vector<std::string>&, ConfigLayer&) {
  if (!text) return absl::OkStatus();
  absl::StatusOr<bool> on = plugin_config::ParseGoBool(*text);
  if (!on.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", on.status().message()));
  if (!*on) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": ", plugin_config::UnsupportedFeature(Setting), "; leave the flag out"));
}

absl::Status UnsupportedList(const char* flag, const std::optional<std::string>&,
                             const std::vector<std::string>& list, ConfigLayer&) {
  if (list.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      flag, ": ", plugin_config::UnsupportedFeature("imexChannelIDs"), "; leave the flag out"));
}

absl::Status DeviceListStrategies(const char* flag, const std::optional<std::string>&,
                                  const std::vector<std::string>& list, ConfigLayer& layer) {
  if (list.empty()) return absl::OkStatus();
  std::vector<plugin_config::DeviceListStrategy> strategies;
  for (const std::string& name : list) {
    absl::StatusOr<plugin_config::DeviceListStrategy> s =
        plugin_config::ParseDeviceListStrategy(name);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(flag, ": ", s.status().message()));
    if (std::find(strategies.begin(), strategies.end(), *s) == strategies.end()) {
      strategies.push_back(*s);
    }
  }
  layer.device_list_strategies = strategies;
  return absl::OkStatus();
}

constexpr char kGdrcopy[] = "gdrcopyEnabled";
constexpr char kGds[] = "gdsEnabled";
constexpr char kMofed[] = "mofedEnabled";
constexpr char kImex[] = "imexRequired";

// In the order their errors are reported.
const Row kRows[] = {
    {"--mig-strategy", "none, single or mixed (env MIG_STRATEGY)", Kind::kText,
     &Parsed<&ConfigLayer::mig_strategy, &plugin_config::ParseMigStrategy>},
    {"--fail-on-init-error", "fail when NVML cannot start (env FAIL_ON_INIT_ERROR; default true)",
     Kind::kBool, &Parsed<&ConfigLayer::fail_on_init_error, &plugin_config::ParseGoBool>},
    {"--pass-device-specs",
     "pass the device nodes in Allocate (env PASS_DEVICE_SPECS; default false)", Kind::kBool,
     &Parsed<&ConfigLayer::pass_device_specs, &plugin_config::ParseGoBool>},
    {"--device-id-strategy", "uuid or index (env DEVICE_ID_STRATEGY; default uuid)", Kind::kText,
     &Parsed<&ConfigLayer::device_id_strategy, &plugin_config::ParseDeviceIdStrategy>},
    {"--shared-devices-allocation-policy",
     "distributed or packed (env SHARED_DEVICES_ALLOCATION_POLICY)", Kind::kText,
     &Parsed<&ConfigLayer::shared_allocation_policy, &plugin_config::ParseSharedAllocationPolicy>},
    {"--cdi-annotation-prefix",
     "prefix of the CDI annotation (env CDI_ANNOTATION_PREFIX; default cdi.k8s.io/)", Kind::kText,
     &Parsed<&ConfigLayer::cdi_annotation_prefix, &Text>},
    {"--nvidia-driver-root",
     "root of the NVIDIA driver installation (env NVIDIA_DRIVER_ROOT; default /)", Kind::kText,
     &Parsed<&ConfigLayer::nvidia_driver_root, &Text>},
    {"--dev-root,--nvidia-dev-root",
     "root of the device nodes, prefix of DeviceSpec host paths (env NVIDIA_DEV_ROOT; default the "
     "driver root)",
     Kind::kText, &Parsed<&ConfigLayer::nvidia_dev_root, &Text>},
    {"--mps-root",
     "host directory of the MPS control daemons' pipes and logs, needed with sharing.mps (env "
     "MPS_ROOT)",
     Kind::kText, &Parsed<&ConfigLayer::mps_root, &Text>},
    {"--nvidia-cdi-hook-path,--nvidia-ctk-path",
     "nvidia-cdi-hook on the host, named by the CDI spec's hooks (env NVIDIA_CDI_HOOK_PATH, "
     "NVIDIA_CTK_PATH; default /usr/bin/nvidia-cdi-hook)",
     Kind::kText, &Parsed<&ConfigLayer::nvidia_cdi_hook_path, &Text>},
    {"--driver-root-ctr-path,--container-driver-root",
     "where the driver root is mounted in this container (env DRIVER_ROOT_CTR_PATH, "
     "CONTAINER_DRIVER_ROOT)",
     Kind::kText, &Parsed<&ConfigLayer::container_driver_root, &Text>},
    {"--device-discovery-strategy", "auto or nvml (env DEVICE_DISCOVERY_STRATEGY; default auto)",
     Kind::kText, &Parsed<&ConfigLayer::device_discovery_strategy, &DiscoveryStrategy>},
    {"--gdrcopy-enabled", "GDRCopy (env GDRCOPY_ENABLED): not supported by gpunode; false only",
     Kind::kBool, &Unsupported<kGdrcopy>},
    {"--gds-enabled", "GPUDirect Storage (env GDS_ENABLED): not supported by gpunode; false only",
     Kind::kBool, &Unsupported<kGds>},
    {"--mofed-enabled", "MOFED (env MOFED_ENABLED): not supported by gpunode; false only",
     Kind::kBool, &Unsupported<kMofed>},
    {"--imex-required", "IMEX channels (env IMEX_REQUIRED): not supported by gpunode; false only",
     Kind::kBool, &Unsupported<kImex>},
    {"--imex-channel-ids", "IMEX channels (env IMEX_CHANNEL_IDS): not supported by gpunode",
     Kind::kList, &UnsupportedList},
    {"--device-list-strategy",
     "envvar, volume-mounts, cdi-annotations, cdi-cri; repeat or comma-separate (env "
     "DEVICE_LIST_STRATEGY; default envvar)",
     Kind::kList, &DeviceListStrategies},
};

// The flag's first name: "--dev-root" of "--dev-root,--nvidia-dev-root".
std::string_view FirstName(const char* names) {
  const char* comma = std::strchr(names, ',');
  return comma == nullptr ? std::string_view(names) : std::string_view(names, comma - names);
}

std::string Flag(const Row& row) { return std::string(FirstName(row.names)); }

size_t RowOf(const char* flag) {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    if (FirstName(kRows[i].names) == flag) return i;
  }
  // A name missing from the table is a defect of the caller, caught by every run of the command.
  throw std::logic_error(absl::StrCat("ConfigFlags: no flag ", flag));
}

}  // namespace

ConfigFlags::ConfigFlags() : given_(std::size(kRows)) {}

void ConfigFlags::Add(CLI::App& cmd, std::initializer_list<const char*> flags) {
  for (const char* flag : flags) Add(cmd, flag, kRows[RowOf(flag)].help);
}

void ConfigFlags::Add(CLI::App& cmd, const char* flag, const char* help) {
  size_t i = RowOf(flag);
  const Row& row = kRows[i];
  switch (row.kind) {
    case Kind::kText:
      cmd.add_option(row.names, given_[i].text, help);
      break;
    case Kind::kBool:
      cmd.add_option(row.names, given_[i].text, help)
          ->expected(0, 1)
          ->default_str("true")
          ->option_text("[BOOL]");
      break;
    case Kind::kList:
      cmd.add_option(row.names, given_[i].list, help)->delimiter(',');
      break;
  }
}

absl::StatusOr<plugin_config::ConfigLayer> ConfigFlags::Layer() const {
  ConfigLayer layer;
  for (size_t i = 0; i < std::size(kRows); ++i) {
    const Row& row = kRows[i];
    if (absl::Status st = row.apply(Flag(row).c_str(), given_[i].text, given_[i].list, layer);
        !st.ok()) {
      return st;
    }
  }
  return layer;
}

}  // namespace gpunode::cli
