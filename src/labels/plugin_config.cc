#include "labels/plugin_config.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/file_io.h"
#include "yaml-cpp/yaml.h"

namespace gpunode::labels {
namespace {

constexpr absl::string_view kResourcePrefix = "nvidia.com/";

// Error messages are one line even when the file's text in them is not.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      absl::StrAppend(&out, "\\x", absl::Hex(u, absl::kZeroPad2));
    } else {
      out.push_back(c);
    }
  }
  return out;
}

class Reader {
 public:
  explicit Reader(std::string_view file) : file_(file) {}

  absl::Status Error(const YAML::Node& node, std::string_view field, std::string_view problem,
                     std::string_view fix) const {
    std::string where = std::string(file_);
    if (node.IsDefined() && node.Mark().line >= 0)
      absl::StrAppend(&where, ":", node.Mark().line + 1);
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", Printable(field), ": ",
                                                   Printable(problem), "; ", std::string(fix)));
  }

  // Checks that `node` is a map whose keys are all in `known` and not repeated.
  absl::Status CheckMap(const YAML::Node& node, std::string_view field,
                        const std::vector<std::string>& known) const {
    if (!node.IsMap()) return Error(node, field, "is not a map", "write it as `key: value` lines");
    std::set<std::string> seen;
    for (const auto& entry : node) {
      std::string key = entry.first.as<std::string>("");
      std::string path = field.empty() ? key : absl::StrCat(std::string(field), ".", key);
      if (std::find(known.begin(), known.end(), key) == known.end()) {
        return Error(entry.first, path, "unknown field",
                     absl::StrCat("known: ", absl::StrJoin(known, ", ")));
      }
      if (!seen.insert(key).second)
        return Error(entry.first, path, "given twice", "keep one of them");
    }
    return absl::OkStatus();
  }

  absl::StatusOr<bool> Bool(const YAML::Node& node, std::string_view field) const {
    if (node.IsScalar()) {
      std::string text = absl::AsciiStrToLower(node.Scalar());
      if (text == "true") return true;
      if (text == "false") return false;
    }
    return Error(node, field,
                 absl::StrCat("\"", node.IsScalar() ? node.Scalar() : "", "\" is not a boolean"),
                 "give true or false");
  }

  absl::StatusOr<std::string> String(const YAML::Node& node, std::string_view field) const {
    if (!node.IsScalar()) return Error(node, field, "is not a string", "give a plain value");
    return node.Scalar();
  }

 private:
  std::string_view file_;
};

absl::StatusOr<std::vector<ReplicatedResource>> ReadResources(const Reader& r,
                                                              const YAML::Node& sharing,
                                                              const std::string& field,
                                                              bool rename_by_default) {
  YAML::Node list = sharing["resources"];
  std::string path = field + ".resources";
  if (!list.IsDefined() || list.IsNull())
    return r.Error(sharing, path, "missing", "list the shared resources: - name: nvidia.com/gpu");
  if (!list.IsSequence() || list.size() == 0)
    return r.Error(list, path, "no resources specified", "list at least one {name, replicas}");
  std::vector<ReplicatedResource> out;
  for (size_t i = 0; i < list.size(); ++i) {
    YAML::Node item = list[i];
    std::string item_path = absl::StrCat(path, "[", i, "]");
    if (absl::Status st = r.CheckMap(item, item_path, {"name", "rename", "devices", "replicas"});
        !st.ok())
      return st;
    ReplicatedResource resource;
    if (!item["name"].IsDefined())
      return r.Error(item, item_path + ".name", "missing",
                     "name the resource, e.g. nvidia.com/gpu");
    absl::StatusOr<std::string> name = r.String(item["name"], item_path + ".name");
    if (!name.ok()) return name.status();
    resource.name =
        absl::StartsWith(*name, kResourcePrefix) ? *name : absl::StrCat(kResourcePrefix, *name);
    absl::string_view suffix = absl::string_view(resource.name).substr(kResourcePrefix.size());
    bool valid_suffix = !suffix.empty() && resource.name.size() <= 63;
    for (char c : suffix) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.')
        valid_suffix = false;
    }
    if (valid_suffix)
      valid_suffix = absl::ascii_isalnum(static_cast<unsigned char>(suffix.front())) &&
                     absl::ascii_isalnum(static_cast<unsigned char>(suffix.back()));
    if (!valid_suffix) {
      return r.Error(item["name"], item_path + ".name",
                     absl::StrCat("\"", *name, "\" is not a valid resource name"),
                     "use lower-case letters, digits, '-' and '.', at most 63 characters in all");
    }
    if (!item["replicas"].IsDefined())
      return r.Error(item, item_path + ".replicas", "missing",
                     "give the number of replicas (>= 2)");
    YAML::Node replicas = item["replicas"];
    int value = 0;
    if (!replicas.IsScalar() || !YAML::convert<int>::decode(replicas, value)) {
      return r.Error(replicas, item_path + ".replicas", "is not an integer",
                     "give a whole number >= 2");
    }
    if (value < 2)
      return r.Error(replicas, item_path + ".replicas", "number of replicas must be >= 2",
                     "give 2 or more, or drop the entry");
    resource.replicas = value;
    if (YAML::Node devices = item["devices"]; devices.IsDefined()) {
      // The plugin accepts `all`, a count or a list of IDs, and shares all devices for now.
      if (!devices.IsScalar() && !devices.IsSequence()) {
        return r.Error(devices, item_path + ".devices", "is neither `all`, a count nor a list",
                       "give all, a number or a list of device IDs");
      }
    }
    if (YAML::Node rename = item["rename"]; rename.IsDefined()) {
      if (absl::StatusOr<std::string> text = r.String(rename, item_path + ".rename"); !text.ok())
        return text.status();
    }
    // Like the plugin: an explicit rename is not honoured yet; renameByDefault renames to
    // <name>.shared, and a renamed resource's product label carries no -SHARED suffix.
    resource.renamed = rename_by_default;
    out.push_back(std::move(resource));
  }
  return out;
}

absl::StatusOr<SharingConfig> ReadSharing(const Reader& r, const YAML::Node& sharing) {
  SharingConfig out;
  if (absl::Status st = r.CheckMap(sharing, "sharing", {"timeSlicing", "mps"}); !st.ok()) return st;
  // As in the plugin, an `mps:` section takes precedence over timeSlicing.
  for (const char* kind : {"mps", "timeSlicing"}) {
    YAML::Node section = sharing[kind];
    if (!section.IsDefined() || section.IsNull()) continue;
    std::string field = absl::StrCat("sharing.", kind);
    if (absl::Status st = r.CheckMap(
            section, field, {"renameByDefault", "failRequestsGreaterThanOne", "resources"});
        !st.ok())
      return st;
    bool rename_by_default = false;
    if (YAML::Node node = section["renameByDefault"]; node.IsDefined()) {
      absl::StatusOr<bool> value = r.Bool(node, field + ".renameByDefault");
      if (!value.ok()) return value.status();
      rename_by_default = *value;
    }
    if (YAML::Node node = section["failRequestsGreaterThanOne"]; node.IsDefined()) {
      if (absl::StatusOr<bool> value = r.Bool(node, field + ".failRequestsGreaterThanOne");
          !value.ok())
        return value.status();
    }
    absl::StatusOr<std::vector<ReplicatedResource>> resources =
        ReadResources(r, section, field, rename_by_default);
    if (!resources.ok()) return resources.status();
    out.resources = std::move(*resources);
    out.strategy = std::string_view(kind) == "mps" ? "mps" : "time-slicing";
    return out;
  }
  return out;
}

}  // namespace

absl::StatusOr<MigStrategy> ParseMigStrategy(std::string_view text, std::string_view what) {
  if (text == "none") return MigStrategy::kNone;
  if (text == "single") return MigStrategy::kSingle;
  if (text == "mixed") return MigStrategy::kMixed;
  return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": \"", std::string(text),
                                                 "\" is not a MIG strategy; give none, single or "
                                                 "mixed"));
}

std::string_view MigStrategyName(MigStrategy strategy) {
  switch (strategy) {
    case MigStrategy::kNone:
      return "none";
    case MigStrategy::kSingle:
      return "single";
    case MigStrategy::kMixed:
      return "mixed";
  }
  return "none";
}

const ReplicatedResource* SharingConfig::Find(std::string_view resource) const {
  for (const ReplicatedResource& r : resources) {
    if (r.name == resource) return &r;
  }
  return nullptr;
}

absl::StatusOr<PluginConfig> ParsePluginConfig(std::string_view text, std::string_view file_name) {
  Reader r(file_name);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(file_name), ":", e.mark.line + 1,
                                                   ": not valid YAML or JSON: ", Printable(e.msg),
                                                   "; fix the syntax"));
  }
  PluginConfig config;
  if (!root.IsDefined() || root.IsNull()) return config;  // an empty file is the default config
  try {
    if (absl::Status st =
            r.CheckMap(root, "", {"version", "flags", "resources", "sharing", "imex"});
        !st.ok())
      return st;
    if (YAML::Node version = root["version"]; version.IsDefined()) {
      absl::StatusOr<std::string> value = r.String(version, "version");
      if (!value.ok()) return value.status();
      if (!value->empty() && *value != "v1")
        return r.Error(version, "version", absl::StrCat("unknown version \"", *value, "\""),
                       "give v1");
    }
    if (YAML::Node flags = root["flags"]; flags.IsDefined() && !flags.IsNull()) {
      if (!flags.IsMap())
        return r.Error(flags, "flags", "is not a map", "write `key: value` lines");
      if (YAML::Node mig = flags["migStrategy"]; mig.IsDefined()) {
        absl::StatusOr<std::string> value = r.String(mig, "flags.migStrategy");
        if (!value.ok()) return value.status();
        absl::StatusOr<MigStrategy> strategy = ParseMigStrategy(*value, "flags.migStrategy");
        if (!strategy.ok())
          return r.Error(mig, "flags.migStrategy",
                         absl::StrCat("\"", *value, "\" is not a MIG strategy"),
                         "give none, single or mixed");
        config.mig_strategy = *strategy;
      }
    }
    if (YAML::Node sharing = root["sharing"]; sharing.IsDefined() && !sharing.IsNull()) {
      absl::StatusOr<SharingConfig> parsed = ReadSharing(r, sharing);
      if (!parsed.ok()) return parsed.status();
      config.sharing = std::move(*parsed);
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(file_name), ":", e.mark.line + 1,
                                                   ": ", Printable(e.msg), "; fix the field"));
  }
  return config;
}

absl::StatusOr<PluginConfig> ReadPluginConfig(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("--config-file: ", text.status().message(),
                                                   "; give the path of the plugin's config file"));
  }
  return ParsePluginConfig(*text, path);
}

}  // namespace gpunode::labels
