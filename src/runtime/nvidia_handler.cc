#include "runtime/nvidia_handler.h"

#include "absl/strings/str_cat.h"
#include "containerd/toml_document.h"

namespace gpunode::runtime {
namespace {

// containerd's own default when default_runtime_name is unset.
constexpr char kBuiltinDefaultRuntime[] = "runc";

bool IsRuncBased(const toml::table& runtime) {
  std::string type = runtime["runtime_type"].value_or(std::string());
  return type.empty() || type == kRuncV2RuntimeType || type == "io.containerd.runc.v1";
}

void Overlay(toml::table& into, const toml::table& from) {
  for (auto it = from.begin(); it != from.end(); ++it) {
    const toml::key& key = it->first;
    const toml::node& value = it->second;
    toml::node* existing = into.get(key);
    if (existing != nullptr && existing->is_table() && value.is_table()) {
      Overlay(*existing->as_table(), *value.as_table());
    } else {
      value.visit([&](const auto& v) { into.insert_or_assign(key, v); });
    }
  }
}

// Puts `key` back to what `original` had (or removes it) when gpunode set it to `ours` earlier
// and the operator's file did not already say so.
void RestoreIfOurs(toml::table& table, const toml::table* original, const std::string& key,
                   const toml::node& ours) {
  const toml::node* now = table.get(key);
  if (now == nullptr || !(now->type() == ours.type())) return;
  bool equal = now->visit([&](const auto& x) {
    return x == static_cast<const std::remove_cvref_t<decltype(x)>&>(ours);
  });
  if (!equal) return;
  const toml::node* before = original == nullptr ? nullptr : original->get(key);
  if (before == nullptr) {
    table.erase(key);
    return;
  }
  before->visit([&](const auto& v) { table.insert_or_assign(key, v); });
}

}  // namespace

std::string InheritedRuntime(const toml::table& cri, const std::string& handler) {
  const toml::table* runtimes = containerd::FindTable(cri, {"containerd", "runtimes"});
  if (runtimes == nullptr) return "";
  std::string default_name =
      cri["containerd"]["default_runtime_name"].value_or(std::string(kBuiltinDefaultRuntime));
  for (const std::string& name : {default_name, std::string(kBuiltinDefaultRuntime)}) {
    if (name == handler) continue;
    const toml::node* runtime = runtimes->get(name);
    if (runtime != nullptr && runtime->is_table() && IsRuncBased(*runtime->as_table())) return name;
  }
  return "";
}

absl::StatusOr<toml::table> WithNvidiaHandler(const toml::table& current,
                                              const toml::table& original,
                                              const HandlerRequest& request) {
  toml::table cri = current;
  toml::table* containerd = containerd::EnsureTable(cri, {"containerd"});
  toml::table* runtimes =
      containerd == nullptr ? nullptr : containerd::EnsureTable(*containerd, {"runtimes"});
  if (runtimes == nullptr) {
    return absl::InvalidArgumentError(
        "containerd.runtimes of the CRI plugin is not a table; fix the config first");
  }
  // Without a runtimes table containerd supplies runc itself, but any runtimes table replaces
  // that built-in one: write runc out so adding the handler does not remove it.
  if (runtimes->empty()) {
    runtimes->insert("runc", toml::table{{"runtime_type", kRuncV2RuntimeType}});
  }

  toml::table handler;
  if (const toml::table* existing = (*runtimes)[request.name].as_table()) handler = *existing;
  if (std::string source = InheritedRuntime(cri, request.name); !source.empty()) {
    Overlay(handler, *(*runtimes)[source].as_table());
  }
  handler.insert_or_assign("runtime_type", kRuncV2RuntimeType);
  toml::table* options = containerd::EnsureTable(handler, {"options"});
  if (options == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "containerd.runtimes.", request.name, ".options is not a table; fix the config first"));
  }
  options->insert_or_assign("BinaryName", request.binary);
  runtimes->insert_or_assign(request.name, std::move(handler));

  const toml::table* original_containerd = containerd::FindTable(original, {"containerd"});
  if (request.set_as_default) {
    containerd->insert_or_assign("default_runtime_name", request.name);
  } else {
    RestoreIfOurs(*containerd, original_containerd, "default_runtime_name",
                  toml::value<std::string>(request.name));
  }
  if (request.enable_cdi) {
    cri.insert_or_assign("enable_cdi", true);
  } else {
    RestoreIfOurs(cri, &original, "enable_cdi", toml::value<bool>(true));
  }
  return cri;
}

}  // namespace gpunode::runtime
