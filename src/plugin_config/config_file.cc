#include "plugin_config/config_file.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/config_map_manifest.h"
#include "core/file_io.h"
#include "core/printable.h"
#include "core/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::plugin_config {
namespace {

// Every section of NVIDIA's v1 config and the keys it holds (list items are "<list>[]"). Keys of
// older releases (restartOnDeviceUnhealthy) stay accepted so that old files keep loading.
const std::map<std::string, std::vector<std::string>>& Sections() {
  static const auto* sections = new std::map<std::string, std::vector<std::string>>{
      {"", {"version", "flags", "resources", "sharing", "imex"}},
      {"flags",
       {"migStrategy", "failOnInitError", "mpsRoot", "nvidiaDriverRoot", "nvidiaDevRoot",
        "gdrcopyEnabled", "gdsEnabled", "mofedEnabled", "useNodeFeatureAPI",
        "deviceDiscoveryStrategy", "restartOnDeviceUnhealthy", "plugin", "gfd"}},
      {"flags.plugin",
       {"passDeviceSpecs", "deviceListStrategy", "deviceIDStrategy", "cdiAnnotationPrefix",
        "nvidiaCTKPath", "containerDriverRoot", "sharedDevicesAllocationPolicy"}},
      {"flags.gfd", {"oneshot", "noTimestamp", "sleepInterval", "outputFile", "machineTypeFile"}},
      {"resources", {"gpus", "mig"}},
      {"resources.gpus[]", {"pattern", "name"}},
      {"resources.mig[]", {"pattern", "name"}},
      {"sharing", {"timeSlicing", "mps"}},
      {"sharing.timeSlicing", {"renameByDefault", "failRequestsGreaterThanOne", "resources"}},
      {"sharing.timeSlicing.resources[]", {"name", "rename", "devices", "replicas"}},
      {"sharing.mps", {"renameByDefault", "failRequestsGreaterThanOne", "resources"}},
      {"sharing.mps.resources[]", {"name", "rename", "devices", "replicas"}},
      {"imex", {"channelIDs", "required"}},
  };
  return *sections;
}

// A map's value for `key`, or a null node when the key is absent (yaml-cpp's missing-key node
// throws on most queries).
YAML::Node Field(const YAML::Node& map, const char* key) {
  YAML::Node value = map[key];
  return value.IsDefined() ? value : YAML::Node(YAML::NodeType::Null);
}

// Values end up in protobuf strings and JSON, which must be well-formed UTF-8 (no overlong forms,
// surrogates or code points past U+10FFFF).
bool ValidText(const std::string& text) {
  for (size_t i = 0; i < text.size();) {
    unsigned char c = text[i];
    size_t extra = 0;
    unsigned char low = 0x80, high = 0xbf;  // allowed range of the first continuation byte
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7f) return false;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) low = 0xa0;
      if (c == 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) low = 0x90;
      if (c == 0xf4) high = 0x8f;
    } else {
      return false;
    }
    if (i + extra >= text.size() && extra > 0) return false;
    for (size_t k = 1; k <= extra; ++k) {
      unsigned char next = text[i + k];
      if (k == 1 ? (next < low || next > high) : (next >> 6) != 0x2) return false;
    }
    i += extra + 1;
  }
  return true;
}

std::string Join(const std::string& path, const std::string& key) {
  return path.empty() ? key : absl::StrCat(path, ".", key);
}

// "sharing.timeSlicing.resources[]" -> "sharing.timeSlicing.resources[N]" is done by callers;
// this names a section for "belongs under" hints.
std::string Display(const std::string& section) {
  return section.empty() ? "the top level" : section;
}

// Map entries are walked with range-for: yaml-cpp's iterator-> returns a proxy that dies with the
// expression, so a reference to its `first` or `second` would dangle.
class Parser {
 public:
  explicit Parser(std::string file) : file_(std::move(file)) {}

  absl::StatusOr<ConfigFile> Parse(const std::string& text) {
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(
          core::Printable(absl::StrCat(file_, ":", e.mark.line + 1, ": ", core::Printable(e.msg),
                                       "; the file must be YAML or JSON")));
    }
    if (root.IsNull()) return out_;  // empty file: every default, as NVIDIA's plugin
    RETURN_IF_ERROR(CheckMap(root, root, "", ""));
    for (const auto& entry : root) {
      const std::string key = entry.first.Scalar();
      YAML::Node key_node = entry.first;
      YAML::Node value = entry.second;
      if (key == "version") {
        ASSIGN_OR_RETURN(std::optional<std::string> version, String(key_node, value, "version"));
        if (version && !version->empty() && *version != "v1") {
          return Error(key_node, "version",
                       absl::StrCat("unknown version \"", *version, "\"; use v1"));
        }
      } else if (key == "flags") {
        RETURN_IF_ERROR(Flags(key_node, value));
      } else if (key == "resources") {
        RETURN_IF_ERROR(Resources(key_node, value));
      } else if (key == "sharing") {
        RETURN_IF_ERROR(Sharing(key_node, value));
      } else if (key == "imex") {
        RETURN_IF_ERROR(Imex(key_node, value));
      }
    }
    return out_;
  }

 private:
  absl::Status Error(const YAML::Node& at, const std::string& path, const std::string& message) {
    return absl::InvalidArgumentError(
        core::Printable(absl::StrCat(file_, ":", at.Mark().line + 1, ": ", path, ": ", message)));
  }

  // `value` must be a map whose keys all belong to `section`; duplicates are refused (YAML
  // forbids them and which one would win is not obvious to whoever reads the file).
  absl::Status CheckMap(const YAML::Node& key_node, const YAML::Node& value,
                        const std::string& section, const std::string& path) {
    if (!value.IsMap()) {
      return Error(key_node, path.empty() ? "(document)" : path,
                   "must be a mapping of keys to values");
    }
    const std::vector<std::string>& known = Sections().at(section);
    std::set<std::string> seen;
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      std::string key_path = Join(path, key);
      if (!seen.insert(key).second) {
        return Error(entry.first, key_path, "duplicate key; keep one");
      }
      if (std::find(known.begin(), known.end(), key) != known.end()) continue;
      return Error(entry.first, key_path, UnknownKeyHint(key, section));
    }
    return absl::OkStatus();
  }

  static std::string UnknownKeyHint(const std::string& key, const std::string& section) {
    std::vector<std::string> homes;
    for (const auto& [other, keys] : Sections()) {
      if (other == section) continue;
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) homes.push_back(other);
    }
    if (!homes.empty()) {
      // The MPS section repeats the keys of timeSlicing, which is the usual home; name it first.
      std::stable_partition(homes.begin(), homes.end(), [](const std::string& home) {
        return !absl::StrContains(home, "mps");
      });
      std::vector<std::string> shown;
      for (const std::string& home : homes) {
        std::string name = home;
        if (absl::EndsWith(name, "[]")) name = absl::StrCat(name.substr(0, name.size() - 2), "[*]");
        shown.push_back(Display(name));
      }
      return absl::StrCat("unknown key; ", key, " belongs under ", absl::StrJoin(shown, " or "));
    }
    const std::vector<std::string>& known = Sections().at(section);
    for (const std::string& k : known) {
      if (absl::EqualsIgnoreCase(k, key)) {
        return absl::StrCat("unknown key; did you mean ", k, "? (keys are case-sensitive)");
      }
    }
    return absl::StrCat("unknown key; known keys under ", Display(section), ": ",
                        absl::StrJoin(known, ", "));
  }

  absl::StatusOr<std::optional<std::string>> String(const YAML::Node& key_node,
                                                    const YAML::Node& value,
                                                    const std::string& path) {
    if (value.IsNull()) return std::optional<std::string>();
    if (!value.IsScalar()) return Error(key_node, path, "must be a string");
    if (!ValidText(value.Scalar())) {
      return Error(key_node, path, "must be UTF-8 text without control characters");
    }
    return std::optional<std::string>(value.Scalar());
  }

  absl::StatusOr<std::optional<bool>> Bool(const YAML::Node& key_node, const YAML::Node& value,
                                           const std::string& path) {
    if (value.IsNull()) return std::optional<bool>();
    if (value.IsScalar() && value.Tag() != "!") {
      // The YAML 1.1 booleans NVIDIA's YAML reader (go-yaml v2) accepts.
      std::string text = absl::AsciiStrToLower(value.Scalar());
      for (const char* yes : {"true", "yes", "on", "y"}) {
        if (text == yes) return std::optional<bool>(true);
      }
      for (const char* no : {"false", "no", "off", "n"}) {
        if (text == no) return std::optional<bool>(false);
      }
    }
    return Error(key_node, path,
                 absl::StrCat("\"", value.IsScalar() ? value.Scalar() : "...",
                              "\" is not a boolean; write true or false without quotes"));
  }

  absl::StatusOr<std::optional<int64_t>> Int(const YAML::Node& key_node, const YAML::Node& value,
                                             const std::string& path) {
    if (value.IsNull()) return std::optional<int64_t>();
    int64_t number = 0;
    if (value.IsScalar() && value.Tag() != "!" && absl::SimpleAtoi(value.Scalar(), &number)) {
      return std::optional<int64_t>(number);
    }
    return Error(key_node, path,
                 absl::StrCat("\"", value.IsScalar() ? value.Scalar() : "...",
                              "\" is not an integer; write a whole number without quotes"));
  }

  template <typename T>
  absl::StatusOr<std::optional<T>> Enum(const YAML::Node& key_node, const YAML::Node& value,
                                        const std::string& path,
                                        absl::StatusOr<T> (*parse)(absl::string_view)) {
    ASSIGN_OR_RETURN(std::optional<std::string> text, String(key_node, value, path));
    if (!text) return std::optional<T>();
    absl::StatusOr<T> parsed = parse(*text);
    if (!parsed.ok()) return Error(key_node, path, std::string(parsed.status().message()));
    return std::optional<T>(*parsed);
  }

  void Ignored(const std::string& path, const std::string& why) {
    out_.warnings.push_back(absl::StrCat(file_, ": ", path, ": ", why));
  }

  absl::Status Flags(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "flags", "flags"));
    ConfigLayer& f = out_.flags;
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join("flags", key);
      YAML::Node k = entry.first;
      YAML::Node v = entry.second;
      if (key == "migStrategy") {
        ASSIGN_OR_RETURN(f.mig_strategy, Enum(k, v, path, &ParseMigStrategy));
      } else if (key == "failOnInitError") {
        ASSIGN_OR_RETURN(f.fail_on_init_error, Bool(k, v, path));
      } else if (key == "nvidiaDriverRoot") {
        ASSIGN_OR_RETURN(f.nvidia_driver_root, String(k, v, path));
      } else if (key == "nvidiaDevRoot") {
        ASSIGN_OR_RETURN(f.nvidia_dev_root, String(k, v, path));
      } else if (key == "mpsRoot") {
        ASSIGN_OR_RETURN(f.mps_root, String(k, v, path));
      } else if (key == "deviceDiscoveryStrategy") {
        ASSIGN_OR_RETURN(f.device_discovery_strategy, String(k, v, path));
        if (f.device_discovery_strategy) {
          absl::Status st = CheckDeviceDiscoveryStrategy(*f.device_discovery_strategy);
          if (!st.ok()) return Error(k, path, std::string(st.message()));
        }
      } else if (key == "gdrcopyEnabled" || key == "gdsEnabled" || key == "mofedEnabled") {
        ASSIGN_OR_RETURN(std::optional<bool> on, Bool(k, v, path));
        if (on.value_or(false)) {
          return Error(k, path, absl::StrCat(UnsupportedFeature(key), "; set it to false"));
        }
      } else if (key == "useNodeFeatureAPI" || key == "restartOnDeviceUnhealthy") {
        RETURN_IF_ERROR(Bool(k, v, path).status());
      } else if (key == "plugin") {
        RETURN_IF_ERROR(PluginFlags(k, v));
      } else if (key == "gfd") {
        RETURN_IF_ERROR(GfdFlags(k, v));
      }
    }
    return absl::OkStatus();
  }

  absl::Status PluginFlags(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "flags.plugin", "flags.plugin"));
    ConfigLayer& f = out_.flags;
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join("flags.plugin", key);
      YAML::Node k = entry.first;
      YAML::Node v = entry.second;
      if (key == "passDeviceSpecs") {
        ASSIGN_OR_RETURN(f.pass_device_specs, Bool(k, v, path));
      } else if (key == "deviceListStrategy") {
        ASSIGN_OR_RETURN(f.device_list_strategies, ListStrategies(k, v, path));
      } else if (key == "deviceIDStrategy") {
        ASSIGN_OR_RETURN(f.device_id_strategy, Enum(k, v, path, &ParseDeviceIdStrategy));
      } else if (key == "cdiAnnotationPrefix") {
        ASSIGN_OR_RETURN(f.cdi_annotation_prefix, String(k, v, path));
      } else if (key == "sharedDevicesAllocationPolicy") {
        ASSIGN_OR_RETURN(f.shared_allocation_policy,
                         Enum(k, v, path, &ParseSharedAllocationPolicy));
      } else if (key == "nvidiaCTKPath") {
        ASSIGN_OR_RETURN(f.nvidia_cdi_hook_path, String(k, v, path));
      } else if (key == "containerDriverRoot") {
        ASSIGN_OR_RETURN(f.container_driver_root, String(k, v, path));
      }
    }
    return absl::OkStatus();
  }

  // A single name or a list of names, as NVIDIA's deviceListStrategy accepts.
  absl::StatusOr<std::optional<std::vector<DeviceListStrategy>>> ListStrategies(
      const YAML::Node& key_node, const YAML::Node& value, const std::string& path) {
    if (value.IsNull()) return std::optional<std::vector<DeviceListStrategy>>();
    std::vector<std::string> names;
    if (value.IsScalar()) {
      names.push_back(value.Scalar());
    } else if (value.IsSequence()) {
      for (const YAML::Node& item : value) {
        if (!item.IsScalar()) return Error(key_node, path, "must be a string or a list of strings");
        names.push_back(item.Scalar());
      }
    } else {
      return Error(key_node, path, "must be a string or a list of strings");
    }
    if (names.empty()) {
      return Error(key_node, path,
                   "empty list; give at least one of envvar, volume-mounts, cdi-annotations, "
                   "cdi-cri");
    }
    std::vector<DeviceListStrategy> out;
    for (const std::string& name : names) {
      absl::StatusOr<DeviceListStrategy> s = ParseDeviceListStrategy(name);
      if (!s.ok()) return Error(key_node, path, std::string(s.status().message()));
      if (std::find(out.begin(), out.end(), *s) == out.end()) out.push_back(*s);
    }
    return std::optional<std::vector<DeviceListStrategy>>(out);
  }

  // GFD's flags share the file; gpunode's labeller reads them. Here only their types are checked.
  absl::Status GfdFlags(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "flags.gfd", "flags.gfd"));
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join("flags.gfd", key);
      if (key == "oneshot" || key == "noTimestamp") {
        RETURN_IF_ERROR(Bool(entry.first, entry.second, path).status());
      } else {
        RETURN_IF_ERROR(String(entry.first, entry.second, path).status());
      }
    }
    return absl::OkStatus();
  }

  absl::Status Resources(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "resources", "resources"));
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join("resources", key);
      if (entry.second.IsNull()) continue;
      if (!entry.second.IsSequence()) return Error(entry.first, path, "must be a list");
      size_t i = 0;
      for (const YAML::Node& item : entry.second) {
        std::string item_path = absl::StrCat(path, "[", i++, "]");
        RETURN_IF_ERROR(CheckMap(entry.first, item, absl::StrCat(path, "[]"), item_path));
        for (const char* field : {"pattern", "name"}) {
          YAML::Node text = Field(item, field);
          if (!text.IsScalar() || text.Scalar().empty()) {
            return Error(entry.first, Join(item_path, field), "required; give a non-empty string");
          }
        }
      }
      // As NVIDIA's plugin, which does not support custom resource names either.
      if (i > 0) Ignored(path, "custom resource names are not supported; default names are used");
    }
    return absl::OkStatus();
  }

  absl::Status Sharing(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "sharing", "sharing"));
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      if (entry.second.IsNull()) continue;
      if (key == "mps") {
        out_.mps.emplace();
        out_.mps_line = entry.first.Mark().line + 1;
        RETURN_IF_ERROR(ReplicatedSection(entry.first, entry.second, "sharing.mps", *out_.mps));
      } else {
        RETURN_IF_ERROR(
            ReplicatedSection(entry.first, entry.second, "sharing.timeSlicing", out_.time_slicing));
      }
    }
    if (out_.mps && !out_.time_slicing.resources.empty()) {
      Ignored("sharing.timeSlicing", "ignored because sharing.mps is set (as in NVIDIA's plugin)");
    }
    return absl::OkStatus();
  }

  // sharing.timeSlicing and sharing.mps hold the same keys.
  absl::Status ReplicatedSection(const YAML::Node& key_node, const YAML::Node& value,
                                 const std::string& section, TimeSlicing& ts) {
    RETURN_IF_ERROR(CheckMap(key_node, value, section, section));
    // Under MPS always, as NVIDIA's plugin: the daemon's limits are each client's, so a container
    // given two replicas would run as one client with one replica's share.
    const bool mps = section == "sharing.mps";
    ts.fail_requests_greater_than_one = mps;
    bool has_resources = false;
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join(section, key);
      if (key == "renameByDefault") {
        ASSIGN_OR_RETURN(std::optional<bool> on, Bool(entry.first, entry.second, path));
        ts.rename_by_default = on.value_or(false);
      } else if (key == "failRequestsGreaterThanOne") {
        ASSIGN_OR_RETURN(std::optional<bool> on, Bool(entry.first, entry.second, path));
        if (mps && on == false) {
          Ignored(path,
                  "false is ignored: under MPS a container gets one replica, as with NVIDIA's "
                  "plugin (each MPS client is held to one replica's share)");
        } else if (!mps && on) {
          ts.fail_requests_greater_than_one = *on;
        }
      } else if (key == "resources") {
        has_resources = true;
        RETURN_IF_ERROR(TimeSlicedResources(entry.first, entry.second, section, ts));
      }
    }
    if (!has_resources || ts.resources.empty()) {
      return Error(key_node, Join(section, "resources"),
                   "no resources specified; add e.g. resources: [{name: nvidia.com/gpu, "
                   "replicas: 4}]");
    }
    return absl::OkStatus();
  }

  absl::Status TimeSlicedResources(const YAML::Node& key_node, const YAML::Node& value,
                                   const std::string& section, TimeSlicing& ts) {
    const std::string path = Join(section, "resources");
    if (value.IsNull()) return absl::OkStatus();
    if (!value.IsSequence()) return Error(key_node, path, "must be a list");
    std::set<std::string> names;
    size_t i = 0;
    for (const YAML::Node& item : value) {
      std::string item_path = absl::StrCat(path, "[", i++, "]");
      RETURN_IF_ERROR(CheckMap(key_node, item, absl::StrCat(path, "[]"), item_path));
      const YAML::Node& at = item.Mark().is_null() ? key_node : item;
      TimeSlicedResource resource;
      ASSIGN_OR_RETURN(std::optional<std::string> name,
                       String(at, Field(item, "name"), Join(item_path, "name")));
      if (!name || name->empty()) {
        return Error(at, Join(item_path, "name"), "required; e.g. name: nvidia.com/gpu");
      }
      ASSIGN_OR_RETURN(resource.name, ResourceName(at, *name, Join(item_path, "name")));
      // Errors about the count point at its own line when it is there.
      const YAML::Node replicas_node = Field(item, "replicas");
      const YAML::Node& replicas_at = replicas_node.Mark().is_null() ? at : replicas_node;
      ASSIGN_OR_RETURN(std::optional<int64_t> replicas,
                       Int(replicas_at, replicas_node, Join(item_path, "replicas")));
      if (!replicas) return Error(at, Join(item_path, "replicas"), "required; e.g. replicas: 4");
      if (*replicas < 2) {
        return Error(replicas_at, Join(item_path, "replicas"),
                     absl::StrCat("number of replicas must be >= 2, got ", *replicas,
                                  "; leave the resource out to not share it"));
      }
      if (*replicas > 1000) {
        return Error(replicas_at, Join(item_path, "replicas"),
                     absl::StrCat(*replicas, " replicas is more than 1000 per GPU; use fewer"));
      }
      resource.replicas = static_cast<int>(*replicas);
      if (!Field(item, "rename").IsNull()) {
        RETURN_IF_ERROR(String(at, Field(item, "rename"), Join(item_path, "rename")).status());
        Ignored(Join(item_path, "rename"),
                "not supported (as in NVIDIA's plugin); renameByDefault gives <name>.shared");
      }
      if (YAML::Node devices = Field(item, "devices"); !devices.IsNull()) {
        if (!(devices.IsScalar() && devices.Scalar() == "all")) {
          Ignored(Join(item_path, "devices"),
                  "only \"all\" is supported (as in NVIDIA's plugin); every GPU is shared");
        }
      }
      if (!names.insert(resource.name).second) {
        return Error(at, Join(item_path, "name"),
                     absl::StrCat(resource.name, " is listed twice; keep one entry"));
      }
      ts.resources.push_back(std::move(resource));
    }
    return absl::OkStatus();
  }

  // "gpu" and "nvidia.com/gpu" both name nvidia.com/gpu, as in NVIDIA's plugin.
  absl::StatusOr<std::string> ResourceName(const YAML::Node& at, const std::string& name,
                                           const std::string& path) {
    std::string full = absl::StrContains(name, "/") ? name : absl::StrCat("nvidia.com/", name);
    if (!absl::StartsWith(full, "nvidia.com/")) {
      return Error(at, path,
                   absl::StrCat("\"", name,
                                "\" is not an nvidia.com resource; use e.g. "
                                "nvidia.com/gpu or nvidia.com/mig-1g.10gb"));
    }
    std::string part = full.substr(std::string("nvidia.com/").size());
    bool valid = !part.empty() && part.size() <= 63 && absl::ascii_isalnum(part.front()) &&
                 absl::ascii_isalnum(part.back());
    for (char c : part) {
      valid = valid && (absl::ascii_isalnum(c) || c == '-' || c == '.' || c == '_');
    }
    if (!valid) {
      return Error(at, path,
                   absl::StrCat("\"", name,
                                "\" is not a valid resource name; use letters, digits, '-', '.' "
                                "and '_', at most 63, starting and ending alphanumeric"));
    }
    return full;
  }

  absl::Status Imex(const YAML::Node& key_node, const YAML::Node& value) {
    if (value.IsNull()) return absl::OkStatus();
    RETURN_IF_ERROR(CheckMap(key_node, value, "imex", "imex"));
    for (const auto& entry : value) {
      const std::string key = entry.first.Scalar();
      const std::string path = Join("imex", key);
      if (key == "required") {
        ASSIGN_OR_RETURN(std::optional<bool> on, Bool(entry.first, entry.second, path));
        if (on.value_or(false)) {
          return Error(entry.first, path,
                       absl::StrCat(UnsupportedFeature("imexRequired"), "; remove it"));
        }
      } else if (!entry.second.IsNull()) {
        if (!entry.second.IsSequence()) return Error(entry.first, path, "must be a list");
        if (entry.second.size() > 0) {
          return Error(entry.first, path,
                       absl::StrCat(UnsupportedFeature("imexChannelIDs"), "; remove it"));
        }
      }
    }
    return absl::OkStatus();
  }

  std::string file_;
  ConfigFile out_;
};

}  // namespace

absl::StatusOr<ConfigFile> ParseConfigFile(const std::string& text, const std::string& file_name) {
  try {
    return Parser(file_name).Parse(text);
  } catch (const YAML::Exception& e) {
    // Conversions inside a well-formed document (e.g. a key that is itself a map).
    return absl::InvalidArgumentError(
        core::Printable(absl::StrCat(file_name, ":", e.mark.line + 1, ": ", e.msg)));
  }
}

absl::StatusOr<ConfigFile> ReadConfigFile(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config file ", path, ": ", text.status().message()));
  }
  // The pod gets a ConfigMap's keys as files of its volume, never the manifest itself.
  if (std::optional<core::ConfigMapManifest> manifest = core::AsConfigMap(*text)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": this is a ConfigMap (", manifest->name, "), not a config file; ",
                     core::DescribeDataKeys(*manifest),
                     ". Mount it and give the directory (or one key's file), or check it with "
                     "gpunode device-plugin --check-config ",
                     path));
  }
  return ParseConfigFile(*text, path);
}

}  // namespace gpunode::plugin_config
