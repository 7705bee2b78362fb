// `gpunode cdi generate`: a CDI spec for this node's GPUs and the driver installed under
// --driver-root, as `nvidia-ctk cdi generate` writes it. `gpunode cdi validate FILE`: checks a
// spec against the CDI schema's rules.
#include <iostream>
#include <memory>
#include <optional>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "cdi/spec_file.h"
#include "cdi/validate.h"
#include "cli/command.h"
#include "cli/nvml_session.h"
#include "core/file_io.h"
#include "core/host_root.h"
#include "core/log.h"
#include "nvml/system.h"
#include "plugin/cdi/cdi_spec.h"
#include "plugin/rm/node.h"
#include "spdlog/spdlog.h"

namespace gpunode::cli {
namespace {

struct CdiGenerateOptions {
  std::string output = "-";
  std::string format;  // empty: from the output's name, else yaml
  std::string kind = "nvidia.com/gpu";
  std::string dev_root;  // empty: the driver root
  std::string hook_path = "/usr/bin/nvidia-cdi-hook";
};

// --kind goes into the spec as it is: the schema's rules for a kind, checked on a spec that holds
// only it, say whether it is one before NVML is opened.
absl::Status CheckKind(const std::string& kind) {
  cdi::Spec minimal = {{"cdiVersion", "0.6.0"},
                       {"kind", kind},
                       {"devices", {{{"name", "0"}, {"containerEdits", {{"env", {"A=1"}}}}}}}};
  for (const cdi::SpecProblem& problem : cdi::ValidateSpec(minimal)) {
    if (problem.json_path != "$.kind") continue;
    return absl::InvalidArgumentError(absl::StrCat("--kind ", kind, ": ", problem.message));
  }
  return absl::OkStatus();
}

int RunCdiGenerate(const GlobalOptions& global, const CdiGenerateOptions& options) {
  if (absl::Status st = CheckKind(options.kind); !st.ok()) return ReportError(st);
  cdi::SpecFormat format = cdi::SpecFormat::kYaml;
  if (!options.format.empty()) {
    absl::StatusOr<cdi::SpecFormat> parsed = cdi::ParseSpecFormat(options.format);
    if (!parsed.ok() && options.format.find_first_of("/.") != std::string::npos) {
      // -o was the spec file before it became the format, as everywhere else.
      return ReportError(absl::InvalidArgumentError(absl::StrCat(
          "-o/--format \"", options.format,
          "\" is a file name, not a format (yaml or json); write the spec with --output ",
          options.format)));
    }
    if (!parsed.ok()) return ReportError(parsed.status());
    format = *parsed;
  } else if (std::optional<cdi::SpecFormat> named = cdi::FormatOfFileName(options.output)) {
    format = *named;
  }
  absl::StatusOr<std::unique_ptr<nvml::Library>> library = OpenNvml(global);
  if (!library.ok()) return ReportError(library.status());
  absl::StatusOr<std::string> version = nvml::DriverVersion(**library);
  if (!version.ok()) return ReportError(version.status());
  core::HostRoot host(global.host_root);
  absl::StatusOr<plugin::Node> node = plugin::ReadNode(**library, host);
  if (!node.ok()) return ReportError(node.status());
  plugin::CdiOptions cdi{
      .kind = options.kind,
      .driver_root = global.driver_root,
      .dev_root = options.dev_root.empty() ? global.driver_root : options.dev_root,
      .hook_path = options.hook_path};
  absl::StatusOr<plugin::NodeCdiSpec> spec = plugin::BuildNodeCdiSpec(*node, *version, host, cdi);
  if (!spec.ok()) return ReportError(spec.status());
  // What a container would lack is for the operator to act on; what the driver lacks is routine.
  for (const std::string& warning : spec->warnings) spdlog::warn("{}", warning);
  for (const std::string& missing : spec->left_out) spdlog::info("not in the spec: {}", missing);
  if (options.output == "-") {
    std::cout << cdi::RenderSpec(spec->spec, format);
    return kExitOk;
  }
  if (absl::Status st = cdi::WriteSpecFile(options.output, spec->spec, format); !st.ok()) {
    // The path is the user's: one that cannot be written is an input error, as in labels, and
    // the message names it even when what failed was a directory above it.
    if (st.message().find(options.output) == absl::string_view::npos) {
      st = absl::Status(st.code(), absl::StrCat("--output ", options.output, ": ", st.message()));
    }
    return ReportError(AsInputError(st));
  }
  return kExitOk;
}

int RunCdiValidate(const std::string& path) {
  absl::StatusOr<std::string> text = core::ReadFile(path);
  if (!text.ok()) return ReportError(AsInputError(text.status()));
  absl::StatusOr<cdi::Spec> spec = cdi::ParseSpecText(*text, path);
  if (!spec.ok()) return ReportError(AsInputError(spec.status()));
  std::vector<cdi::SpecProblem> problems = cdi::ValidateSpec(*spec);
  if (problems.empty()) problems = cdi::UnusableDevices(*spec);
  for (const cdi::SpecProblem& problem : problems) {
    std::cerr << path << ": " << problem.json_path << ": " << problem.message << "\n";
  }
  if (!problems.empty()) return kExitFailures;
  std::cout << path << ": a valid CDI " << (*spec)["cdiVersion"].get<std::string>() << " spec of "
            << (*spec)["kind"].get<std::string>() << " with " << (*spec)["devices"].size()
            << " devices\n";
  return kExitOk;
}

}  // namespace

void AddCdiCommand(CLI::App& app, const GlobalOptions& global, CommandRunner& run) {
  CLI::App* cdi = app.add_subcommand("cdi", "Container Device Interface specs for this node");
  cdi->require_subcommand(1);
  auto options = std::make_shared<CdiGenerateOptions>();
  CLI::App* generate = cdi->add_subcommand(
      "generate",
      "write a CDI spec: a device per GPU index, UUID, MIG device and \"all\", with the driver's "
      "libraries, binaries, firmware, IPC sockets, control devices and hooks");
  generate
      ->add_option("--output", options->output,
                   "file to write (its directory is created), - for stdout")
      ->capture_default_str();
  generate->add_option("-o,--format", options->format,
                       "yaml or json (default: from the output's .yaml/.json name, else yaml)");
  generate->add_option("--kind", options->kind, "the spec's vendor/class")->capture_default_str();
  generate->add_option("--dev-root", options->dev_root,
                       "prefix of the device nodes' host paths (default: the driver root)");
  generate
      ->add_option("--hook-path", options->hook_path,
                   "nvidia-cdi-hook (or nvidia-ctk) on the host; the hooks are left out "
                   "when it is not there")
      ->capture_default_str();
  generate->callback([&global, &run, options] {
    run = [&global, options] { return RunCdiGenerate(global, *options); };
  });

  auto file = std::make_shared<std::string>();
  CLI::App* validate = cdi->add_subcommand(
      "validate", "check a CDI spec (YAML or JSON) against the CDI schema; one line per problem");
  validate->add_option("FILE", *file, "the spec")->required();
  validate->callback([&run, file] { run = [file] { return RunCdiValidate(*file); }; });
}

}  // namespace gpunode::cli
