// Fuzzes the MIG layout reader: any bytes must load or fail with one line naming the file,
// without leaking an exception; a loaded file matches GPUs without surprises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "mig/mig_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<gpunode::mig::MigConfigFile> file =
      gpunode::mig::ParseMigConfig(text, "fuzz.yaml");
  if (!file.ok()) {
    std::string message(file.status().message());
    if (message.rfind("fuzz.yaml:", 0) != 0 || message.find('\n') != std::string::npos)
      std::abort();
    return 0;
  }
  for (const auto& [name, entries] : file->configs) {
    for (const gpunode::mig::MigConfigEntry& entry : entries) {
      if (!entry.mig_enabled && !entry.mig_devices.empty()) std::abort();
      for (const auto& [profile, count] : entry.mig_devices)
        if (count > 8) std::abort();
      (void)gpunode::mig::EntryMatches(entry, 0, 0x20B210DE);
    }
  }
  return 0;
}
