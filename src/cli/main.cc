// gpunode: one binary, one role per subcommand.
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/command.h"
#include "cli/parse_error.h"
#include "cli/report_error.h"
#include "core/log.h"
#include "core/printable.h"

namespace gpunode::cli {
namespace {

// A path given to a global option that is not there is a usage error before any command runs,
// rather than a command that inspects an empty tree and reports what it did not find.
absl::Status CheckGlobalPaths(const GlobalOptions& global) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& [flag, dir] :
       {std::pair<const char*, const std::string&>{"--host-root", global.host_root},
        {"--driver-root", global.driver_root}}) {
    if (!fs::is_directory(dir, ec)) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, " ", dir, ": ", fs::exists(dir, ec) ? "not a directory" : "no such directory",
          "; give the directory the host (or the driver) is mounted at"));
    }
  }
  if (!global.nvml_library.empty() && !fs::is_regular_file(global.nvml_library, ec)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nvml-library ", global.nvml_library, ": ",
                     fs::exists(global.nvml_library, ec) ? "not a file" : "no such file",
                     "; give the path of libnvidia-ml.so.1, or --driver-root to look it up below"));
  }
  return absl::OkStatus();
}

// The command that was parsed, when it is one that never loads NVML ("gpunode cluster audit"),
// or "".
std::string CommandWithoutNvml(const CLI::App& app) {
  std::string path = ParsedCommandPath(app);
  for (const char* command : {"cluster", "webhook", "runtime", "version", "cdi validate"}) {
    std::string prefix = absl::StrCat(app.get_name(), " ", command);
    if (path == prefix || absl::StartsWith(path, prefix + " ")) return prefix;
  }
  return "";
}

// The level when --log-level is not given: info for the daemons, whose registration, address,
// reloads and recoveries an operator reads in `kubectl logs`; warn for the commands that print an
// answer (a daemon's one-shot modes among them), whose stderr is for problems.
std::string DefaultLogLevel(const CLI::App& app) {
  const CLI::App* leaf = &app;
  while (!leaf->get_subcommands().empty()) leaf = leaf->get_subcommands().front();
  for (const char* one_shot : {"--check-config", "--once"}) {
    const CLI::Option* option = leaf->get_option_no_throw(one_shot);
    if (option != nullptr && option->count() > 0) return "warn";
  }
  std::string path = ParsedCommandPath(app);
  for (const char* daemon : {"device-plugin", "dra-plugin", "exporter", "webhook",
                             "mps-control-daemon", "mps-control-daemon claim", "mig manager"}) {
    if (path == absl::StrCat(app.get_name(), " ", daemon)) return "info";
  }
  return "warn";
}

void AddVersion(CLI::App& app, const GlobalOptions& /*global*/, CommandRunner& run) {
  AddVersionCommand(app, run);
}

// Every command by the name that selects it, in the order `--help` lists them.
struct Command {
  const char* name;
  void (*add)(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
};
constexpr Command kCommands[] = {
    {"inventory", AddInventoryCommand},
    {"device-plugin", AddDevicePluginCommand},
    {"dra-plugin", AddDraPluginCommand},
    {"cdi", AddCdiCommand},
    {"exporter", AddExporterCommand},
    {"labels", AddLabelsCommand},
    {"cluster", AddClusterCommand},
    {"webhook", AddWebhookCommand},
    {"runtime", AddRuntimeCommand},
    {"doctor", AddDoctorCommand},
    {"mig", AddMigCommand},
    {"mps-control-daemon", AddMpsControlDaemonCommand},
    {"version", AddVersion},
};

// The first argument that is a command's name, if any. A global option's value that happens to
// be one (`--sim labels`) picks that command wrongly; its parse then fails, as below.
const Command* NamedCommand(const std::vector<std::string>& args) {
  for (const std::string& arg : args) {
    for (const Command& command : kCommands) {
      if (arg == command.name) return &command;
    }
  }
  return nullptr;
}

GlobalOptions GlobalsFromEnvironment() {
  GlobalOptions global;
  if (const char* env = std::getenv("GPUNODE_SIM")) global.sim = env;
  if (const char* env = std::getenv("GPUNODE_SIM_TOPOLOGY")) global.sim_topology = env;
  return global;
}

// The command line's tree: the global options and `only`'s command, or every command.
std::unique_ptr<CLI::App> MakeApp(GlobalOptions& global, CommandRunner& run, const Command* only) {
  auto app = std::make_unique<CLI::App>(
      "gpunode: take an NVIDIA GPU node from \"driver installed\" to schedulable, "
      "shared, observed and maintainable capacity",
      "gpunode");
  app->require_subcommand(1);
  app->fallthrough();
  app->add_option(
      "--sim", global.sim,
      "run against the GPU simulator: a built-in profile name, a profile YAML file or an "
      "`nvidia-smi -q -x` capture (env GPUNODE_SIM)");
  app->add_option("--sim-topology", global.sim_topology,
                  "an `nvidia-smi topo -m` capture to use as the simulated link matrix "
                  "(env GPUNODE_SIM_TOPOLOGY)");
  app->add_option("--driver-root", global.driver_root,
                  "where the NVIDIA driver is installed; libnvidia-ml.so.1 is looked up under it")
      ->capture_default_str();
  app->add_option("--nvml-library", global.nvml_library, "explicit path of libnvidia-ml.so.1");
  app->add_option("--host-root", global.host_root,
                  "root of the host filesystem to inspect (/proc, /sys, /dev, /etc, /run, /var)")
      ->capture_default_str();
  app->add_option(
      "--log-level", global.log_level,
      "trace, debug, info, warn, error or off (default: info for the daemons "
      "device-plugin, dra-plugin, exporter, webhook, mps-control-daemon (claim too) and mig "
      "manager; warn for the rest)");
  // Taken before parsing (AsksForVersion); here so that help lists it.
  app->add_flag("--version")->description("print the version, as `gpunode version` does");
  for (const Command& command : kCommands) {
    if (only == nullptr || only == &command) command.add(*app, global, run);
  }
  return app;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  // Answered before parsing, which requires a command.
  if (AsksForVersion(args)) return PrintVersion("table");

  GlobalOptions global = GlobalsFromEnvironment();
  CommandRunner run;
  std::unique_ptr<CLI::App> app;
  // Building every command's flags is most of what a start costs before the command runs
  // (docs/PERFORMANCE.md), so a command line that names a command is parsed with that command
  // alone. Whatever does not parse so (help, a mistake, a value mistaken for a command) is parsed
  // again with every command, so help and errors are the whole tree's.
  if (const Command* named = NamedCommand(args)) {
    app = MakeApp(global, run, named);
    try {
      app->parse(argc, argv);
    } catch (const CLI::Error&) {
      app.reset();
      global = GlobalsFromEnvironment();
      run = nullptr;
    }
  }
  if (app == nullptr) {
    app = MakeApp(global, run, nullptr);
    try {
      app->parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
      return app->exit(e);
    } catch (const CLI::CallForAllHelp& e) {
      return app->exit(e);
    } catch (const CLI::ParseError& e) {
      return ReportError(absl::InvalidArgumentError(DescribeParseError(*app, e, args)));
    }
  }
  if (global.log_level.empty()) global.log_level = DefaultLogLevel(*app);
  if (absl::Status st = core::InitLogging(global.log_level); !st.ok()) {
    return ReportError(AsInputError(st));
  }
  if (absl::Status st = CheckGlobalPaths(global); !st.ok()) return ReportError(st);
  if (app->count("--sim") + app->count("--sim-topology") > 0) {
    if (std::string command = CommandWithoutNvml(*app); !command.empty()) {
      return ReportError(absl::InvalidArgumentError(
          absl::StrCat("--sim: ", command,
                       " does not read the GPUs, so the simulator would change nothing; "
                       "leave --sim and --sim-topology out")));
    }
  }
  if (!run) return kExitUsage;
  // An exception that escaped a command is a defect, and the user still gets the one line and
  // exit 1 that every failure gets, not std::terminate's abort (exit 134).
  try {
    return run();
  } catch (const std::exception& e) {
    return ReportError(
        absl::InternalError(absl::StrCat("internal error: ", core::Printable(e.what()),
                                         "; please report it with the command that was run")));
  } catch (...) {
    return ReportError(absl::InternalError(
        "internal error: an unknown exception; please report it with the command that was run"));
  }
}

}  // namespace
}  // namespace gpunode::cli

int main(int argc, char** argv) { return gpunode::cli::Main(argc, argv); }
