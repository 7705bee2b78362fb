#include "cdi/spec.h"

#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace gpunode::cdi {
namespace {

Spec DeviceNode(const SpecOptions& options, const std::string& path) {
  return {{"path", path}, {"hostPath", UnderRoot(options.dev_root, path)}};
}

Spec Device(const std::string& name, Spec nodes) {
  return {{"name", name}, {"containerEdits", {{"deviceNodes", std::move(nodes)}}}};
}

// internal/discover/mounts.go and ipc.go: rprivate, so that nothing mounted later under a bound
// directory reaches the other side; the IPC sockets and the MPS pipe directory are not read-only,
// or a runtime nested in the container cannot bind them on (NVIDIA/nvidia-container-toolkit#1593).
Spec Mount(const DriverFile& file, bool ipc) {
  Spec options = ipc ? Spec::array({"nosuid", "nodev", "rbind", "rprivate", "noexec"})
                     : Spec::array({"ro", "nosuid", "nodev", "rbind", "rprivate"});
  return {{"hostPath", file.host_path},
          {"containerPath", file.container_path},
          {"options", std::move(options)}};
}

// pkg/nvcdi/wrapper.go: the "void" device of the volume-mounts device list, the counterpart of
// NVIDIA_VISIBLE_DEVICES=void for an NVIDIA runtime hook that reads the list from mounts.
Spec VoidDeviceListMount() {
  return {{"hostPath", "/dev/null"},
          {"containerPath", "/var/run/nvidia-container-devices/void"},
          {"options", Spec::array({"ro", "nosuid", "nodev", "bind"})}};
}

std::string Directory(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string Base(const std::string& path) { return path.substr(path.rfind('/') + 1); }

// internal/discover/hooks.go: nvidia-cdi-hook takes the hook as its first argument, nvidia-ctk
// under "hook".
Spec Hook(const std::string& hook_path, const std::string& name, const Spec& arguments) {
  Spec args = Spec::array({Base(hook_path)});
  if (Base(hook_path) == "nvidia-ctk") args.push_back("hook");
  args.push_back(name);
  for (const auto& argument : arguments) args.push_back(argument);
  return {{"hookName", "createContainer"}, {"path", hook_path}, {"args", std::move(args)}};
}

Spec Hooks(const DriverFiles& driver, const std::string& hook_path) {
  Spec hooks = Spec::array();
  Spec links = Spec::array();
  for (const std::string& link : driver.library_links) {
    links.push_back("--link");
    links.push_back(link);
  }
  if (!links.empty()) hooks.push_back(Hook(hook_path, "create-symlinks", links));
  // internal/discover/ldconfig.go: one --folder per directory holding a library.
  std::set<std::string> seen;
  Spec folders = Spec::array();
  for (const DriverFile& library : driver.libraries) {
    std::string dir = Directory(library.container_path);
    if (seen.insert(dir).second) {
      folders.push_back("--folder");
      folders.push_back(dir);
    }
  }
  if (!folders.empty()) hooks.push_back(Hook(hook_path, "update-ldcache", folders));
  return hooks;
}

bool AnyMount(const Spec& edits, const char* key) {
  if (!edits.is_object() || !edits.contains("mounts") || !edits["mounts"].is_array()) return false;
  for (const auto& mount : edits["mounts"]) {
    if (mount.is_object() && mount.contains(key)) return true;
  }
  return false;
}

bool AnyDeviceNodeHostPath(const Spec& edits) {
  if (!edits.is_object() || !edits.contains("deviceNodes") || !edits["deviceNodes"].is_array()) {
    return false;
  }
  for (const auto& node : edits["deviceNodes"]) {
    if (node.is_object() && node.contains("hostPath") && node["hostPath"] != "") return true;
  }
  return false;
}

bool NonEmpty(const Spec& object, const char* key) {
  return object.is_object() && object.contains(key) && !object[key].empty();
}

}  // namespace

Spec BuildSpec(const std::vector<GpuDevice>& gpus, const DriverFiles& driver,
               const SpecOptions& options) {
  Spec devices = Spec::array();
  Spec all_nodes = Spec::array();
  for (const GpuDevice& gpu : gpus) {
    std::string gpu_path = absl::StrCat("/dev/nvidia", gpu.minor);
    Spec gpu_nodes = Spec::array({DeviceNode(options, gpu_path)});
    all_nodes.push_back(DeviceNode(options, gpu_path));
    devices.push_back(Device(absl::StrCat(gpu.index), gpu_nodes));
    devices.push_back(Device(gpu.uuid, gpu_nodes));
    for (const MigDevice& mig : gpu.migs) {
      Spec mig_nodes = gpu_nodes;
      for (const std::string& path : mig.capability_nodes) {
        mig_nodes.push_back(DeviceNode(options, path));
        all_nodes.push_back(DeviceNode(options, path));
      }
      devices.push_back(Device(absl::StrCat(gpu.index, ":", mig.position), mig_nodes));
      devices.push_back(Device(mig.uuid, std::move(mig_nodes)));
    }
  }
  devices.push_back(Device("all", std::move(all_nodes)));

  Spec edits = {{"env", Spec::array({"NVIDIA_VISIBLE_DEVICES=void"})}};
  Spec nodes = Spec::array();
  for (const std::string& path : driver.control_devices) nodes.push_back(DeviceNode(options, path));
  if (!nodes.empty()) edits["deviceNodes"] = std::move(nodes);
  Spec mounts = Spec::array();
  for (const auto* group : {&driver.libraries, &driver.binaries, &driver.firmware}) {
    for (const DriverFile& file : *group) mounts.push_back(Mount(file, false));
  }
  for (const DriverFile& file : driver.ipc) mounts.push_back(Mount(file, true));
  mounts.push_back(VoidDeviceListMount());
  edits["mounts"] = std::move(mounts);
  if (options.hook_path) {
    Spec hooks = Hooks(driver, *options.hook_path);
    if (!hooks.empty()) edits["hooks"] = std::move(hooks);
  }

  Spec spec = {{"cdiVersion", ""},
               {"kind", options.kind},
               {"devices", std::move(devices)},
               {"containerEdits", std::move(edits)}};
  spec["cdiVersion"] = MinimumCdiVersion(spec);
  return spec;
}

std::string MinimumCdiVersion(const Spec& spec) {
  std::vector<const Spec*> edits;
  bool device_annotations = false;
  bool digit_name = false;
  if (spec.contains("containerEdits")) edits.push_back(&spec["containerEdits"]);
  if (spec.contains("devices") && spec["devices"].is_array()) {
    for (const auto& device : spec["devices"]) {
      if (!device.is_object()) continue;
      if (device.contains("containerEdits")) edits.push_back(&device["containerEdits"]);
      if (NonEmpty(device, "annotations")) device_annotations = true;
      if (device.contains("name") && device["name"].is_string()) {
        const std::string& name = device["name"].get_ref<const std::string&>();
        if (!name.empty() && !absl::ascii_isalpha(static_cast<unsigned char>(name[0]))) {
          digit_name = true;
        }
      }
    }
  }
  bool v07 = false, v05 = digit_name, v04 = false;
  for (const Spec* e : edits) {
    if (NonEmpty(*e, "intelRdt") || NonEmpty(*e, "additionalGids")) v07 = true;
    if (AnyDeviceNodeHostPath(*e)) v05 = true;
    if (AnyMount(*e, "type")) v04 = true;
  }
  std::string kind = spec.contains("kind") && spec["kind"].is_string() ? spec["kind"] : "";
  size_t slash = kind.find('/');
  bool dotted_class = slash != std::string::npos && kind.find('.', slash) != std::string::npos;
  if (v07) return "0.7.0";
  if (NonEmpty(spec, "annotations") || device_annotations || dotted_class) return "0.6.0";
  if (v05) return "0.5.0";
  if (v04) return "0.4.0";
  return "0.3.0";
}

}  // namespace gpunode::cdi
