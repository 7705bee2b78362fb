// Feeds arbitrary bytes to the containerd config reader, the imports splice and the in-place
// handler edit. Any text they hand back must read back as intended; an edit that would not is the
// splicer's safety net firing, which is a bug worth a crash here.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "containerd/containerd_config.h"
#include "containerd/import_chain.h"
#include "runtime/imports_splice.h"
#include "runtime/nvidia_handler.h"
#include "runtime/toml_text_edit.h"

namespace {

constexpr char kPath[] = "/etc/containerd/config.toml";
constexpr char kDropIn[] = "/etc/containerd/conf.d/99-nvidia.toml";

void CheckSplice(const gpunode::containerd::ContainerdConfig& config) {
  absl::StatusOr<std::string> spliced = gpunode::runtime::SpliceImport(config, kDropIn);
  if (!spliced.ok()) {
    if (absl::IsInternal(spliced.status())) std::abort();
    return;
  }
  absl::StatusOr<gpunode::containerd::ContainerdConfig> again =
      gpunode::containerd::ParseContainerdConfig(kPath, *spliced);
  if (!again.ok() || again->version != config.version) std::abort();
  absl::StatusOr<std::vector<std::string>> imports =
      gpunode::containerd::ImportsOf(kPath, again->doc);
  if (!imports.ok() || imports->empty() || imports->back() != kDropIn) std::abort();
}

void CheckInPlace(const gpunode::containerd::ContainerdConfig& config, size_t size) {
  std::string plugin = gpunode::containerd::CriPluginId(config.version);
  const toml::table* cri = gpunode::containerd::FindTable(config.doc, {"plugins", plugin});
  gpunode::runtime::HandlerRequest request;
  request.set_as_default = size % 2 == 0;
  request.enable_cdi = size % 3 == 0;
  absl::StatusOr<toml::table> wanted = gpunode::runtime::WithNvidiaHandler(
      cri ? *cri : toml::table{}, cri ? *cri : toml::table{}, request);
  if (!wanted.ok()) return;
  gpunode::runtime::TomlTextEdit edit(kPath, config.text);
  if (!edit.Set({"plugins"}, plugin, *wanted).ok()) return;
  absl::StatusOr<std::string> out = edit.Finish();
  if (!out.ok() && absl::IsInternal(out.status())) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpunode::containerd::ContainerdConfig> config =
      gpunode::containerd::ParseContainerdConfig(kPath, text);
  if (!config.ok()) return 0;
  CheckSplice(*config);
  CheckInPlace(*config, size);
  return 0;
}
