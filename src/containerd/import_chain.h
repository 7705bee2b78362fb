// The files containerd merges for one config, in its order: the file itself, then its `imports`
// breadth first (a pattern with '*' is globbed, sorted; a relative path is taken against the
// importing file's directory), each file once.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "containerd/containerd_config.h"
#include "toml++/toml.h"

namespace gpunode::containerd {

struct ImportedFile {
  std::string path;
  toml::table doc;  // left empty for the drop-in: gpunode is about to write it
};

struct ImportChain {
  std::vector<ImportedFile> files;        // files[0] is the main config
  size_t drop_in_index = 0;               // where the drop-in is merged
  bool drop_in_already_imported = false;  // an existing import (often a glob) covers it
};

// The chain with `drop_in` in it: where an existing import already reaches it, else appended to
// the main file's imports, as gpunode will write them. An import that cannot be read or parsed
// (containerd would not start) is an InvalidArgument naming it. An empty `drop_in` gives the chain
// as it is, with drop_in_index past its end. With a `root` other than "/", paths (main.path, the
// imports, the chain's paths) are host paths and files are read and globbed under `root`.
absl::StatusOr<ImportChain> ResolveImportChain(const ContainerdConfig& main,
                                               const std::string& drop_in,
                                               const std::string& root = "/");

// The main file's `imports` as strings; InvalidArgument if the key is not an array of strings.
absl::StatusOr<std::vector<std::string>> ImportsOf(const std::string& path, const toml::table& doc);

// `path` made absolute, normal and with symlinks resolved: the form gpunode compares, records
// and writes paths in.
std::string NormalPath(const std::string& path);

}  // namespace gpunode::containerd
