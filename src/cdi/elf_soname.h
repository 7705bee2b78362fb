// The SONAME of a shared library (its ELF DT_SONAME), read the way nvidia-container-toolkit reads
// it to decide which links a container needs (internal/discover/symlinks.go, getSoname: Go's
// debug/elf DynString, which finds the dynamic section by the section headers and its strings in
// the section it links to). Only the headers and those two sections are read, never the whole
// library (libcuda is tens of megabytes).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/host_root.h"

namespace gpunode::cdi {

// The library's SONAME; its file name when it has none (as the toolkit takes it). Fails when the
// file is not a 64-bit little-endian ELF file (the only libraries a spec mounts), is cut short,
// names more than one SONAME, or names one that is no file name (empty, "." or "..", or with a
// '/': the hook would make a link elsewhere than beside the library).
absl::StatusOr<std::string> ReadSoname(const core::HostRoot& root, const std::string& path);

}  // namespace gpunode::cdi
