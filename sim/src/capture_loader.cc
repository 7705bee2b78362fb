#include "capture_loader.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <pugixml.hpp>
#include <utility>

#include "brands.h"
#include "derived_ids.h"
#include "gpu_families.h"
#include "messages.h"
#include "mig_geometry.h"
#include "text_values.h"

namespace gpunode::sim {
namespace {

constexpr size_t kMaxCaptureGpus = 1024;

// The trimmed text of the element at `path` ("fb_memory_usage/total") under `parent`; nullopt
// when an element on the path is missing. "N/A" and friends come back as text: the value
// parsers below reject them, which is what turns them into NOT_SUPPORTED.
std::optional<std::string_view> text_at(pugi::xml_node parent, std::string_view path) {
  pugi::xml_node node = parent;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string name(path.substr(0, slash));
    node = node.child(name.c_str());
    if (!node) return std::nullopt;
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return trim(node.child_value());
}

// The first of several paths that is present and holds a value `parse` accepts.
template <typename Parse>
auto first_value(pugi::xml_node parent, std::initializer_list<std::string_view> paths, Parse parse)
    -> decltype(parse(std::string_view())) {
  for (std::string_view path : paths) {
    if (auto text = text_at(parent, path)) {
      if (auto value = parse(*text)) return value;
    }
  }
  return std::nullopt;
}

std::optional<std::string> string_at(pugi::xml_node parent, std::string_view path,
                                     size_t max_length) {
  auto text = text_at(parent, path);
  if (!text || text->empty() || *text == "N/A" || text->size() >= max_length) return std::nullopt;
  return std::string(*text);
}

std::optional<unsigned> unsigned_at(pugi::xml_node parent, std::string_view path,
                                    std::string_view unit, int decimals = 0) {
  auto text = text_at(parent, path);
  if (!text) return std::nullopt;
  auto value = parse_with_unit(*text, unit, decimals);
  if (!value || *value > 0xFFFFFFFFULL) return std::nullopt;
  return static_cast<unsigned>(*value);
}

std::optional<uint64_t> mib_at(pugi::xml_node parent, std::string_view path) {
  auto text = text_at(parent, path);
  if (!text) return std::nullopt;
  auto mib = parse_with_unit(*text, "MiB");
  if (!mib || *mib > (1ULL << 40)) return std::nullopt;
  return *mib * kMiB;
}

std::optional<bool> switch_at(pugi::xml_node parent, std::string_view path) {
  auto text = text_at(parent, path);
  if (!text) return std::nullopt;
  if (*text == "Enabled" || *text == "Yes") return true;
  if (*text == "Disabled" || *text == "No") return false;
  return std::nullopt;
}

std::optional<unsigned> hex_at(pugi::xml_node parent, std::string_view path) {
  auto text = text_at(parent, path);
  if (!text || text->empty() || text->size() > 8) return std::nullopt;
  auto value = parse_uint(str_cat("0x", *text));
  if (!value) return std::nullopt;
  return static_cast<unsigned>(*value);
}

// Sum of the counters present; nullopt when none is (all N/A).
std::optional<uint64_t> sum_present(std::initializer_list<std::optional<uint64_t>> parts) {
  std::optional<uint64_t> sum;
  for (const auto& part : parts) {
    if (part) sum = sum.value_or(0) + std::min<uint64_t>(*part, 1ULL << 48);
  }
  return sum;
}

std::optional<uint64_t> count_at(pugi::xml_node parent, std::string_view path) {
  auto text = text_at(parent, path);
  if (!text) return std::nullopt;
  return parse_uint(*text);
}

// ECC counters of one kind ("volatile" or "aggregate"). Schemas up to R470 list single_bit and
// double_bit blocks with a total; newer ones split SRAM and DRAM.
void read_ecc_counters(pugi::xml_node block, std::optional<uint64_t>& corrected,
                       std::optional<uint64_t>& uncorrected) {
  if (!block) return;
  if (block.child("single_bit") || block.child("double_bit")) {
    corrected = count_at(block, "single_bit/total");
    uncorrected = count_at(block, "double_bit/total");
    return;
  }
  corrected =
      sum_present({count_at(block, "sram_correctable"), count_at(block, "dram_correctable")});
  std::optional<uint64_t> sram_uncorrectable = count_at(block, "sram_uncorrectable");
  if (!sram_uncorrectable) {
    sram_uncorrectable = sum_present({count_at(block, "sram_uncorrectable_parity"),
                                      count_at(block, "sram_uncorrectable_secded")});
  }
  uncorrected = sum_present({sram_uncorrectable, count_at(block, "dram_uncorrectable")});
}

std::vector<uint64_t> page_addresses(pugi::xml_node retirement, std::optional<uint64_t> count) {
  std::vector<uint64_t> addresses;
  std::string_view list = text_at(retirement, "retired_pagelist").value_or("");
  size_t i = 0;
  while (i < list.size() && addresses.size() < 65536) {
    size_t start = list.find("0x", i);
    if (start == std::string_view::npos) break;
    size_t end = start + 2;
    while (end < list.size() && std::isxdigit(static_cast<unsigned char>(list[end]))) ++end;
    if (auto address = parse_uint(list.substr(start, end - start))) addresses.push_back(*address);
    i = end;
  }
  // A count without a readable list still counts: the addresses are then reported as 0.
  if (count && *count > addresses.size() && *count <= 65536) addresses.resize(*count, 0);
  return addresses;
}

void read_retired_pages(pugi::xml_node gpu_node, GpuModel& gpu) {
  pugi::xml_node pages = gpu_node.child("retired_pages");
  pugi::xml_node single = pages.child("multiple_single_bit_retirement");
  pugi::xml_node dbl = pages.child("double_bit_retirement");
  auto single_count = count_at(single, "retired_count");
  auto double_count = count_at(dbl, "retired_count");
  if (!single_count && !double_count) return;
  RetiredPages retired;
  retired.single_bit_addresses = page_addresses(single, single_count);
  retired.double_bit_addresses = page_addresses(dbl, double_count);
  gpu.retired_pages = std::move(retired);
}

void read_remapped_rows(pugi::xml_node gpu_node, GpuModel& gpu) {
  pugi::xml_node rows = gpu_node.child("remapped_rows");
  auto corrected = count_at(rows, "remapped_row_corr");
  auto uncorrected = count_at(rows, "remapped_row_unc");
  if (!corrected || !uncorrected || *corrected > 0xFFFF || *uncorrected > 0xFFFF) return;
  RemappedRows remapped;
  remapped.corrected = static_cast<unsigned>(*corrected);
  remapped.uncorrected = static_cast<unsigned>(*uncorrected);
  remapped.pending = switch_at(rows, "remapped_row_pending").value_or(false);
  remapped.failure = switch_at(rows, "remapped_row_failure").value_or(false);
  gpu.remapped_rows = remapped;
}

void read_processes(pugi::xml_node gpu_node, GpuModel& gpu) {
  for (pugi::xml_node info : gpu_node.child("processes").children("process_info")) {
    // "C" compute, "G" graphics, "C+G" both, "M"/"M+C" MPS: NVML's compute list has the C ones.
    auto type = text_at(info, "type");
    if (type && type->find('C') == std::string_view::npos) continue;
    auto pid = count_at(info, "pid");
    if (!pid || *pid > 0xFFFFFFFFULL) continue;
    ProcessInfo process;
    process.pid = static_cast<unsigned>(*pid);
    process.used_bytes = mib_at(info, "used_memory");
    if (auto gi = count_at(info, "gpu_instance_id"); gi && *gi < kNoInstance)
      process.gpu_instance_id = static_cast<unsigned>(*gi);
    if (auto ci = count_at(info, "compute_instance_id"); ci && *ci < kNoInstance) {
      process.compute_instance_id = static_cast<unsigned>(*ci);
    }
    gpu.processes.push_back(process);
  }
}

unsigned small_count(pugi::xml_node parent, std::string_view path) {
  auto count = count_at(parent, path);
  return count && *count <= 4096 ? static_cast<unsigned>(*count) : 0;
}

void read_mig(pugi::xml_node gpu_node, GpuModel& gpu) {
  gpu.mig_enabled = switch_at(gpu_node, "mig_mode/current_mig");
  gpu.mig_pending = switch_at(gpu_node, "mig_mode/pending_mig");
  if (!gpu.mig_enabled) return;
  gpu.max_mig_devices = max_mig_devices_for(gpu.name.value_or(""));
  if (!*gpu.mig_enabled) return;
  for (pugi::xml_node device : gpu_node.child("mig_devices").children("mig_device")) {
    if (gpu.mig_devices.size() >= gpu.max_mig_devices) break;
    MigDevice mig;
    auto index = count_at(device, "index");
    auto gi = count_at(device, "gpu_instance_id");
    auto ci = count_at(device, "compute_instance_id");
    if (!index || !gi || !ci || *index >= gpu.max_mig_devices || *gi > 64 || *ci > 64) continue;
    bool taken =
        std::any_of(gpu.mig_devices.begin(), gpu.mig_devices.end(), [&](const MigDevice& other) {
          return other.index == *index ||
                 (other.gpu_instance_id == *gi && other.compute_instance_id == *ci);
        });
    if (taken) continue;
    mig.index = static_cast<unsigned>(*index);
    mig.gpu_instance_id = static_cast<unsigned>(*gi);
    mig.compute_instance_id = static_cast<unsigned>(*ci);
    pugi::xml_node shared = device.child("device_attributes").child("shared");
    mig.multiprocessors = small_count(shared, "multiprocessor_count");
    mig.copy_engines = small_count(shared, "copy_engine_count");
    mig.encoders = small_count(shared, "encoder_count");
    mig.decoders = small_count(shared, "decoder_count");
    mig.ofas = small_count(shared, "ofa_count");
    mig.jpegs = small_count(shared, "jpg_count");
    mig.memory.total_bytes = mib_at(device, "fb_memory_usage/total").value_or(0);
    mig.memory.reserved_bytes = mib_at(device, "fb_memory_usage/reserved").value_or(0);
    mig.memory.used_bytes = mib_at(device, "fb_memory_usage/used").value_or(0);
    mig.memory.free_bytes = mib_at(device, "fb_memory_usage/free");
    if (auto uuid = string_at(device, "uuid", NVML_DEVICE_UUID_BUFFER_SIZE)) mig.uuid = *uuid;
    gpu.mig_devices.push_back(std::move(mig));
  }
  // Slice counts are not in the capture: derive them from SMs and memory (see mig_geometry.h).
  std::map<unsigned, unsigned> gi_multiprocessors;
  for (const MigDevice& mig : gpu.mig_devices)
    gi_multiprocessors[mig.gpu_instance_id] += mig.multiprocessors;
  uint64_t parent_total = gpu.memory ? gpu.memory->total_bytes : 0;
  std::optional<unsigned> sms_per_slice = sms_per_mig_slice(gpu.architecture);
  for (MigDevice& mig : gpu.mig_devices) {
    mig.gpu_instance_slices =
        derive_gpu_instance_slices(gi_multiprocessors[mig.gpu_instance_id], mig.memory.total_bytes,
                                   parent_total, sms_per_slice, gpu.max_mig_devices);
    mig.compute_instance_slices =
        derive_compute_instance_slices(mig.multiprocessors, sms_per_slice, mig.gpu_instance_slices);
    mig.profile = mig_profile_name(mig.gpu_instance_slices, mig.compute_instance_slices,
                                   mig.memory.total_bytes, parent_total);
    if (mig.uuid.empty()) {
      mig.uuid =
          derived_uuid("MIG", str_cat(gpu.uuid.value_or(gpu.pci ? gpu.pci->bus_id() : ""), "/",
                                      mig.gpu_instance_id, "/", mig.compute_instance_id));
    }
  }
}

GpuModel read_gpu(pugi::xml_node node) {
  GpuModel gpu;
  gpu.name = string_at(node, "product_name", NVML_DEVICE_NAME_BUFFER_SIZE);
  gpu.uuid = string_at(node, "uuid", NVML_DEVICE_UUID_BUFFER_SIZE);
  gpu.serial = string_at(node, "serial", NVML_DEVICE_SERIAL_BUFFER_SIZE);
  if (auto minor = count_at(node, "minor_number"); minor && *minor < 4096)
    gpu.minor_number = static_cast<unsigned>(*minor);
  gpu.pci =
      first_value(node, {"pci/pci_bus_id"}, [](std::string_view t) { return parse_bus_id(t); });
  if (!gpu.pci) gpu.pci = parse_bus_id(trim(node.attribute("id").value()));
  gpu.pci_device_id = hex_at(node, "pci/pci_device_id");
  gpu.pci_subsystem_id = hex_at(node, "pci/pci_sub_system_id");
  if (auto arch = text_at(node, "product_architecture"))
    gpu.architecture = architecture_from_name(*arch);
  gpu.compute_capability = derived_compute_capability(gpu.architecture, gpu.pci_device_id);
  // Only what the capture states: a capture without <product_brand> answers NOT_SUPPORTED, as
  // for every other element it lacks.
  if (auto brand = text_at(node, "product_brand")) gpu.brand = brand_from_smi_text(*brand);

  auto total = mib_at(node, "fb_memory_usage/total");
  auto used = mib_at(node, "fb_memory_usage/used");
  if (total && used) {
    MemoryInfo memory;
    memory.total_bytes = *total;
    memory.used_bytes = *used;
    memory.reserved_bytes = mib_at(node, "fb_memory_usage/reserved").value_or(0);
    memory.free_bytes = mib_at(node, "fb_memory_usage/free");
    gpu.memory = memory;
  }
  gpu.temperature_c = unsigned_at(node, "temperature/gpu_temp", "C");
  gpu.memory_temperature_c = unsigned_at(node, "temperature/memory_temp", "C");
  // power_readings up to R525, gpu_power_readings since. nvmlDeviceGetPowerUsage is the power
  // draw: a one-second average since Ampere (GA100 excepted), the instantaneous power before.
  // Newer nvidia-smi prints the two apart and leaves the average N/A where the GPU has none, so
  // there the instant reading is what NVML returns.
  auto milliwatts = [](std::string_view t) -> std::optional<unsigned> {
    auto mw = parse_with_unit(t, "W", 3);
    if (!mw || *mw > 0xFFFFFFFFULL) return std::nullopt;
    return static_cast<unsigned>(*mw);
  };
  gpu.power_mw = first_value(node,
                             {"power_readings/power_draw", "gpu_power_readings/power_draw",
                              "gpu_power_readings/average_power_draw"},
                             milliwatts);
  if (!gpu.power_mw && power_usage_is_instantaneous(gpu.architecture, gpu.pci_device_id)) {
    gpu.power_mw = first_value(
        node, {"gpu_power_readings/instant_power_draw", "power_readings/instant_power_draw"},
        milliwatts);
  }
  gpu.power_limit_mw =
      first_value(node,
                  {"power_readings/enforced_power_limit", "gpu_power_readings/current_power_limit",
                   "gpu_power_readings/enforced_power_limit"},
                  [](std::string_view t) -> std::optional<unsigned> {
                    auto mw = parse_with_unit(t, "W", 3);
                    if (!mw || *mw > 0xFFFFFFFFULL) return std::nullopt;
                    return static_cast<unsigned>(*mw);
                  });
  gpu.utilization_gpu = unsigned_at(node, "utilization/gpu_util", "%");
  gpu.utilization_memory = unsigned_at(node, "utilization/memory_util", "%");
  gpu.utilization_encoder = unsigned_at(node, "utilization/encoder_util", "%");
  gpu.utilization_decoder = unsigned_at(node, "utilization/decoder_util", "%");
  const std::array<std::string_view, 4> clock_names = {"graphics_clock", "sm_clock", "mem_clock",
                                                       "video_clock"};
  for (size_t i = 0; i < clock_names.size(); ++i) {
    gpu.clocks[i] = unsigned_at(node, str_cat("clocks/", clock_names[i]), "MHz");
    gpu.max_clocks[i] = unsigned_at(node, str_cat("max_clocks/", clock_names[i]), "MHz");
  }
  gpu.ecc_enabled = switch_at(node, "ecc_mode/current_ecc");
  gpu.ecc_pending = switch_at(node, "ecc_mode/pending_ecc");
  pugi::xml_node ecc = node.child("ecc_errors");
  read_ecc_counters(ecc.child("volatile"), gpu.ecc.corrected_volatile,
                    gpu.ecc.uncorrected_volatile);
  read_ecc_counters(ecc.child("aggregate"), gpu.ecc.corrected_aggregate,
                    gpu.ecc.uncorrected_aggregate);
  gpu.persistence_mode = switch_at(node, "persistence_mode");
  // nvidia-smi's words for NVML_GPU_VIRTUALIZATION_MODE_*.
  if (auto mode = text_at(node, "gpu_virtualization_mode/virtualization_mode")) {
    constexpr std::pair<std::string_view, nvmlGpuVirtualizationMode_t> kModes[] = {
        {"None", NVML_GPU_VIRTUALIZATION_MODE_NONE},
        {"Pass-Through", NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH},
        {"VGPU", NVML_GPU_VIRTUALIZATION_MODE_VGPU},
        {"Host VGPU", NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU},
        {"Host VSGA", NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA}};
    for (const auto& [text, value] : kModes) {
      if (*mode == text) gpu.virtualization_mode = value;
    }
  }
  if (auto state = text_at(node, "performance_state");
      state && state->size() >= 2 && (*state)[0] == 'P') {
    if (auto p = parse_uint(state->substr(1)); p && *p <= 15)
      gpu.pstate = static_cast<unsigned>(*p);
  }
  gpu.fan_percent = unsigned_at(node, "fan_speed", "%");
  if (auto replay = count_at(node, "pci/replay_counter"); replay && *replay <= 0xFFFFFFFFULL) {
    gpu.pcie_replay_counter = static_cast<unsigned>(*replay);
  }
  read_retired_pages(node, gpu);
  read_remapped_rows(node, gpu);
  read_processes(node, gpu);
  read_mig(node, gpu);
  return gpu;
}

}  // namespace

LoadResult<NodeModel> load_capture(std::string_view text, std::string_view source) {
  auto fail = [&](const std::string& what) {
    return LoadResult<NodeModel>::failure(str_cat(source, ": ", what));
  };
  pugi::xml_document document;
  pugi::xml_parse_result parsed =
      document.load_buffer(text.data(), text.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!parsed) {
    auto offset = static_cast<size_t>(
        std::clamp<ptrdiff_t>(parsed.offset, 0, static_cast<ptrdiff_t>(text.size())));
    size_t line = 1 + static_cast<size_t>(std::count(
                          text.begin(), text.begin() + static_cast<ptrdiff_t>(offset), '\n'));
    return LoadResult<NodeModel>::failure(
        str_cat(source, ":", line, ": malformed XML (", parsed.description(),
                "); give the unedited output of nvidia-smi -q -x"));
  }
  pugi::xml_node root = document.document_element();
  if (std::string_view(root.name()) != "nvidia_smi_log") {
    return fail(str_cat("the root element is <", root.name(),
                        ">, not <nvidia_smi_log>; give the output of nvidia-smi -q -x"));
  }
  NodeModel node;
  node.driver_version = string_at(root, "driver_version", NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
  if (auto cuda = text_at(root, "cuda_version")) {
    size_t dot = cuda->find('.');
    auto major = parse_uint(cuda->substr(0, dot));
    auto minor = dot == std::string_view::npos ? std::optional<uint64_t>(0)
                                               : parse_uint(cuda->substr(dot + 1));
    if (major && minor && *major > 0 && *major < 1000 && *minor < 100)
      node.cuda_driver_version = static_cast<int>(*major * 1000 + *minor * 10);
  }
  if (node.driver_version && node.cuda_driver_version) {
    node.nvml_version = str_cat(*node.cuda_driver_version / 1000, ".", *node.driver_version);
  }
  for (pugi::xml_node gpu : root.children("gpu")) {
    if (node.gpus.size() == kMaxCaptureGpus)
      return fail(str_cat("has more than ", kMaxCaptureGpus, " <gpu> elements"));
    node.gpus.push_back(read_gpu(gpu));
  }
  if (node.gpus.empty())
    return fail("has no <gpu> elements; give the output of nvidia-smi -q -x on a node with GPUs");
  return node;
}

}  // namespace gpunode::sim
