// Fuzzes the `nvidia-smi topo -m` parser, and the builder that turns a parsed matrix into NVLinks
// and PCIe levels for a node with that many GPUs.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "node_model.h"
#include "topology_builder.h"
#include "topology_matrix.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::sim;
  auto matrix =
      parse_topology(std::string_view(reinterpret_cast<const char*>(data), size), {"fuzz.txt", 0});
  if (!matrix.ok()) {
    if (matrix.error().empty()) std::abort();
    return 0;
  }
  NodeModel node;
  node.gpus.resize(matrix.value().gpu_count());
  for (size_t i = 0; i < node.gpus.size(); ++i) {
    node.gpus[i].pci =
        PciAddress{0, static_cast<unsigned>(i % 256), static_cast<unsigned>(i / 256 % 32), 0};
  }
  // Every other input also asks for NVSwitches, to cover both ways of building links.
  std::optional<unsigned> switches;
  if (size % 2 == 1) switches = static_cast<unsigned>(size % 7);
  auto problem = apply_topology(matrix.value(), switches, "fuzz.txt", node);
  if (!problem) {
    for (const GpuModel& gpu : node.gpus) {
      if (gpu.nvlinks.size() > NVML_NVLINK_MAX_LINKS) std::abort();
    }
  }
  return 0;
}
