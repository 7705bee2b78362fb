// The simulator's own C entry points, exported beside the NVML ABI by libgpunode-sim.so
// (whose SONAME is libnvidia-ml.so.1). A program that loads the simulator in place of the driver
// resolves these with dlsym; a program that loads the real driver never sees them.
#pragma once

#if defined(__GNUC__)
#define GPUNODE_SIM_API __attribute__((visibility("default")))
#else
#define GPUNODE_SIM_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Chooses the node the simulator plays. `spec` is a built-in profile name (see
// gpunodeSimBuiltinProfiles), the path of a profile YAML, or the path of an `nvidia-smi -q -x`
// capture. `topology_file` (NULL or "" for none) is an `nvidia-smi topo -m` capture that replaces
// the profile's link matrix. Returns 0 on success. On failure returns non-zero, leaves the
// previous configuration in place, and writes one line (NUL-terminated, truncated to error_len)
// into `error` naming the file or profile, what is wrong and how to fix it. Returns 2 without
// changing anything while NVML is initialized (call nvmlShutdown until it is not).
GPUNODE_SIM_API int gpunodeSimConfigure(const char* spec, const char* topology_file, char* error,
                                        unsigned error_len);

// The built-in profile names, comma-separated and sorted, e.g. "a10-pcie-4,a100-mig,...".
GPUNODE_SIM_API const char* gpunodeSimBuiltinProfiles(void);

#ifdef __cplusplus
}  // extern "C"
#endif
