#include "mig_geometry.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "text_values.h"

namespace gpunode::sim {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

struct ProfileRow {
  std::string_view name;
  MigProfileAttributes attributes;
};

// A100-SXM4-80GB / A100 80GB PCIe, `nvidia-smi mig -lgip` (see sim/SOURCES.md).
constexpr std::array<ProfileRow, 5> kA100_80GBAttributes = {{
    {"1g.10gb", {9728, 14, 1, 0, 0, 0, 0}},
    {"2g.20gb", {19968, 28, 2, 1, 0, 0, 0}},
    {"3g.40gb", {40192, 42, 3, 2, 0, 0, 0}},
    {"4g.40gb", {40192, 56, 4, 2, 0, 0, 0}},
    {"7g.80gb", {80896, 98, 7, 5, 0, 1, 1}},
}};

// The memory share of a GPU instance in eighths, as the naming rule rounds it.
unsigned memory_eighths(uint64_t memory_bytes, uint64_t parent_total_bytes) {
  if (parent_total_bytes == 0) return 0;
  double fraction = static_cast<double>(memory_bytes) / static_cast<double>(parent_total_bytes);
  return static_cast<unsigned>(std::clamp(std::ceil(fraction * 8.0), 0.0, 8.0));
}

}  // namespace

std::string mig_profile_name(unsigned gi_slices, unsigned ci_slices, uint64_t memory_bytes,
                             uint64_t parent_total_bytes) {
  uint64_t memory_gb = 0;
  if (parent_total_bytes > 0) {
    double fraction = static_cast<double>(memory_bytes) / static_cast<double>(parent_total_bytes);
    fraction = std::ceil(fraction * 8.0) / 8.0;
    double parent_gb = static_cast<double>((parent_total_bytes + kGiB - 1) / kGiB);
    memory_gb = static_cast<uint64_t>(std::llround(fraction * parent_gb));
  }
  std::string name = std::to_string(gi_slices) + "g." + std::to_string(memory_gb) + "gb";
  if (ci_slices < gi_slices) name = std::to_string(ci_slices) + "c." + name;
  return name;
}

std::optional<MigSlices> parse_mig_profile_name(std::string_view name) {
  MigSlices slices;
  std::optional<uint64_t> ci;
  if (size_t c = name.find("c."); c != std::string_view::npos) {
    ci = parse_uint(name.substr(0, c));
    if (!ci) return std::nullopt;
    name.remove_prefix(c + 2);
  }
  size_t g = name.find("g.");
  if (g == std::string_view::npos) return std::nullopt;
  auto gi = parse_uint(name.substr(0, g));
  std::string_view memory = name.substr(g + 2);
  if (!gi || *gi == 0 || *gi > 8 || memory.size() < 3 || memory.substr(memory.size() - 2) != "gb" ||
      !parse_uint(memory.substr(0, memory.size() - 2))) {
    return std::nullopt;
  }
  slices.gpu_instance = static_cast<unsigned>(*gi);
  slices.compute_instance = ci ? static_cast<unsigned>(*ci) : slices.gpu_instance;
  if (slices.compute_instance == 0 || slices.compute_instance > slices.gpu_instance)
    return std::nullopt;
  return slices;
}

std::optional<MigProfileAttributes> known_mig_profile(std::string_view gpu_name,
                                                      std::string_view profile) {
  bool a100_80gb = gpu_name.find("A100") != std::string_view::npos &&
                   gpu_name.find("80GB") != std::string_view::npos;
  if (!a100_80gb) return std::nullopt;
  auto slices = parse_mig_profile_name(profile);
  if (!slices) return std::nullopt;
  // The GI profile the name belongs to: "1c.3g.40gb" -> "3g.40gb".
  std::string_view gi_profile =
      profile.substr(profile.find("c.") == std::string_view::npos ? 0 : profile.find("c.") + 2);
  for (const ProfileRow& row : kA100_80GBAttributes) {
    if (row.name != gi_profile) continue;
    MigProfileAttributes attributes = row.attributes;
    attributes.multiprocessors =
        row.attributes.multiprocessors / slices->gpu_instance * slices->compute_instance;
    return attributes;
  }
  return std::nullopt;
}

unsigned max_mig_devices_for(std::string_view gpu_name) {
  return gpu_name.find("A30") != std::string_view::npos ? 4 : 7;
}

unsigned derive_gpu_instance_slices(unsigned gi_multiprocessors, uint64_t memory_bytes,
                                    uint64_t parent_total_bytes,
                                    std::optional<unsigned> sms_per_slice, unsigned max_slices) {
  unsigned eighths = memory_eighths(memory_bytes, parent_total_bytes);
  // 1 and 2 eighths are ambiguous (H100's 1g.20gb holds 2/8 of memory on one slice).
  unsigned from_memory = eighths >= 8 ? 7 : eighths >= 4 ? 3 : 1;
  unsigned slices = from_memory;
  if (sms_per_slice && *sms_per_slice > 0) {
    slices = std::max(from_memory, gi_multiprocessors / *sms_per_slice);
  } else if (eighths <= 2) {
    slices = std::max(1u, eighths);
  }
  return std::clamp(slices, 1u, std::max(1u, max_slices));
}

unsigned derive_compute_instance_slices(unsigned ci_multiprocessors,
                                        std::optional<unsigned> sms_per_slice, unsigned gi_slices) {
  if (!sms_per_slice || *sms_per_slice == 0) return gi_slices;
  return std::clamp(ci_multiprocessors / *sms_per_slice, 1u, std::max(1u, gi_slices));
}

}  // namespace gpunode::sim
