// What every subcommand shares: the global flags and the way a command hands back its exit code.
#pragma once

#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace gpunode::cli {

// Exit codes of every command (a contract other tools rely on).
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailures = 1;  // the command ran and found failures
inline constexpr int kExitUsage = 2;     // usage or input error

struct GlobalOptions {
  std::string sim;           // --sim SPEC or GPUNODE_SIM
  std::string sim_topology;  // --sim-topology FILE or GPUNODE_SIM_TOPOLOGY
  std::string driver_root = "/";
  std::string nvml_library;
  std::string host_root = "/";
  std::string log_level;  // "": info for the daemons, warn for the rest (main.cc)
};

// A parsed subcommand stores what to run here; main runs it after parsing succeeds.
using CommandRunner = std::function<int()>;

// One registration function per subcommand file.
void AddInventoryCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddDevicePluginCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddDraPluginCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddCdiCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddExporterCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddLabelsCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddClusterCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddWebhookCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddRuntimeCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddDoctorCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddMigCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddMpsControlDaemonCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run);
void AddVersionCommand(CLI::App& app, CommandRunner& run);

// `gpunode version` and `gpunode --version`; `format` is table or json.
int PrintVersion(const std::string& format);

}  // namespace gpunode::cli
