// The simulator as production code sees it: libgpunode-sim.so opened with dlopen and every NVML
// entry point of src/nvml/entry_points.h resolved with dlsym, plus helpers the tests share.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpunode_sim.h"
#include "nvml/abi.h"
#include "nvml/entry_points.h"

namespace gpunode::sim::testing {

struct Nvml {
#define GPUNODE_SIM_TEST_MEMBER(member, preferred, ...) decltype(&::preferred) member = nullptr;
  GPUNODE_NVML_ENTRY_POINTS(GPUNODE_SIM_TEST_MEMBER)
#undef GPUNODE_SIM_TEST_MEMBER
  decltype(&::gpunodeSimConfigure) configure = nullptr;
  decltype(&::gpunodeSimBuiltinProfiles) builtin_profiles = nullptr;
  void* handle = nullptr;
};

// Loads the library once per process (it is one simulated node per process, like the driver).
Nvml& nvml();

// Every symbol name of entry_points.h, preferred and fallback alike.
std::vector<std::string> entry_point_names();

// gpunodeSimConfigure; "" on success, else the one-line error.
std::string configure(const std::string& spec, const std::string& topology = "");

// A test that configures the simulator and leaves NVML shut down behind it.
class SimTest : public ::testing::Test {
 protected:
  void TearDown() override;
  // Configures `spec` (must succeed) and calls nvmlInit.
  void start(const std::string& spec, const std::string& topology = "");
  nvmlDevice_t gpu(unsigned index);
  Nvml& api() { return nvml(); }
};

std::string name_of(nvmlDevice_t device);
std::string uuid_of(nvmlDevice_t device);
std::string bus_id_of(nvmlDevice_t device);

// The `nvidia-smi topo -m` label of a GPU pair as gpunode's production code computes it from
// NVML: NV# from NVLinks (direct, plus through NVSwitches both GPUs reach), else the PCIe level of
// nvmlDeviceGetTopologyCommonAncestor.
std::string topology_label(const std::vector<nvmlDevice_t>& gpus, size_t a, size_t b);
// The whole matrix, one row per GPU, cells separated by single spaces.
std::vector<std::string> topology_matrix();

// go-nvlib's MIG profile name for a MIG device handle.
std::string mig_profile_name(nvmlDevice_t mig, nvmlDevice_t parent);

// A file under the test's temporary directory holding `text`; returns its path.
std::string write_file(const std::string& name, const std::string& text);
// A fixture capture from tests/fixtures/nvidia-smi-xml (a test failure when it is missing).
std::string fixture(const std::string& name);

}  // namespace gpunode::sim::testing
