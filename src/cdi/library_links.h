// The links a container needs beside the driver's libraries, for the create-symlinks hook
// ("<target>::<link>", the link a container path), as nvidia-container-toolkit computes them
// (internal/discover/symlinks.go, WithDriverDotSoSymlinks):
//  - libcuda.so -> libcuda.so.1, which programs dlopen and only a development package provides;
//    the same for libnvidia-opticalflow.so, and libGLX_indirect.so.0 -> libGLX_nvidia.so.<v>;
//  - per library, its SONAME link (libcuda.so.1 -> libcuda.so.<v>) and the link without a
//    version (libnvidia-ml.so -> libnvidia-ml.so.1), each only where the driver has that link
//    beside the library, so a container without ldconfig (whose update-ldcache hook then does
//    nothing) still finds the libraries by the names programs load.
#pragma once

#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "core/host_root.h"

namespace gpunode::cdi {

// `libraries` as DiscoverDriverFiles finds them (container paths inside `driver`, the driver
// root). In the libraries' order, each link once. A library whose SONAME cannot be read adds a
// line to `missing` and only its fixed links.
std::vector<std::string> LibraryLinks(const core::HostRoot& driver,
                                      const std::vector<DriverFile>& libraries,
                                      std::vector<std::string>* missing);

}  // namespace gpunode::cdi
