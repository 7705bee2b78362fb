#include "labels/node_facts.h"

#include <algorithm>
#include <set>

#include "core/log.h"
#include "core/status_macros.h"
#include "gpu/mig_profile.h"
#include "host/pci.h"
#include "nvml/status.h"
#include "nvml/system.h"
#include "spdlog/spdlog.h"

namespace gpunode::labels {

absl::StatusOr<NodeFacts> ReadNodeFacts(const nvml::Library& library) {
  NodeFacts facts;
  if (absl::StatusOr<std::string> version = nvml::DriverVersion(library); version.ok())
    facts.driver_version = *version;
  if (absl::StatusOr<int> cuda = nvml::CudaDriverVersion(library); cuda.ok())
    facts.cuda_driver_version = *cuda;
  ASSIGN_OR_RETURN(unsigned count, nvml::DeviceCount(library));
  facts.physical_count = count;
  for (unsigned index = 0; index < count; ++index) {
    absl::StatusOr<nvml::Device> device = nvml::DeviceAt(library, index);
    absl::StatusOr<std::string> name = device.ok() ? device->Name() : device.status();
    if (!name.ok()) {
      // A GPU that fell off the bus cannot be scheduled: it is not counted.
      spdlog::warn("GPU {} left out of the labels: {}", index, name.status().message());
      continue;
    }
    GpuFacts gpu;
    gpu.index = index;
    gpu.name = *name;
    if (absl::StatusOr<nvml::PciInfo> pci = device->Pci(); pci.ok()) {
      gpu.pci_address = host::SysfsPciAddress(pci->bus_id);
    }
    uint64_t total_bytes = 0;
    if (absl::StatusOr<nvml::MemoryInfo> memory = device->Memory(); memory.ok()) {
      total_bytes = memory->total_bytes;
      gpu.memory_mib = memory->total_bytes / (1024 * 1024);
    }
    if (absl::StatusOr<nvml::ComputeCapability> cc = device->CudaComputeCapability(); cc.ok()) {
      gpu.compute_major = cc->major;
      gpu.compute_minor = cc->minor;
    }
    if (absl::StatusOr<bool> mig = device->MigEnabled(); mig.ok()) {
      gpu.mig_capable = true;
      gpu.mig_enabled = *mig;
    }
    if (gpu.mig_enabled) {
      ASSIGN_OR_RETURN(std::vector<nvml::Device> migs, device->MigDevices());
      for (const nvml::Device& mig : migs) {
        ASSIGN_OR_RETURN(nvmlDeviceAttributes_t attributes, mig.Attributes());
        gpu.migs.push_back({gpu::MigProfileName(attributes, total_bytes), attributes});
      }
    }
    facts.gpus.push_back(std::move(gpu));
  }
  return facts;
}

void AddPciBus(NodeFacts& facts, const core::HostRoot& host) {
  absl::StatusOr<std::vector<host::PciDevice>> pci = host::ScanNvidiaGpus(host);
  if (!pci.ok()) {
    spdlog::debug("PCI bus not read, GPUs are counted by the driver alone: {}",
                  pci.status().message());
    return;
  }
  facts.physical_count = std::max<unsigned>(facts.physical_count, pci->size());
  facts.pci_bus.emplace();
  for (const host::PciDevice& device : *pci) facts.pci_bus->push_back(device.address);
}

kube::MissingGpus MissingGpusOf(const NodeFacts& facts) {
  kube::MissingGpus missing;
  int64_t answering = static_cast<int64_t>(facts.gpus.size());
  int64_t absent = std::max<int64_t>(facts.physical_count, answering) - answering;
  if (absent <= 0) return missing;
  std::set<std::string> seen;
  bool named = facts.pci_bus.has_value();
  for (const GpuFacts& gpu : facts.gpus) {
    named = named && !gpu.pci_address.empty();
    seen.insert(gpu.pci_address);
  }
  if (named) {
    for (const std::string& address : *facts.pci_bus) {
      if (!seen.count(address)) missing.addresses.push_back(address);
    }
    // More controllers unseen than GPUs missing: the answering GPUs are not where the bus says
    // they are, so no address can be trusted.
    if (static_cast<int64_t>(missing.addresses.size()) > absent) missing.addresses.clear();
  }
  missing.unknown = absent - static_cast<int64_t>(missing.addresses.size());
  return missing;
}

}  // namespace gpunode::labels
