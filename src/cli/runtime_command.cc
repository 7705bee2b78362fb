#include <chrono>
#include <iostream>
#include <memory>

#include "CLI/CLI.hpp"
#include "cli/command.h"
#include "cli/report_error.h"
#include "containerd/containerd_live.h"
#include "core/file_io.h"
#include "core/line_diff.h"
#include "runtime/configure.h"
#include "runtime/revert.h"

namespace gpunode::cli {
namespace {

struct StatusOptions {
  std::string socket = containerd::kDefaultContainerdSocket;
  std::string handler = "nvidia";
  std::string output = "table";
  int timeout_ms = 5000;
};

// A refusal leaves every file as it was and is the operator's to fix (a usage or input error);
// anything else, such as a write that failed half way, is a failure.
int Fail(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kPermissionDenied:
      return ReportError(AsInputError(status));
    default:
      return ReportError(status);
  }
}

// Which files configure writes and revert puts back: both commands take these.
void AddFileOptions(CLI::App* cmd, runtime::ConfigureOptions& options) {
  cmd->add_option("--runtime", options.runtime, "container runtime to configure (containerd only)")
      ->capture_default_str();
  cmd->add_option("--config", options.config_path, "containerd's main config file")
      ->capture_default_str();
  cmd->add_option("--drop-in", options.drop_in,
                  "drop-in file to write (default: conf.d/99-nvidia.toml beside --config)");
  cmd->add_flag("--in-place", options.in_place,
                "edit --config itself instead of writing a drop-in");
  cmd->add_flag("--dry-run", options.dry_run, "print what would be written; write nothing");
}

// What the handler configure writes is: configure's own.
void AddHandlerOptions(CLI::App* cmd, runtime::HandlerRequest& handler) {
  cmd->add_option("--binary", handler.binary, "nvidia-container-runtime to run")
      ->capture_default_str();
  cmd->add_flag("--set-as-default", handler.set_as_default,
                "make nvidia containerd's default runtime");
  cmd->add_flag("--cdi", handler.enable_cdi, "set enable_cdi = true in the CRI plugin");
}

int RunConfigure(const runtime::ConfigureOptions& options) {
  absl::StatusOr<runtime::ConfigureResult> result = runtime::Configure(options);
  if (!result.ok()) return Fail(result.status());
  for (const std::string& warning : result->warnings)
    std::cerr << "gpunode: warning: " << warning << "\n";
  bool any_change = false;
  for (const runtime::FileChange& file : result->files) {
    if (!file.changed) continue;
    any_change = true;
    if (options.dry_run && file.exists) {
      // The lines that would move, as `diff -u` shows them (and `patch` takes them).
      absl::StatusOr<std::string> now = core::ReadFile(file.path);
      std::cout << "==> " << file.path << " (would change) <==\n"
                << core::UnifiedDiff(now.ok() ? *now : "", file.content, file.path,
                                     file.path + " (as gpunode would write it)");
    } else if (options.dry_run) {
      std::cout << "==> " << file.path << " (would create) <==\n" << file.content;
      if (!file.content.empty() && file.content.back() != '\n') std::cout << "\n";
    } else {
      std::cout << (file.exists ? "updated " : "created ") << file.path << "\n";
    }
  }
  if (!any_change) {
    std::cout << "nothing to change: " << options.config_path << " already has the "
              << options.handler.name << " runtime as asked\n";
  } else if (result->wrote) {
    std::cout
        << "restart containerd to load the " << options.handler.name
        << " runtime (systemctl restart containerd); undo with gpunode runtime revert --config "
        << options.config_path << "\n";
  }
  return kExitOk;
}

int RunRevert(const runtime::ConfigureOptions& options) {
  absl::StatusOr<runtime::RevertResult> result = runtime::Revert(options);
  if (!result.ok()) return Fail(result.status());
  if (!result->had_record && !result->repair) {
    std::cout << "nothing to revert: no gpunode record " << result->ledger_path
              << " (never configured, or already reverted)\n";
    return kExitOk;
  }
  const char* prefix = options.dry_run ? "would " : "";
  for (const runtime::RevertAction& action : result->actions) {
    switch (action.kind) {
      case runtime::RevertAction::Kind::kRestore:
        std::cout << prefix << "restore " << action.path << " from " << action.backup << "\n";
        break;
      case runtime::RevertAction::Kind::kDelete:
        std::cout << prefix << "delete " << action.path << " (gpunode created it)\n";
        break;
      case runtime::RevertAction::Kind::kSetAside:
        std::cout << prefix << "move " << action.path << " to " << action.backup
                  << " (gpunode created it, it was edited since: the edits are kept there)\n";
        break;
      case runtime::RevertAction::Kind::kAlreadyOriginal:
        std::cout << action.path << " already holds its original bytes\n";
        break;
    }
  }
  if (const std::optional<runtime::ImportRepair>& repair = result->repair) {
    std::cout << prefix << "remove the import of " << repair->drop_in << " from "
              << repair->config_path
              << " (the file is gone and containerd would not start; the config as it was is "
              << (options.dry_run ? "kept" : "in") << " " << repair->backup << ")\n";
  }
  if (result->wrote) std::cout << "restart containerd to drop the runtime\n";
  return kExitOk;
}

int RunStatus(const StatusOptions& options) {
  absl::StatusOr<containerd::CriRuntimeStatus> status =
      containerd::QueryCriStatus(options.socket, std::chrono::milliseconds(options.timeout_ms));
  if (!status.ok()) return ReportError(status.status());
  const containerd::CriHandler* handler = containerd::FindHandler(*status, options.handler);
  if (options.output == "json") {
    nlohmann::json out = {{"socket", options.socket},
                          {"default_runtime", status->default_runtime},
                          {"conditions", nlohmann::json::array()},
                          {"handler",
                           {{"name", options.handler},
                            {"loaded", handler != nullptr},
                            {"runtime_type", handler ? handler->runtime_type : ""},
                            {"options", handler ? handler->options : nlohmann::json::object()},
                            {"default", status->default_runtime == options.handler}}}};
    for (const containerd::CriCondition& c : status->conditions) {
      out["conditions"].push_back(
          {{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message}});
    }
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << "containerd at unix://" << options.socket << "\n";
    for (const containerd::CriCondition& c : status->conditions) {
      std::cout << "  " << c.type << ": " << (c.status ? "true" : "false");
      if (!c.reason.empty()) std::cout << " (" << c.reason << ": " << c.message << ")";
      std::cout << "\n";
    }
    if (handler == nullptr) {
      std::cout << "handler " << options.handler
                << ": not loaded (default runtime: " << status->default_runtime << ")\n";
    } else {
      std::cout << "handler " << options.handler << ": loaded, runtime_type "
                << handler->runtime_type
                << (status->default_runtime == options.handler ? ", the default" : "")
                << "\n  options " << handler->options.dump() << "\n";
    }
  }
  return handler != nullptr ? kExitOk : kExitFailures;
}

}  // namespace

void AddRuntimeCommand(CLI::App& app, const GlobalOptions& /*global*/, CommandRunner& run) {
  CLI::App* runtime_cmd =
      app.add_subcommand("runtime", "configure containerd's nvidia runtime handler and check it");
  runtime_cmd->require_subcommand(1);

  auto configure = std::make_shared<runtime::ConfigureOptions>();
  CLI::App* configure_cmd = runtime_cmd->add_subcommand(
      "configure", "add the nvidia runtime handler to containerd's config (backed up; see revert)");
  AddFileOptions(configure_cmd, *configure);
  AddHandlerOptions(configure_cmd, configure->handler);
  configure_cmd->callback(
      [&run, configure] { run = [configure] { return RunConfigure(*configure); }; });

  auto revert = std::make_shared<runtime::ConfigureOptions>();
  CLI::App* revert_cmd = runtime_cmd->add_subcommand(
      "revert", "put back the original bytes of every file configure touched");
  AddFileOptions(revert_cmd, *revert);
  revert_cmd->callback([&run, revert] { run = [revert] { return RunRevert(*revert); }; });

  auto status = std::make_shared<StatusOptions>();
  CLI::App* status_cmd = runtime_cmd->add_subcommand(
      "status", "ask the running containerd over CRI whether a handler is loaded (exit 1 if not)");
  status_cmd->add_option("--socket", status->socket, "containerd's CRI socket")
      ->capture_default_str();
  status_cmd->add_option("--handler", status->handler, "runtime handler to look for")
      ->capture_default_str();
  status_cmd->add_option("-o,--output", status->output, "table or json")
      ->check(CLI::IsMember({"table", "json"}))
      ->capture_default_str();
  status_cmd->add_option("--timeout-ms", status->timeout_ms, "how long to wait for an answer")
      ->check(CLI::Range(1, 600000))
      ->capture_default_str();
  status_cmd->callback([&run, status] { run = [status] { return RunStatus(*status); }; });
}

}  // namespace gpunode::cli
