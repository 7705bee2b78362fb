// `gpunode labels`: GPU feature discovery's node labels (and, opt-in, the operators' stable
// scheme) written to NFD's local features file, or onto the node itself through the API server.
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "cli/report_error.h"
#include "core/system_env.h"
#include "labels/run.h"

namespace gpunode::cli {

void AddLabelsCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto options = std::make_shared<labels::Options>();
  // GFD's boolean flags; each counts only when given, so that its variable can stand in.
  auto oneshot = std::make_shared<bool>(false);
  auto no_timestamp = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "labels",
      "write GPU feature discovery's node labels to NFD's local features file, or onto the node");
  cmd->add_option("-o,--output,--output-file", options->output,
                  "the features file; - for stdout (env GFD_OUTPUT_FILE)")
      ->default_str(labels::kDefaultOutput);
  cmd->add_flag("--oneshot", *oneshot, "label once and exit (env GFD_ONESHOT)");
  cmd->add_option("--interval,--sleep-interval", options->interval,
                  "time between relabelings (env GFD_SLEEP_INTERVAL)")
      ->default_str(labels::kDefaultInterval);
  cmd->add_option("--config-file", options->config_file,
                  "the device plugin's config file, for sharing and the MIG strategy (env "
                  "CONFIG_FILE, GFD_CONFIG_FILE)");
  cmd->add_option("--mig-strategy", options->mig_strategy,
                  "none, single or mixed (env MIG_STRATEGY, GFD_MIG_STRATEGY; default: the "
                  "config file's, else none)");
  cmd->add_option("--machine-type-file", options->machine_type_file,
                  "the DMI product name file, under --host-root (env GFD_MACHINE_TYPE_FILE)")
      ->default_str(labels::kDefaultMachineTypeFile);
  cmd->add_flag("--no-timestamp", *no_timestamp,
                "leave out nvidia.com/gfd.timestamp (env GFD_NO_TIMESTAMP)");
  cmd->add_flag("--stable-labels", options->stable_labels,
                "also write accelerator=nvidia-<model>, gpu.count and gpu.memory=<GiB>g");
  cmd->add_option("--stable-label-prefix", options->stable_label_prefix,
                  "prefix of the stable labels' keys, such as example.com/ (default none: the "
                  "bare key on the node; with --write file NFD puts it under "
                  "feature.node.kubernetes.io/)");
  cmd->add_option("--write", options->write,
                  "file: NFD's features file (-o); node: the node's own labels, merge-patched "
                  "through the API server (KUBECONFIG or the pod's service account)")
      ->capture_default_str();
  cmd->add_option("--node-name", options->node_name,
                  "the node --write node labels (env NODE_NAME, from spec.nodeName)")
      ->envname("NODE_NAME");
  cmd->callback([&global, &run, options, oneshot, no_timestamp, cmd] {
    if (cmd->count("--oneshot") > 0) options->oneshot = *oneshot;
    if (cmd->count("--no-timestamp") > 0) options->no_timestamp = *no_timestamp;
    run = [&global, options] {
      options->driver_root = global.driver_root;
      options->simulated = !global.sim.empty();
      options->open_nvml = NvmlOpener(global);
      core::SystemEnv env(global.host_root);
      if (absl::Status st = env.StopOnSignals(); !st.ok()) return Report(st);
      return Report(labels::Run(*options, env));
    };
  });
}

}  // namespace gpunode::cli
