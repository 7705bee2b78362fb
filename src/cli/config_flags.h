// The flags of NVIDIA's device plugin that set its config (plugin_config::ConfigLayer), from one
// table: each command registers the ones it takes, and reads them back as the flag layer of the
// config's precedence (plugin_config/sources.h).
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "plugin_config/layer.h"

namespace CLI {
class App;
}

namespace gpunode::cli {

class ConfigFlags {
 public:
  ConfigFlags();

  // Registers the flags named by their first name (--mig-strategy), in the order given: --help
  // lists them so.
  void Add(CLI::App& cmd, std::initializer_list<const char*> flags);
  // One flag, with the command's own words for it.
  void Add(CLI::App& cmd, const char* flag, const char* help);

  // What the given flags set; an error names the first flag that is wrong, in the table's order.
  absl::StatusOr<plugin_config::ConfigLayer> Layer() const;

 private:
  // What one flag of the table was given: its text, or its values when it takes a list.
  struct Given {
    std::optional<std::string> text;
    std::vector<std::string> list;
  };
  std::vector<Given> given_;  // by the table's rows
};

}  // namespace gpunode::cli
