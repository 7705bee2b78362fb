// `gpunode cdi generate`: a CDI spec for this node's GPUs, for the cdi-annotations and cdi-cri
// strategies of the device plugin (or any CDI-aware runtime).
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/file_io.h"
#include "host/host_root.h"
#include "plugin/cdi/cdi_spec.h"
#include "plugin/rm/node.h"

namespace gpunode::cli {
namespace {

struct CdiGenerateOptions {
  std::string output = "-";
  std::string kind = "k8s.device-plugin.nvidia.com/gpu";
  std::string dev_root = "/";
};

int RunCdiGenerate(const GlobalOptions& global, const CdiGenerateOptions& options) {
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  host::HostRoot host(global.host_root);
  absl::StatusOr<plugin::Node> node = plugin::ReadNode(**library, host);
  if (!node.ok()) return ReportError(node.status());
  nlohmann::json spec = plugin::CdiSpec(*node, plugin::ReadHostDevices(host, options.dev_root),
                                        {.kind = options.kind, .dev_root = options.dev_root});
  if (options.output == "-") {
    std::cout << spec.dump(2) << "\n";
    return kExitOk;
  }
  absl::Status st =
      core::WriteFileAtomic(options.output, spec.dump(2) + "\n", {.backup_existing = false});
  if (!st.ok()) return ReportError(st);
  return kExitOk;
}

}  // namespace

void AddCdiCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  CLI::App* cdi = app.add_subcommand("cdi", "Container Device Interface specs for this node");
  cdi->require_subcommand(1);
  auto options = std::make_shared<CdiGenerateOptions>();
  CLI::App* generate = cdi->add_subcommand(
      "generate", "write a CDI spec: a device per GPU index, per UUID, per MIG device and \"all\"");
  generate->add_option("-o,--output", options->output, "file to write, - for stdout")
      ->capture_default_str();
  generate->add_option("--kind", options->kind, "the spec's vendor/class")->capture_default_str();
  generate->add_option("--dev-root", options->dev_root, "prefix of the device nodes' host paths")
      ->capture_default_str();
  generate->callback([&global, &run, options] {
    run = [&global, options] { return RunCdiGenerate(global, *options); };
  });
}

}  // namespace gpunode::cli
