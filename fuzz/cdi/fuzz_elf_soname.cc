// Fuzzes the SONAME reader (a library of the driver root, read through the host root): any bytes
// give a SONAME or an error, never a crash or a read outside the file, and a SONAME read is a file
// name: not empty, no NUL, no '/' (the hook makes a link of that name beside the library).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cdi/elf_soname.h"
#include "core/host_root.h"

namespace {

// One directory for the whole run, standing for the driver root; the library is rewritten for
// each input.
const std::string& Root() {
  static const std::string root = [] {
    std::string dir = "/tmp/fuzz-elf-soname-XXXXXX";
    if (mkdtemp(dir.data()) == nullptr) std::abort();
    return dir;
  }();
  return root;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  {
    std::ofstream out(Root() + "/libfuzz.so.1", std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  gpunode::core::HostRoot root(Root());
  auto soname = gpunode::cdi::ReadSoname(root, "/libfuzz.so.1");
  if (!soname.ok()) return 0;
  if (soname->empty() || soname->find('\0') != std::string::npos ||
      soname->find('/') != std::string::npos) {
    std::abort();
  }
  return 0;
}
