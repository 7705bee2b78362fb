// `gpunode mig`: list a node's MIG profiles, and apply or check a layout written in
// nvidia-mig-parted's config format.
#include <csignal>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "cli/report_error.h"
#include "core/system_env.h"
#include "mig/gpu_mig_state.h"
#include "mig/mig_apply.h"
#include "mig/mig_config.h"
#include "mig/run.h"
#include "nlohmann/json.hpp"

namespace gpunode::cli {
namespace {

struct MigOptions {
  std::string output = "table";
  std::string config_file;
  std::string config_name;
  bool dry_run = false;
  bool force = false;
  mig::RunOptions manager;
};

nlohmann::ordered_json ProfilesJson(const std::vector<mig::GpuMigState>& gpus) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const mig::GpuMigState& gpu : gpus) {
    nlohmann::ordered_json g = {{"index", gpu.index},
                                {"name", gpu.name},
                                {"mig_capable", gpu.capable},
                                {"mig_mode", gpu.mode.current ? "enabled" : "disabled"},
                                {"mig_mode_pending", gpu.mode.pending ? "enabled" : "disabled"}};
    nlohmann::ordered_json profiles = nlohmann::ordered_json::array();
    for (const mig::ProfileChoice& choice : gpu.profiles) {
      const nvml::GpuInstanceProfile& p = choice.profile;
      nlohmann::ordered_json placements = nlohmann::ordered_json::array();
      for (const nvml::MigPlacement& placement : choice.placements)
        placements.push_back({{"start", placement.start}, {"size", placement.size}});
      profiles.push_back({{"name", p.name},
                          {"id", p.id},
                          {"instances_total", p.instances},
                          {"instances_free", choice.remaining},
                          {"memory_mib", p.memory_mib},
                          {"multiprocessors", p.multiprocessors},
                          {"copy_engines", p.copy_engines},
                          {"decoders", p.decoders},
                          {"encoders", p.encoders},
                          {"jpegs", p.jpegs},
                          {"ofas", p.ofas},
                          {"p2p", p.p2p},
                          {"placements", placements}});
    }
    g["profiles"] = profiles;
    out.push_back(g);
  }
  return out;
}

void PrintProfilesTable(const std::vector<mig::GpuMigState>& gpus) {
  for (const mig::GpuMigState& gpu : gpus) {
    std::cout << mig::GpuLabel(gpu) << ": ";
    if (!gpu.capable) {
      std::cout << "no MIG\n";
      continue;
    }
    if (!gpu.mode.current) {
      std::cout << "MIG disabled" << (gpu.mode.pending ? " (enabled pending a GPU reset)" : "")
                << "; NVML lists profiles only while MIG is on\n";
      continue;
    }
    std::cout << "MIG enabled\n";
    std::cout << absl::StrFormat("  %-12s %3s %9s %10s %4s %3s %4s %4s %4s %3s %3s  %s\n",
                                 "PROFILE", "ID", "FREE/TOT", "MEMORY", "SMS", "CE", "DEC", "ENC",
                                 "JPG", "OFA", "P2P", "PLACEMENTS");
    for (const mig::ProfileChoice& choice : gpu.profiles) {
      const nvml::GpuInstanceProfile& p = choice.profile;
      std::string placements;
      for (const nvml::MigPlacement& placement : choice.placements)
        absl::StrAppend(&placements, placements.empty() ? "" : " ", placement.start, ":",
                        placement.size);
      std::string free_total = absl::StrCat(choice.remaining, "/", p.instances);
      std::cout << absl::StrFormat("  %-12s %3u %9s %6.2fGiB %4u %3u %4u %4u %4u %3u %3s  %s\n",
                                   p.name, p.id, free_total, p.memory_mib / 1024.0,
                                   p.multiprocessors, p.copy_engines, p.decoders, p.encoders,
                                   p.jpegs, p.ofas, p.p2p ? "yes" : "no", placements);
    }
  }
}

int RunProfiles(const GlobalOptions& global, const MigOptions& options) {
  auto library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  auto gpus = mig::ReadNodeMigState(**library);
  if (!gpus.ok()) return ReportError(gpus.status());
  if (options.output == "json") {
    std::cout << ProfilesJson(*gpus).dump(2) << "\n";
  } else {
    PrintProfilesTable(*gpus);
  }
  return kExitOk;
}

int RunApply(const GlobalOptions& global, const MigOptions& options) {
  auto file = mig::ReadMigConfig(options.config_file);
  if (!file.ok()) return ReportError(file.status());
  auto library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  auto result = mig::ApplyConfig(**library, *file, options.config_name,
                                 mig::ApplyOptions{options.dry_run, options.force});
  if (!result.ok()) return ReportError(result.status());
  for (const std::string& line : result->lines) std::cout << line << "\n";
  for (const std::string& line : result->pending) std::cout << line << "\n";
  if (result->lines.empty() && result->pending.empty()) {
    std::cout << "the node already has MIG config \"" << options.config_name
              << "\"; nothing changed\n";
  }
  // A mode that waits for a GPU reset means the layout is not there yet.
  return result->pending.empty() ? kExitOk : kExitFailures;
}

int RunAssert(const GlobalOptions& global, const MigOptions& options) {
  auto file = mig::ReadMigConfig(options.config_file);
  if (!file.ok()) return ReportError(file.status());
  auto library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  auto differences = mig::AssertConfig(**library, *file, options.config_name);
  if (!differences.ok()) return ReportError(differences.status());
  if (differences->empty()) {
    std::cout << "the node has MIG config \"" << options.config_name << "\"\n";
    return kExitOk;
  }
  for (const std::string& line : *differences) std::cout << line << "\n";
  return kExitFailures;
}

void AddConfigFlags(CLI::App* cmd, MigOptions& options) {
  cmd->add_option("-f,--config-file", options.config_file, "mig-parted config file (version: v1)")
      ->required();
  cmd->add_option("-c,--config", options.config_name, "the name of a layout under mig-configs")
      ->required();
}

}  // namespace

void AddMigCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  auto options = std::make_shared<MigOptions>();
  CLI::App* mig = app.add_subcommand("mig", "MIG layouts: list profiles, apply and check layouts");
  mig->require_subcommand(1);

  CLI::App* profiles = mig->add_subcommand("profiles", "each GPU's MIG profiles and placements");
  profiles->add_option("-o,--output", options->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  profiles->callback([&global, &run, options] {
    run = [&global, options] { return RunProfiles(global, *options); };
  });

  CLI::App* apply = mig->add_subcommand("apply", "partition the GPUs as a mig-parted layout says");
  AddConfigFlags(apply, *options);
  apply->add_flag("--dry-run", options->dry_run, "print the plan; change nothing");
  apply->add_flag("--force", options->force, "change GPUs even while processes use them");
  apply->callback([&global, &run, options] {
    run = [&global, options] { return RunApply(global, *options); };
  });

  CLI::App* manager = mig->add_subcommand(
      "manager", "node daemon: apply the layout the node label nvidia.com/mig.config names");
  manager
      ->add_option("-f,--config-file", options->manager.config_file,
                   "mig-parted config file (version: v1), read again for every change")
      ->envname("CONFIG_FILE")
      ->required();
  manager->add_option("--node", options->manager.node, "this node's name")->envname("NODE_NAME");
  manager
      ->add_option("--client-label", options->manager.client_labels,
                   "node label of a GPU client's DaemonSet, paused while the GPUs change")
      ->capture_default_str();
  manager
      ->add_option("--client-selector", options->manager.client_selectors,
                   "label selector of a GPU client's pods, waited for until gone")
      ->capture_default_str();
  manager
      ->add_option("--client-timeout", options->manager.client_timeout,
                   "how long to wait for the client pods to go")
      ->capture_default_str();
  manager->add_flag("--force", options->manager.force, "change GPUs even while processes use them");
  manager->callback([&global, &run, options] {
    run = [&global, options] {
      options->manager.driver_root = global.driver_root;
      options->manager.open_nvml = NvmlOpener(global);
      core::SystemEnv env(global.host_root);
      // SIGHUP, a reload elsewhere, is ignored: the config is read again for every change.
      if (absl::Status st = env.StopOnSignals({SIGINT, SIGTERM, SIGQUIT}); !st.ok()) {
        return Report(st);
      }
      std::signal(SIGHUP, SIG_IGN);
      return Report(mig::Run(options->manager, env));
    };
  });
  CLI::App* check = mig->add_subcommand("assert", "exit 0 when the node has the layout, else 1");
  AddConfigFlags(check, *options);
  check->callback([&global, &run, options] {
    run = [&global, options] { return RunAssert(global, *options); };
  });
}

}  // namespace gpunode::cli
