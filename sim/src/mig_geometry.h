// MIG profile arithmetic: naming an instance from its attributes the way NVIDIA's go-nvlib does,
// the attributes of well-known instance profiles, and slice counts for captures that omit them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpunode::sim {

// "<gi>g.<GB>gb", prefixed "<ci>c." when the compute instance is smaller than the GPU instance,
// where GB = round(ceil(memory / parent_total * 8) / 8 * ceil(parent_total / GiB)). Consumers
// (gpunode, the device plugin, GFD) name MIG devices with this rule, so the simulator checks that
// what it reports reproduces the name it was given.
std::string mig_profile_name(unsigned gi_slices, unsigned ci_slices, uint64_t memory_bytes,
                             uint64_t parent_total_bytes);

struct MigSlices {
  unsigned gpu_instance = 0;
  unsigned compute_instance = 0;
};
// The slice counts a profile name states: "3g.40gb" -> {3, 3}, "1c.3g.40gb" -> {3, 1}.
std::optional<MigSlices> parse_mig_profile_name(std::string_view name);

// What `nvidia-smi mig -lgip` lists for one GPU instance profile of a GPU model.
struct MigProfileAttributes {
  unsigned memory_mib = 0;
  unsigned multiprocessors = 0;  // of the whole GPU instance
  unsigned copy_engines = 0;
  unsigned decoders = 0;
  unsigned encoders = 0;
  unsigned jpegs = 0;
  unsigned ofas = 0;
};
// Attributes of `profile` ("2g.20gb", or a compute-instance form such as "1c.3g.40gb", which
// gets the CI's share of SMs and the GI's shared engines) on the GPU called `gpu_name`; nullopt
// when the simulator has no table for that GPU or profile.
std::optional<MigProfileAttributes> known_mig_profile(std::string_view gpu_name,
                                                      std::string_view profile);

// Slots nvmlDeviceGetMaxMigDeviceCount reports for a MIG-capable GPU: 4 on A30, else 7.
unsigned max_mig_devices_for(std::string_view gpu_name);

// GPU instance slices of a captured instance. Captures give the SMs of each compute instance and
// the instance memory, not slices: slices = floor(SMs of the GI's compute instances / SMs per
// slice), at least what the memory share implies (4/8 of memory: 3 slices, 8/8: 7), at most
// `max_slices`. Without SMs per slice, the memory share alone decides.
unsigned derive_gpu_instance_slices(unsigned gi_multiprocessors, uint64_t memory_bytes,
                                    uint64_t parent_total_bytes,
                                    std::optional<unsigned> sms_per_slice, unsigned max_slices);

// Compute instance slices: floor(CI SMs / SMs per slice), between 1 and the GI's slices.
unsigned derive_compute_instance_slices(unsigned ci_multiprocessors,
                                        std::optional<unsigned> sms_per_slice, unsigned gi_slices);

}  // namespace gpunode::sim
