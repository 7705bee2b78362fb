// Where the device plugin's settings come from, and their precedence: flag, then environment
// variable, then config file, then default, as in NVIDIA's plugin. Every environment variable of
// the plugin's config (and of the plugin process) is read here, through an injected Environment.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "health/health_monitor.h"
#include "plugin_config/config.h"
#include "plugin_config/config_dir.h"
#include "plugin_config/layer.h"

namespace gpunode::plugin_config {

// getenv(3) in production; a map in tests. Returns nullptr when unset.
using Environment = std::function<const char*(const char*)>;

// The process's environment, getenv(3): the Environment the commands pass in.
const char* ProcessEnvironment(const char* name);

// A setting's text and where it came from, for error messages: the flag ("--mig-strategy") or
// the variable ("environment variable MIG_STRATEGY").
struct SettingText {
  std::string text;
  std::string source;
};

// `flag_text` when the flag `flag` was given; else the first of `variables` that is set and not
// empty; else nullopt.
std::optional<SettingText> FlagOrEnvironment(const char* flag,
                                             const std::optional<std::string>& flag_text,
                                             const Environment& env,
                                             std::initializer_list<const char*> variables);

// The config file or directory: --config-file when given and not empty, else CONFIG_FILE; ""
// when neither names one.
std::string ConfigFilePath(const std::optional<std::string>& flag, const Environment& env);

// The config of a directory for a node without the label: --default-config when given, else
// CONFIG_DEFAULT when set and not empty.
std::optional<std::string> DefaultConfigName(const std::optional<std::string>& flag,
                                             const Environment& env);

// The settings NVIDIA's environment variables carry (MIG_STRATEGY, FAIL_ON_INIT_ERROR,
// NVIDIA_DRIVER_ROOT, NVIDIA_DEV_ROOT, PASS_DEVICE_SPECS, DEVICE_LIST_STRATEGY (comma list),
// DEVICE_ID_STRATEGY, CDI_ANNOTATION_PREFIX, SHARED_DEVICES_ALLOCATION_POLICY, MPS_ROOT,
// NVIDIA_CDI_HOOK_PATH or NVIDIA_CTK_PATH, DRIVER_ROOT_CTR_PATH or CONTAINER_DRIVER_ROOT,
// DEVICE_DISCOVERY_STRATEGY). An empty variable counts as unset. A bad value is an error naming
// the variable; so is one that turns on a feature gpunode lacks (GDS_ENABLED, MOFED_ENABLED,
// GDRCOPY_ENABLED, IMEX_REQUIRED true, IMEX_CHANNEL_IDS set).
absl::StatusOr<ConfigLayer> EnvironmentLayer(const Environment& env);

// The rules of sharing.mps that need the merged settings: not with migStrategy mixed, and an
// absolute MPS root. Errors name `file`:`line`.
absl::Status CheckMps(const Config& config, const std::string& file, int line);

struct ResolvedConfig {
  Config config;
  std::string config_file;  // "" when none was given; the file read, in a config directory
  std::string config_name;  // in a config directory: the config picked, and why
  std::string selected_by;
  std::vector<std::string> warnings;
};

// Reads the config file named by `config_file_flag` or else CONFIG_FILE, and merges
// flags > environment > file > defaults. When that names a directory, `selection` picks the
// config in it (config_dir.h); its default_config falls back to CONFIG_DEFAULT.
absl::StatusOr<ResolvedConfig> ResolveConfig(const ConfigLayer& flags,
                                             const std::optional<std::string>& config_file_flag,
                                             const Environment& env,
                                             const ConfigSelection& selection = {});

// One config given as its text, as ResolveConfig reads a file; `label` names it in errors (a data
// key of a ConfigMap manifest under check: "FILE[KEY]").
absl::StatusOr<ResolvedConfig> ResolveConfigText(const ConfigLayer& flags, const std::string& text,
                                                 const std::string& label, const Environment& env);

// The device plugin process's settings that NVIDIA's config file does not hold, as flags
// (unset when not given): each falls back to its environment variable, then to its default.
// Every member has an initializer, so that designated initializers may name only some.
struct ProcessFlags {
  std::optional<std::string> kubelet_socket = std::nullopt;          // --kubelet-socket
  std::vector<std::string> cdi_disable_hooks = {};                   // --cdi-disable-hooks
  std::vector<std::string> cdi_feature_flags = {};                   // --cdi-feature-flags
  std::optional<std::string> health_recovery_period = std::nullopt;  // --health-recovery-period
  std::optional<std::string> health_flap_limit = std::nullopt;       // --health-flap-limit
};

struct ProcessSettings {
  // --kubelet-socket or KUBELET_SOCKET, where "" (set but empty too) serves without registering;
  // unset: <kubelet-dir>/kubelet.sock.
  std::optional<std::string> kubelet_socket;
  // --cdi-disable-hooks or CDI_DISABLE_HOOKS: "all" leaves both of gpunode's CDI hooks
  // (update-ldcache, create-symlinks) out; hooks gpunode never writes need no disabling.
  bool cdi_hooks_disabled = false;
  // --cdi-feature-flags or CDI_FEATURE_FLAGS: accepted, without effect.
  std::vector<std::string> cdi_feature_flags;
  // DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS as set; the health checks read the lists.
  std::optional<std::string> disable_healthchecks;
  std::optional<std::string> enable_healthchecks;
  // --health-recovery-period or HEALTH_RECOVERY_PERIOD (0 to 24h; 0 = never); unset: the
  // health monitor's default.
  std::optional<absl::Duration> health_recovery_period;
  // --health-flap-limit or HEALTH_FLAP_LIMIT (0 = no limit); unset: the monitor's default.
  std::optional<int> health_flap_limit;
};

// Fails with one line naming the flag or variable, the value and what to give instead.
absl::StatusOr<ProcessSettings> ResolveProcessSettings(const ProcessFlags& flags,
                                                       const Environment& env);

// Where the plugin registers: --kubelet-socket or KUBELET_SOCKET as resolved (may be ""), else
// <kubelet_dir>/kubelet.sock.
std::string KubeletSocket(const ProcessSettings& settings, const std::string& kubelet_dir);

// NVIDIA's --driver-root is gpunode's global one (`driver_root`, "/" when not given): given, it
// also sets nvidiaDriverRoot, unless --nvidia-driver-root did.
void ApplyDriverRootFlag(const std::string& driver_root, ConfigLayer& flags);

// Where NVML's library is loaded from: gpunode's --driver-root when given (`driver_root` not
// "/"); else NVIDIA's nvidiaDriverRoot, or, in a container, containerDriverRoot where the host's
// driver root is mounted when that is set.
std::string NvmlDriverRoot(const std::string& driver_root, const Config& config);

// The health monitor's options from the settings (the XID lists, recovery period and flap
// limit), the same for the device plugin and the DRA plugin. Fails with one line naming the
// variable whose XID list is wrong.
absl::StatusOr<health::HealthOptions> HealthOptionsFrom(const ProcessSettings& settings);

}  // namespace gpunode::plugin_config
