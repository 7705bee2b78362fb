#include "mig_profile_table.h"

#include <array>

#include "nvml/abi.h"

namespace gpunode::sim {
namespace {

// Placement starts, in memory slices, as `nvidia-smi mig -lgipp` lists them.
constexpr std::array<unsigned, 7> kEighthStarts = {0, 1, 2, 3, 4, 5, 6};
constexpr std::array<unsigned, 4> kQuarterStarts = {0, 2, 4, 6};
constexpr std::array<unsigned, 3> kTwoSliceStarts = {0, 2, 4};
constexpr std::array<unsigned, 2> kHalfStarts = {0, 4};
constexpr std::array<unsigned, 1> kWholeStart = {0};
constexpr std::array<unsigned, 4> kA30OneSliceStarts = {0, 1, 2, 3};
constexpr std::array<unsigned, 2> kA30TwoSliceStarts = {0, 2};

constexpr unsigned k1 = NVML_GPU_INSTANCE_PROFILE_1_SLICE;
constexpr unsigned k2 = NVML_GPU_INSTANCE_PROFILE_2_SLICE;
constexpr unsigned k3 = NVML_GPU_INSTANCE_PROFILE_3_SLICE;
constexpr unsigned k4 = NVML_GPU_INSTANCE_PROFILE_4_SLICE;
constexpr unsigned k7 = NVML_GPU_INSTANCE_PROFILE_7_SLICE;
constexpr unsigned k1Me = NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1;
constexpr unsigned k1Double = NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2;
constexpr unsigned k2Me = NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1;

// Columns: index, id, name, compute slices, instances, memory MiB, SMs, CE, NVDEC, NVENC, JPEG,
// OFA, placement size, placement starts.

// Ampere GA100: A100 40GB and 80GB differ only in memory.
constexpr std::array<GpuInstanceProfile, 7> kA100_40GB = {{
    {k1, 19, "1g.5gb", 1, 7, 4864, 14, 1, 0, 0, 0, 0, 1, kEighthStarts},
    {k1Me, 20, "1g.5gb+me", 1, 1, 4864, 14, 1, 1, 0, 1, 1, 1, kEighthStarts},
    {k1Double, 15, "1g.10gb", 1, 4, 9856, 14, 1, 1, 0, 0, 0, 2, kQuarterStarts},
    {k2, 14, "2g.10gb", 2, 3, 9856, 28, 2, 1, 0, 0, 0, 2, kTwoSliceStarts},
    {k3, 9, "3g.20gb", 3, 2, 19968, 42, 3, 2, 0, 0, 0, 4, kHalfStarts},
    {k4, 5, "4g.20gb", 4, 1, 19968, 56, 4, 2, 0, 0, 0, 4, kWholeStart},
    {k7, 0, "7g.40gb", 7, 1, 40192, 98, 7, 5, 0, 1, 1, 8, kWholeStart},
}};

constexpr std::array<GpuInstanceProfile, 7> kA100_80GB = {{
    {k1, 19, "1g.10gb", 1, 7, 9728, 14, 1, 0, 0, 0, 0, 1, kEighthStarts},
    {k1Me, 20, "1g.10gb+me", 1, 1, 9728, 14, 1, 1, 0, 1, 1, 1, kEighthStarts},
    {k1Double, 15, "1g.20gb", 1, 4, 19968, 14, 1, 1, 0, 0, 0, 2, kQuarterStarts},
    {k2, 14, "2g.20gb", 2, 3, 19968, 28, 2, 1, 0, 0, 0, 2, kTwoSliceStarts},
    {k3, 9, "3g.40gb", 3, 2, 40192, 42, 3, 2, 0, 0, 0, 4, kHalfStarts},
    {k4, 5, "4g.40gb", 4, 1, 40192, 56, 4, 2, 0, 0, 0, 4, kWholeStart},
    {k7, 0, "7g.80gb", 7, 1, 80896, 98, 7, 5, 0, 1, 1, 8, kWholeStart},
}};

// A30: four memory slices, four compute slices; media extensions on 1g and 2g.
constexpr std::array<GpuInstanceProfile, 5> kA30_24GB = {{
    {k1, 14, "1g.6gb", 1, 4, 5952, 14, 1, 1, 0, 0, 0, 1, kA30OneSliceStarts},
    {k1Me, 21, "1g.6gb+me", 1, 1, 5952, 14, 1, 1, 0, 1, 1, 1, kA30OneSliceStarts},
    {k2, 5, "2g.12gb", 2, 2, 11968, 28, 2, 2, 0, 0, 0, 2, kA30TwoSliceStarts},
    {k2Me, 6, "2g.12gb+me", 2, 1, 11968, 28, 2, 2, 0, 1, 1, 2, kA30TwoSliceStarts},
    {k4, 0, "4g.24gb", 4, 1, 24000, 56, 4, 4, 0, 1, 1, 4, kWholeStart},
}};

// Hopper GH100: every instance has NVDECs and JPEG decoders; OFA only on +me and 7g.
constexpr std::array<GpuInstanceProfile, 7> kH100_80GB = {{
    {k1, 19, "1g.10gb", 1, 7, 9984, 16, 1, 1, 0, 1, 0, 1, kEighthStarts},
    {k1Me, 20, "1g.10gb+me", 1, 1, 9984, 16, 1, 1, 0, 1, 1, 1, kEighthStarts},
    {k1Double, 15, "1g.20gb", 1, 4, 20096, 26, 1, 1, 0, 1, 0, 2, kQuarterStarts},
    {k2, 14, "2g.20gb", 2, 3, 20096, 32, 2, 2, 0, 2, 0, 2, kTwoSliceStarts},
    {k3, 9, "3g.40gb", 3, 2, 40448, 60, 3, 3, 0, 3, 0, 4, kHalfStarts},
    {k4, 5, "4g.40gb", 4, 1, 40448, 64, 4, 4, 0, 4, 0, 4, kWholeStart},
    {k7, 0, "7g.80gb", 7, 1, 81152, 132, 8, 7, 0, 7, 1, 8, kWholeStart},
}};

constexpr std::array<GpuInstanceProfile, 7> kH100_94GB = {{
    {k1, 19, "1g.12gb", 1, 7, 11008, 16, 1, 1, 0, 1, 0, 1, kEighthStarts},
    {k1Me, 20, "1g.12gb+me", 1, 1, 11008, 16, 1, 1, 0, 1, 1, 1, kEighthStarts},
    {k1Double, 15, "1g.24gb", 1, 4, 22144, 26, 1, 1, 0, 1, 0, 2, kQuarterStarts},
    {k2, 14, "2g.24gb", 2, 3, 22144, 32, 2, 2, 0, 2, 0, 2, kTwoSliceStarts},
    {k3, 9, "3g.47gb", 3, 2, 47488, 60, 3, 3, 0, 3, 0, 4, kHalfStarts},
    {k4, 5, "4g.47gb", 4, 1, 47488, 64, 4, 4, 0, 4, 0, 4, kWholeStart},
    {k7, 0, "7g.94gb", 7, 1, 95360, 132, 8, 7, 0, 7, 1, 8, kWholeStart},
}};

constexpr std::array<GpuInstanceProfile, 7> kH200_141GB = {{
    {k1, 19, "1g.18gb", 1, 7, 16384, 16, 1, 1, 0, 1, 0, 1, kEighthStarts},
    {k1Me, 20, "1g.18gb+me", 1, 1, 16384, 16, 1, 1, 0, 1, 1, 1, kEighthStarts},
    {k1Double, 15, "1g.35gb", 1, 4, 33024, 26, 1, 1, 0, 1, 0, 2, kQuarterStarts},
    {k2, 14, "2g.35gb", 2, 3, 33024, 32, 2, 2, 0, 2, 0, 2, kTwoSliceStarts},
    {k3, 9, "3g.71gb", 3, 2, 71168, 60, 3, 3, 0, 3, 0, 4, kHalfStarts},
    {k4, 5, "4g.71gb", 4, 1, 71168, 64, 4, 4, 0, 4, 0, 4, kWholeStart},
    {k7, 0, "7g.141gb", 7, 1, 143104, 132, 8, 7, 0, 7, 1, 8, kWholeStart},
}};

constexpr MigProductTable kTables[] = {
    {"A100-40GB", 8, 7, kA100_40GB}, {"A100-80GB", 8, 7, kA100_80GB},
    {"A30-24GB", 4, 4, kA30_24GB},   {"H100-80GB", 8, 7, kH100_80GB},
    {"H100-94GB", 8, 7, kH100_94GB}, {"H200-141GB", 8, 7, kH200_141GB},
};

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

}  // namespace

const MigProductTable* mig_table_for(std::string_view gpu_name, uint64_t total_mib) {
  // Products are told apart by name and, where one name has two memory sizes, by memory.
  if (contains(gpu_name, "A30")) return &kTables[2];
  if (contains(gpu_name, "A100")) return total_mib > 60000 ? &kTables[1] : &kTables[0];
  if (contains(gpu_name, "H200")) return &kTables[5];
  if (contains(gpu_name, "H100")) return total_mib > 88000 ? &kTables[4] : &kTables[3];
  return nullptr;
}

const GpuInstanceProfile* find_profile_by_index(const MigProductTable& table, unsigned index) {
  for (const GpuInstanceProfile& p : table.profiles)
    if (p.index == index) return &p;
  return nullptr;
}

const GpuInstanceProfile* find_profile_by_id(const MigProductTable& table, unsigned id) {
  for (const GpuInstanceProfile& p : table.profiles)
    if (p.id == id) return &p;
  return nullptr;
}

const GpuInstanceProfile* find_profile_by_name(const MigProductTable& table,
                                               std::string_view name) {
  for (const GpuInstanceProfile& p : table.profiles)
    if (p.name == name) return &p;
  return nullptr;
}

unsigned gpu_instance_id_for(const MigProductTable& table, unsigned start, unsigned size) {
  return table.memory_slices / size - 1 + start / size;
}

std::vector<ComputeInstanceProfile> compute_profiles_for(unsigned gi_slices) {
  constexpr ComputeInstanceProfile kAll[] = {{NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 1},
                                             {NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 2},
                                             {NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 3},
                                             {NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 4},
                                             {NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 7}};
  std::vector<ComputeInstanceProfile> profiles;
  for (const ComputeInstanceProfile& p : kAll)
    if (p.slices <= gi_slices) profiles.push_back(p);
  return profiles;
}

std::optional<unsigned> compute_profile_slices(unsigned index) {
  for (const ComputeInstanceProfile& p : compute_profiles_for(7))
    if (p.index == index) return p.slices;
  return std::nullopt;
}

}  // namespace gpunode::sim
