// The MIG profile tables of the GPUs the simulator can partition: what `nvidia-smi mig -lgip`,
// `-lgipp` and `-lcip` list on each product, and the id a GPU instance gets from its placement.
// Sources: sim/SOURCES.md (NVIDIA's MIG user guide, "Supported MIG Profiles").
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpunode::sim {

// One GPU instance profile: a row of `nvidia-smi mig -lgip` with its placements (`-lgipp`).
struct GpuInstanceProfile {
  unsigned index;  // NVML_GPU_INSTANCE_PROFILE_*: what nvmlDeviceGetGpuInstanceProfileInfo takes
  unsigned id;     // the profile id the driver reports and creation takes
  std::string_view name;  // "1g.10gb", "1g.10gb+me"
  unsigned compute_slices;
  unsigned instances;  // how many fit on an empty GPU
  unsigned memory_mib;
  unsigned multiprocessors;
  unsigned copy_engines;
  unsigned decoders;
  unsigned encoders;
  unsigned jpegs;
  unsigned ofas;
  unsigned placement_size;  // memory slices taken
  std::span<const unsigned> placement_starts;
};

struct MigProductTable {
  std::string_view product;  // "A100-SXM4-80GB"
  unsigned memory_slices;    // 8 (4 on A30)
  unsigned compute_slices;   // 7 (4 on A30)
  std::span<const GpuInstanceProfile> profiles;
};

// The table for the GPU called `gpu_name` with `total_mib` of memory; nullptr when the simulator
// has none (the GPU then cannot be partitioned: GPU instance calls are NOT_SUPPORTED).
const MigProductTable* mig_table_for(std::string_view gpu_name, uint64_t total_mib);

const GpuInstanceProfile* find_profile_by_index(const MigProductTable& table, unsigned index);
const GpuInstanceProfile* find_profile_by_id(const MigProductTable& table, unsigned id);
const GpuInstanceProfile* find_profile_by_name(const MigProductTable& table, std::string_view name);

// The GPU instance id the driver gives the instance at (start, size): the position of that
// memory range in a binary tree over the memory slices (whole GPU 0; halves 1-2; quarters 3-6;
// eighths 7-14 on an 8-slice GPU).
unsigned gpu_instance_id_for(const MigProductTable& table, unsigned start, unsigned size);

// Compute instance profiles within a GPU instance of `gi_slices`: NVML_COMPUTE_INSTANCE_PROFILE_*
// index (which is also the profile id) and slice count.
struct ComputeInstanceProfile {
  unsigned index;
  unsigned slices;
};
std::vector<ComputeInstanceProfile> compute_profiles_for(unsigned gi_slices);
std::optional<unsigned> compute_profile_slices(unsigned index);

}  // namespace gpunode::sim
