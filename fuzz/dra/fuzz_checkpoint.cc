// Fuzzes the DRA plugin's checkpoint reader: any bytes parse or fail with one line naming the
// file, never crash; what parses renders to a file that parses back to the same checkpoint.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "host/dra_checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto checkpoint = gpunode::host::ParseDraCheckpoint(text, "checkpoint.json");
  if (!checkpoint.ok()) {
    std::string message(checkpoint.status().message());
    if (message.find('\n') != std::string::npos || !message.starts_with("checkpoint.json: ")) {
      std::abort();
    }
    return 0;
  }
  auto again =
      gpunode::host::ParseDraCheckpoint(gpunode::host::RenderDraCheckpoint(*checkpoint), "again");
  if (!again.ok() || !(*again == *checkpoint)) std::abort();
  return 0;
}
