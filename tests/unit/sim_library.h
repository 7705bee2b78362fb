// Loads the GPU simulator as the NVML library, configured with one spec, for tests of the
// production NVML layer.
#pragma once

#include <dlfcn.h>

#include <memory>
#include <string>

#include "build_paths.h"
#include "gpunode_sim.h"
#include "gtest/gtest.h"
#include "nvml/library.h"

namespace gpunode::testing {

inline std::unique_ptr<nvml::Library> OpenSimulator(const std::string& spec,
                                                    const std::string& topology = "") {
  void* handle = dlopen(build_paths::kSimLibrary, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(handle, nullptr) << dlerror();
  if (handle == nullptr) return nullptr;
  auto configure =
      reinterpret_cast<decltype(&gpunodeSimConfigure)>(dlsym(handle, "gpunodeSimConfigure"));
  char error[1024] = {};
  EXPECT_EQ(configure(spec.c_str(), topology.c_str(), error, sizeof error), 0) << error;
  absl::StatusOr<std::unique_ptr<nvml::Library>> library =
      nvml::Library::Open({.library_path = build_paths::kSimLibrary});
  dlclose(handle);
  EXPECT_TRUE(library.ok()) << library.status();
  return library.ok() ? std::move(*library) : nullptr;
}

inline std::string Fixture(const std::string& relative) {
  return std::string(build_paths::kFixturesDir) + "/" + relative;
}

}  // namespace gpunode::testing
