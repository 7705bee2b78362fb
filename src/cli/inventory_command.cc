#include <algorithm>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/host_root.h"
#include "gpu/inventory_report.h"

namespace gpunode::cli {
namespace {

struct InventoryOptions {
  std::string output = "table";
};

int RunInventory(const GlobalOptions& global, const InventoryOptions& options) {
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  absl::StatusOr<gpu::NodeSnapshot> node =
      gpu::ReadNodeSnapshot(**library, core::HostRoot(global.host_root));
  if (!node.ok()) return ReportError(node.status());
  if (options.output == "json") {
    std::cout << gpu::InventoryJson(*node).dump(2) << "\n";
  } else {
    std::cout << gpu::InventoryTable(*node);
  }
  // The inventory is printed whole; a GPU that fell off the bus is still a failure of the node.
  const bool any_lost = std::any_of(node->gpus.begin(), node->gpus.end(),
                                    [](const gpu::GpuSnapshot& g) { return g.lost; });
  return any_lost ? kExitFailures : kExitOk;
}

}  // namespace

void AddInventoryCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto options = std::make_shared<InventoryOptions>();
  CLI::App* cmd =
      app.add_subcommand("inventory", "GPUs, MIG devices, links and versions of this node");
  cmd->add_option("-o,--output", options->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  cmd->callback([&global, &run, options] {
    run = [&global, options] { return RunInventory(global, *options); };
  });
}

}  // namespace gpunode::cli
