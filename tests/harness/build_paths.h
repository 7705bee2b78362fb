// Paths of this checkout and of the build tree, for tests and benchmarks, defined in sources
// that CMake writes (cmake/build_paths.cmake: why they are not compile definitions). A target
// gets them through gpunode_build_paths() in its CMakeLists.txt, with the values of the names
// given to it there; using a name it was not given fails to link.
#pragma once

namespace gpunode::build_paths {

extern const char kBinary[];           // the gpunode binary the tests run (GPUNODE_TEST_BINARY)
extern const char kSourceDir[];        // the checkout
extern const char kFixturesDir[];      // tests/fixtures
extern const char kSimLibrary[];       // libgpunode-sim.so of this tree
extern const char kSimProfilesDir[];   // sim/profiles
extern const char kSimFixtures[];      // tests/fixtures/nvidia-smi-xml
extern const char kMigFixtures[];      // tests/fixtures/mig
extern const char kClusterFixtures[];  // tests/fixtures/cluster

// Given by the targets that need them.
extern const char kOldDriverLibrary[];  // an NVML of an old driver (tests/unit)
extern const char kHttpModule[];        // libgpunode-http.so of this tree
extern const char kForeignHttpModule[];
extern const char kForeignHttpModuleWithoutIdentity[];
extern const char kNvidiaDriverRoot[];  // NVIDIA's packages unpacked (tests/nvml)
extern const char kGoPeer[];            // the Go gRPC peer (tests/h2grpc)
extern const char kGoTlsServer[];       // the Go TLS server (tests/cluster)
extern const char kRsaTestKeys[];       // tests/cluster's generated keys

}  // namespace gpunode::build_paths
