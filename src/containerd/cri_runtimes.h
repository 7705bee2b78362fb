// The runtime handlers of containerd's CRI plugin as containerd sees them after merging a config
// with its imports.
#pragma once

#include <optional>
#include <string>

#include "containerd/import_chain.h"
#include "toml++/toml.h"

namespace gpunode::containerd {

inline constexpr char kRuncV2RuntimeType[] = "io.containerd.runc.v2";

struct CriRuntimes {
  // The file that last set the CRI plugin's `containerd` table (the one that wins), or "".
  std::string source;
  std::string default_runtime = "runc";  // containerd's own default when unset
  toml::table runtimes;                  // name -> runtime table
};

// Merges the CRI plugin table of each file in `chain`, each file's own version deciding where its
// plugin lives. containerd before 2.1 replaces a plugin's table wholesale with a later file's
// (`deep_merge` false); 2.1 and later merge tables key by key.
CriRuntimes MergedCriRuntimes(const ImportChain& chain, bool deep_merge);

}  // namespace gpunode::containerd
