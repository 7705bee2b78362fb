#include "cdi/validate.h"

#include <cstdint>
#include <limits>
#include <set>

#include "absl/algorithm/container.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpunode::cdi {
namespace {

constexpr const char* kVersions[] = {"0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0"};
constexpr const char* kHookNames[] = {"prestart",       "createRuntime", "createContainer",
                                      "startContainer", "poststart",     "poststop"};

// A value as JSON text for a message; bytes that are not UTF-8 (YAML input may hold them) become
// U+FFFD rather than an exception.
std::string Quoted(const Spec& value) {
  return value.dump(-1, ' ', false, Spec::error_handler_t::replace);
}

class Checker {
 public:
  std::vector<SpecProblem> problems;

  void Add(const std::string& path, std::string message) {
    problems.push_back({path, std::move(message)});
  }

  bool IsString(const Spec& value, const std::string& path) {
    if (value.is_string()) return true;
    Add(path, absl::StrCat("must be a string, got ", value.type_name()));
    return false;
  }

  bool IsObject(const Spec& value, const std::string& path) {
    if (value.is_object()) return true;
    Add(path, absl::StrCat("must be an object, got ", value.type_name()));
    return false;
  }

  bool IsArray(const Spec& value, const std::string& path) {
    if (value.is_array()) return true;
    Add(path, absl::StrCat("must be an array, got ", value.type_name()));
    return false;
  }

  void OnlyKeys(const Spec& object, const std::string& path, const std::set<std::string>& allowed) {
    for (const auto& [key, value] : object.items()) {
      if (!allowed.contains(key)) {
        Add(absl::StrCat(path, ".", key),
            absl::StrCat("unknown field; allowed: ", absl::StrJoin(allowed, ", ")));
      }
    }
  }

  void Required(const Spec& object, const std::string& path,
                std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
      if (!object.contains(key)) Add(absl::StrCat(path, ".", key), "is required");
    }
  }

  void AbsolutePath(const Spec& value, const std::string& path) {
    if (!IsString(value, path)) return;
    const std::string& text = value.get_ref<const std::string&>();
    if (text.empty() || text.front() != '/') {
      Add(path, absl::StrCat("must be an absolute path, got ", Quoted(Spec(text))));
    }
  }

  void Integer(const Spec& value, const std::string& path, int64_t min, int64_t max) {
    bool ok = false;
    if (value.is_number_unsigned()) {
      ok = value.get<uint64_t>() <= static_cast<uint64_t>(max);
    } else if (value.is_number_integer()) {
      int64_t v = value.get<int64_t>();
      ok = v >= min && v <= max;
    }
    if (!ok) Add(path, absl::StrCat("must be an integer from ", min, " to ", max));
  }

  void StringArray(const Spec& value, const std::string& path) {
    if (!IsArray(value, path)) return;
    for (size_t i = 0; i < value.size(); ++i) IsString(value[i], absl::StrCat(path, "[", i, "]"));
  }

  void Annotations(const Spec& value, const std::string& path) {
    if (!IsObject(value, path)) return;
    for (const auto& [key, v] : value.items()) {
      std::string at = absl::StrCat(path, ".", key);
      if (key.empty()) Add(at, "annotation keys must not be empty");
      IsString(v, at);
    }
  }

  void Kind(const Spec& value, const std::string& path, const std::string& version) {
    if (!IsString(value, path)) return;
    const std::string& kind = value.get_ref<const std::string&>();
    size_t slash = kind.find('/');
    if (slash == std::string::npos || kind.find('/', slash + 1) != std::string::npos) {
      Add(path, absl::StrCat("must be \"<vendor>/<class>\", e.g. \"nvidia.com/gpu\", got ",
                             Quoted(Spec(kind))));
      return;
    }
    QualifierPart(kind.substr(0, slash), "vendor", true, path);
    bool dots = version.empty() || version >= "0.6.0";
    QualifierPart(kind.substr(slash + 1), "class", dots, path);
  }

  void QualifierPart(const std::string& name, const char* what, bool dots,
                     const std::string& path) {
    if (name.empty()) {
      Add(path, absl::StrCat("the ", what, " is empty"));
      return;
    }
    if (!absl::ascii_isalpha(static_cast<unsigned char>(name.front()))) {
      Add(path, absl::StrCat("the ", what, " \"", name, "\" must start with a letter"));
    }
    if (!absl::ascii_isalnum(static_cast<unsigned char>(name.back()))) {
      Add(path, absl::StrCat("the ", what, " \"", name, "\" must end with a letter or digit"));
    }
    for (char c : name) {
      bool ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ||
                (c == '.' && dots);
      if (!ok) {
        Add(path,
            absl::StrCat("the ", what, " \"", name, "\" has the character '", std::string(1, c),
                         "'", c == '.' ? " (cdiVersion 0.6.0 allows it)" : ""));
        return;
      }
    }
  }

  void DeviceName(const Spec& value, const std::string& path) {
    if (!IsString(value, path)) return;
    const std::string& name = value.get_ref<const std::string&>();
    if (name.empty()) {
      Add(path, "must not be empty");
      return;
    }
    auto alnum = [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); };
    if (!alnum(name.front()) || !alnum(name.back())) {
      Add(path,
          absl::StrCat("device name \"", name, "\" must start and end with a letter or digit"));
    }
    for (char c : name) {
      if (!alnum(c) && c != '_' && c != '-' && c != '.' && c != ':') {
        Add(path, absl::StrCat("device name \"", name, "\" has the character '", std::string(1, c),
                               "'; use letters, digits, _ - . :"));
        return;
      }
    }
  }

  void DeviceNode(const Spec& node, const std::string& path) {
    if (!IsObject(node, path)) return;
    Required(node, path, {"path"});
    for (const auto& [key, value] : node.items()) {
      std::string at = absl::StrCat(path, ".", key);
      if (key == "path" || key == "hostPath") {
        AbsolutePath(value, at);
      } else if (key == "type") {
        if (IsString(value, at) && value != "b" && value != "c" && value != "u" && value != "p") {
          Add(at, "must be one of b, c, u, p");
        }
      } else if (key == "permissions") {
        if (IsString(value, at) &&
            value.get_ref<const std::string&>().find_first_not_of("rwm") != std::string::npos) {
          Add(at, "must be made of r, w and m");
        }
      } else if (key == "major" || key == "minor") {
        Integer(value, at, std::numeric_limits<int64_t>::min(),
                std::numeric_limits<int64_t>::max());
      } else if (key == "uid" || key == "gid") {
        Integer(value, at, 0, std::numeric_limits<uint32_t>::max());
      } else if (key == "fileMode") {
        Integer(value, at, 0, std::numeric_limits<uint32_t>::max());
      }
    }
  }

  void Mount(const Spec& mount, const std::string& path) {
    if (!IsObject(mount, path)) return;
    Required(mount, path, {"hostPath", "containerPath"});
    for (const auto& [key, value] : mount.items()) {
      std::string at = absl::StrCat(path, ".", key);
      if (key == "hostPath" || key == "containerPath") AbsolutePath(value, at);
      if (key == "options") StringArray(value, at);
      if (key == "type") IsString(value, at);
    }
  }

  void Hook(const Spec& hook, const std::string& path) {
    if (!IsObject(hook, path)) return;
    Required(hook, path, {"hookName", "path"});
    for (const auto& [key, value] : hook.items()) {
      std::string at = absl::StrCat(path, ".", key);
      if (key == "hookName") {
        if (!IsString(value, at)) continue;
        bool known = false;
        for (const char* name : kHookNames) known = known || value == name;
        if (!known) {
          Add(at, absl::StrCat("unknown hook ", Quoted(value),
                               "; use prestart, createRuntime, createContainer, startContainer, "
                               "poststart or poststop"));
        }
      } else if (key == "path") {
        AbsolutePath(value, at);
      } else if (key == "args" || key == "env") {
        StringArray(value, at);
      } else if (key == "timeout") {
        Integer(value, at, 0, std::numeric_limits<uint32_t>::max());
      }
    }
  }

  // Returns whether the edits hold anything.
  bool Edits(const Spec& edits, const std::string& path) {
    if (!IsObject(edits, path)) return true;
    bool any = false;
    auto each = [&](const char* key, auto check) {
      if (!edits.contains(key)) return;
      std::string at = absl::StrCat(path, ".", key);
      const Spec& list = edits[key];
      if (!IsArray(list, at)) return;
      any = any || !list.empty();
      for (size_t i = 0; i < list.size(); ++i) check(list[i], absl::StrCat(at, "[", i, "]"));
    };
    each("env", [&](const Spec& v, const std::string& at) {
      if (!IsString(v, at)) return;
      if (v.get_ref<const std::string&>().find('=') == 0 ||
          v.get_ref<const std::string&>().find('=') == std::string::npos) {
        Add(at, absl::StrCat("must be NAME=value, got ", Quoted(v)));
      }
    });
    each("deviceNodes", [&](const Spec& v, const std::string& at) { DeviceNode(v, at); });
    each("mounts", [&](const Spec& v, const std::string& at) { Mount(v, at); });
    each("hooks", [&](const Spec& v, const std::string& at) { Hook(v, at); });
    if (edits.contains("intelRdt")) {
      any = true;
      IsObject(edits["intelRdt"], absl::StrCat(path, ".intelRdt"));
    }
    if (edits.contains("additionalGids")) {
      std::string at = absl::StrCat(path, ".additionalGids");
      if (IsArray(edits["additionalGids"], at)) {
        any = any || !edits["additionalGids"].empty();
        for (size_t i = 0; i < edits["additionalGids"].size(); ++i) {
          Integer(edits["additionalGids"][i], absl::StrCat(at, "[", i, "]"), 0,
                  std::numeric_limits<uint32_t>::max());
        }
      }
    }
    return any;
  }
};

}  // namespace

std::vector<SpecProblem> ValidateSpec(const Spec& spec) {
  Checker c;
  if (!c.IsObject(spec, "$")) return c.problems;
  c.Required(spec, "$", {"cdiVersion", "kind", "devices"});
  c.OnlyKeys(spec, "$", {"cdiVersion", "kind", "annotations", "devices", "containerEdits"});

  std::string version;
  if (spec.contains("cdiVersion") && c.IsString(spec["cdiVersion"], "$.cdiVersion")) {
    version = spec["cdiVersion"].get<std::string>();
    if (!version.empty() && version.front() == 'v') version.erase(0, 1);
    bool known = false;
    for (const char* v : kVersions) known = known || version == v;
    if (!known) {
      c.Add("$.cdiVersion", absl::StrCat("unknown version ", Quoted(spec["cdiVersion"]),
                                         "; use one of 0.3.0 to 0.8.0"));
      version.clear();
    } else if (std::string minimum = MinimumCdiVersion(spec); version < minimum) {
      c.Add("$.cdiVersion", absl::StrCat("is ", version, " but the spec uses features of ", minimum,
                                         "; set it to ", minimum, " or later"));
    }
  }
  if (spec.contains("kind")) c.Kind(spec["kind"], "$.kind", version);
  if (spec.contains("annotations")) c.Annotations(spec["annotations"], "$.annotations");
  if (spec.contains("containerEdits")) c.Edits(spec["containerEdits"], "$.containerEdits");
  if (spec.contains("devices") && c.IsArray(spec["devices"], "$.devices")) {
    std::set<std::string> names;
    for (size_t i = 0; i < spec["devices"].size(); ++i) {
      const Spec& device = spec["devices"][i];
      std::string at = absl::StrCat("$.devices[", i, "]");
      if (!c.IsObject(device, at)) continue;
      c.Required(device, at, {"name", "containerEdits"});
      c.OnlyKeys(device, at, {"name", "annotations", "containerEdits"});
      if (device.contains("name")) {
        c.DeviceName(device["name"], at + ".name");
        if (device["name"].is_string() && !names.insert(device["name"].get<std::string>()).second) {
          c.Add(at + ".name", absl::StrCat("duplicate device name ", Quoted(device["name"])));
        }
      }
      if (device.contains("annotations")) c.Annotations(device["annotations"], at + ".annotations");
      if (device.contains("containerEdits") &&
          !c.Edits(device["containerEdits"], at + ".containerEdits")) {
        c.Add(at + ".containerEdits", "a device must have at least one edit");
      }
    }
  }
  return c.problems;
}

std::vector<SpecProblem> UnusableDevices(const Spec& spec) {
  std::vector<SpecProblem> problems;
  if (!spec.is_object() || !spec.contains("devices") || !spec["devices"].is_array()) {
    return problems;
  }
  auto is_digits = [](std::string_view text) {
    return !text.empty() && absl::c_all_of(text, absl::ascii_isdigit);
  };
  for (size_t i = 0; i < spec["devices"].size(); ++i) {
    const Spec& device = spec["devices"][i];
    if (!device.is_object() || !device.contains("name") || !device["name"].is_string()) continue;
    const std::string name = device["name"].get<std::string>();
    size_t colon = name.find(':');
    bool mig = absl::StartsWith(name, "MIG-") ||
               (colon != std::string::npos && is_digits(std::string_view(name).substr(0, colon)) &&
                is_digits(std::string_view(name).substr(colon + 1)));
    if (!mig) continue;
    bool caps = false;
    if (device.contains("containerEdits") && device["containerEdits"].is_object() &&
        device["containerEdits"].contains("deviceNodes") &&
        device["containerEdits"]["deviceNodes"].is_array()) {
      for (const Spec& node : device["containerEdits"]["deviceNodes"]) {
        caps = caps || (node.is_object() && node.contains("path") && node["path"].is_string() &&
                        absl::StartsWith(node["path"].get<std::string>(), "/dev/nvidia-caps/"));
      }
    }
    if (!caps) {
      problems.push_back(
          {absl::StrCat("$.devices[", i, "]"),
           absl::StrCat("MIG device ", Quoted(device["name"]),
                        " has no /dev/nvidia-caps/ device node: a container given it fails at "
                        "start; generate the spec again where the driver lists its MIG "
                        "capabilities (/proc/driver/nvidia-caps/mig-minors)")});
    }
  }
  return problems;
}

}  // namespace gpunode::cdi
