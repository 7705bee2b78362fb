// What of our NVML declarations (src/nvml/abi.h) is compared with NVIDIA's published nvml.h.
//
// Every struct gpunode passes to the library is listed with every field; every constant it passes
// or compares with; every entry point NVIDIA's header of that version declares. An entry point
// newer than the header is listed in kNewerThanHeader (real_parts_test.cc) with the version that
// brought it, and the test fails when the table has one in neither list.
#pragma once

// S(ours, nvidias): structs whose size must match.
#define GPUNODE_NVML_ABI_STRUCTS(S)                                           \
  S(nvmlMemory_t, nvmlMemory_t)                                               \
  S(nvmlMemory_v2_t, nvmlMemory_v2_t)                                         \
  S(nvmlPciInfo_t, nvmlPciInfo_t)                                             \
  S(nvmlUtilization_t, nvmlUtilization_t)                                     \
  S(nvmlProcessInfo_t, nvmlProcessInfo_t)                                     \
  S(nvmlEventData_t, nvmlEventData_t)                                         \
  S(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t)                           \
  S(nvmlValue_t, nvmlValue_t)                                                 \
  S(nvmlGpuInstancePlacement_t, nvmlGpuInstancePlacement_t)                   \
  S(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t)               \
  S(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t)         \
  S(nvmlGpuInstanceInfo_t, nvmlGpuInstanceInfo_t)                             \
  S(nvmlComputeInstancePlacement_t, nvmlComputeInstancePlacement_t)           \
  S(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t)       \
  S(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t) \
  S(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t)                     \
  S(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t)           \
  S(nvmlGpmMetric_t, nvmlGpmMetric_t)                                         \
  S(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t)                                 \
  S(nvmlGpmSupport_t, nvmlGpmSupport_t)                                       \
  S(nvmlFieldValue_t, nvmlFieldValue_t)                                       \
  S(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t)                         \
  S(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t)                 \
  S(nvmlGridLicensableFeatures_t, nvmlGridLicensableFeatures_t)

// F(ours, nvidias, field): fields whose offset and size must match.
#define GPUNODE_NVML_ABI_FIELDS(F)                                                                 \
  F(nvmlMemory_t, nvmlMemory_t, total)                                                             \
  F(nvmlMemory_t, nvmlMemory_t, free)                                                              \
  F(nvmlMemory_t, nvmlMemory_t, used)                                                              \
  F(nvmlMemory_v2_t, nvmlMemory_v2_t, version)                                                     \
  F(nvmlMemory_v2_t, nvmlMemory_v2_t, total)                                                       \
  F(nvmlMemory_v2_t, nvmlMemory_v2_t, reserved)                                                    \
  F(nvmlMemory_v2_t, nvmlMemory_v2_t, free)                                                        \
  F(nvmlMemory_v2_t, nvmlMemory_v2_t, used)                                                        \
  F(nvmlPciInfo_t, nvmlPciInfo_t, busIdLegacy)                                                     \
  F(nvmlPciInfo_t, nvmlPciInfo_t, domain)                                                          \
  F(nvmlPciInfo_t, nvmlPciInfo_t, bus)                                                             \
  F(nvmlPciInfo_t, nvmlPciInfo_t, device)                                                          \
  F(nvmlPciInfo_t, nvmlPciInfo_t, pciDeviceId)                                                     \
  F(nvmlPciInfo_t, nvmlPciInfo_t, pciSubSystemId)                                                  \
  F(nvmlPciInfo_t, nvmlPciInfo_t, busId)                                                           \
  F(nvmlUtilization_t, nvmlUtilization_t, gpu)                                                     \
  F(nvmlUtilization_t, nvmlUtilization_t, memory)                                                  \
  F(nvmlProcessInfo_t, nvmlProcessInfo_t, pid)                                                     \
  F(nvmlProcessInfo_t, nvmlProcessInfo_t, usedGpuMemory)                                           \
  F(nvmlProcessInfo_t, nvmlProcessInfo_t, gpuInstanceId)                                           \
  F(nvmlProcessInfo_t, nvmlProcessInfo_t, computeInstanceId)                                       \
  F(nvmlEventData_t, nvmlEventData_t, device)                                                      \
  F(nvmlEventData_t, nvmlEventData_t, eventType)                                                   \
  F(nvmlEventData_t, nvmlEventData_t, eventData)                                                   \
  F(nvmlEventData_t, nvmlEventData_t, gpuInstanceId)                                               \
  F(nvmlEventData_t, nvmlEventData_t, computeInstanceId)                                           \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, multiprocessorCount)                           \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, sharedCopyEngineCount)                         \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, sharedDecoderCount)                            \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, sharedEncoderCount)                            \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, sharedJpegCount)                               \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, sharedOfaCount)                                \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, gpuInstanceSliceCount)                         \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, computeInstanceSliceCount)                     \
  F(nvmlDeviceAttributes_t, nvmlDeviceAttributes_t, memorySizeMB)                                  \
  F(nvmlValue_t, nvmlValue_t, dVal)                                                                \
  F(nvmlValue_t, nvmlValue_t, uiVal)                                                               \
  F(nvmlValue_t, nvmlValue_t, ulVal)                                                               \
  F(nvmlValue_t, nvmlValue_t, ullVal)                                                              \
  F(nvmlValue_t, nvmlValue_t, sllVal)                                                              \
  F(nvmlFieldValue_t, nvmlFieldValue_t, fieldId)                                                   \
  F(nvmlFieldValue_t, nvmlFieldValue_t, scopeId)                                                   \
  F(nvmlFieldValue_t, nvmlFieldValue_t, timestamp)                                                 \
  F(nvmlFieldValue_t, nvmlFieldValue_t, latencyUsec)                                               \
  F(nvmlFieldValue_t, nvmlFieldValue_t, valueType)                                                 \
  F(nvmlFieldValue_t, nvmlFieldValue_t, nvmlReturn)                                                \
  F(nvmlGpuInstancePlacement_t, nvmlGpuInstancePlacement_t, start)                                 \
  F(nvmlGpuInstancePlacement_t, nvmlGpuInstancePlacement_t, size)                                  \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, id)                                \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, isP2pSupported)                    \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, sliceCount)                        \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, instanceCount)                     \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, multiprocessorCount)               \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, copyEngineCount)                   \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, decoderCount)                      \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, encoderCount)                      \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, jpegCount)                         \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, ofaCount)                          \
  F(nvmlGpuInstanceProfileInfo_t, nvmlGpuInstanceProfileInfo_t, memorySizeMB)                      \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, version)                     \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, id)                          \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, isP2pSupported)              \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, sliceCount)                  \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, instanceCount)               \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, multiprocessorCount)         \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, copyEngineCount)             \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, decoderCount)                \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, encoderCount)                \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, jpegCount)                   \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, ofaCount)                    \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB)                \
  F(nvmlGpuInstanceProfileInfo_v2_t, nvmlGpuInstanceProfileInfo_v2_t, name)                        \
  F(nvmlGpuInstanceInfo_t, nvmlGpuInstanceInfo_t, device)                                          \
  F(nvmlGpuInstanceInfo_t, nvmlGpuInstanceInfo_t, id)                                              \
  F(nvmlGpuInstanceInfo_t, nvmlGpuInstanceInfo_t, profileId)                                       \
  F(nvmlGpuInstanceInfo_t, nvmlGpuInstanceInfo_t, placement)                                       \
  F(nvmlComputeInstancePlacement_t, nvmlComputeInstancePlacement_t, start)                         \
  F(nvmlComputeInstancePlacement_t, nvmlComputeInstancePlacement_t, size)                          \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, id)                        \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sliceCount)                \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, instanceCount)             \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, multiprocessorCount)       \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sharedCopyEngineCount)     \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sharedDecoderCount)        \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sharedEncoderCount)        \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sharedJpegCount)           \
  F(nvmlComputeInstanceProfileInfo_t, nvmlComputeInstanceProfileInfo_t, sharedOfaCount)            \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, version)             \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, id)                  \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, sliceCount)          \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, instanceCount)       \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, multiprocessorCount) \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t,                      \
    sharedCopyEngineCount)                                                                         \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, sharedDecoderCount)  \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, sharedEncoderCount)  \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, sharedJpegCount)     \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, sharedOfaCount)      \
  F(nvmlComputeInstanceProfileInfo_v2_t, nvmlComputeInstanceProfileInfo_v2_t, name)                \
  F(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t, device)                                  \
  F(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t, gpuInstance)                             \
  F(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t, id)                                      \
  F(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t, profileId)                               \
  F(nvmlComputeInstanceInfo_t, nvmlComputeInstanceInfo_t, placement)                               \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, pid)                           \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, timeStamp)                     \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, smUtil)                        \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, memUtil)                       \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, encUtil)                       \
  F(nvmlProcessUtilizationSample_t, nvmlProcessUtilizationSample_t, decUtil)                       \
  F(nvmlGpmMetric_t, nvmlGpmMetric_t, metricId)                                                    \
  F(nvmlGpmMetric_t, nvmlGpmMetric_t, nvmlReturn)                                                  \
  F(nvmlGpmMetric_t, nvmlGpmMetric_t, value)                                                       \
  F(nvmlGpmMetric_t, nvmlGpmMetric_t, metricInfo)                                                  \
  F(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t, version)                                             \
  F(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t, numMetrics)                                          \
  F(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t, sample1)                                             \
  F(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t, sample2)                                             \
  F(nvmlGpmMetricsGet_t, nvmlGpmMetricsGet_t, metrics)                                             \
  F(nvmlGpmSupport_t, nvmlGpmSupport_t, version)                                                   \
  F(nvmlGpmSupport_t, nvmlGpmSupport_t, isSupportedDevice)                                         \
  F(nvmlFieldValue_t, nvmlFieldValue_t, value)                                                     \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, year)                                        \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, month)                                       \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, day)                                         \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, hour)                                        \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, min)                                         \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, sec)                                         \
  F(nvmlGridLicenseExpiry_t, nvmlGridLicenseExpiry_t, status)                                      \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, featureCode)                         \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, featureState)                        \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, licenseInfo)                         \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, productName)                         \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, featureEnabled)                      \
  F(nvmlGridLicensableFeature_t, nvmlGridLicensableFeature_t, licenseExpiry)                       \
  F(nvmlGridLicensableFeatures_t, nvmlGridLicensableFeatures_t, isGridLicenseSupported)            \
  F(nvmlGridLicensableFeatures_t, nvmlGridLicensableFeatures_t, licensableFeaturesCount)           \
  F(nvmlGridLicensableFeatures_t, nvmlGridLicensableFeatures_t, gridLicensableFeatures)

// C(name): constants whose value must match. Not compared: the error codes after 25,
// NVML_VALUE_TYPE_SIGNED_INT, nvmlValue_t's siVal and the GPU instance profiles after
// 1_SLICE_REV1 (with their count), all newer than the header; and
// NVML_NVLINK_MAX_LINKS, a bound NVIDIA raises with each NVLink generation (gpunode iterates up
// to its own and stops at the first link the driver refuses).
#define GPUNODE_NVML_ABI_CONSTANTS(C)                          \
  C(NVML_SUCCESS)                                              \
  C(NVML_ERROR_UNINITIALIZED)                                  \
  C(NVML_ERROR_INVALID_ARGUMENT)                               \
  C(NVML_ERROR_NOT_SUPPORTED)                                  \
  C(NVML_ERROR_NO_PERMISSION)                                  \
  C(NVML_ERROR_ALREADY_INITIALIZED)                            \
  C(NVML_ERROR_NOT_FOUND)                                      \
  C(NVML_ERROR_INSUFFICIENT_SIZE)                              \
  C(NVML_ERROR_INSUFFICIENT_POWER)                             \
  C(NVML_ERROR_DRIVER_NOT_LOADED)                              \
  C(NVML_ERROR_TIMEOUT)                                        \
  C(NVML_ERROR_LIBRARY_NOT_FOUND)                              \
  C(NVML_ERROR_FUNCTION_NOT_FOUND)                             \
  C(NVML_ERROR_CORRUPTED_INFOROM)                              \
  C(NVML_ERROR_GPU_IS_LOST)                                    \
  C(NVML_ERROR_RESET_REQUIRED)                                 \
  C(NVML_ERROR_OPERATING_SYSTEM)                               \
  C(NVML_ERROR_LIB_RM_VERSION_MISMATCH)                        \
  C(NVML_ERROR_MEMORY)                                         \
  C(NVML_ERROR_NO_DATA)                                        \
  C(NVML_ERROR_VGPU_ECC_NOT_SUPPORTED)                         \
  C(NVML_ERROR_INSUFFICIENT_RESOURCES)                         \
  C(NVML_ERROR_FREQ_NOT_SUPPORTED)                             \
  C(NVML_ERROR_ARGUMENT_VERSION_MISMATCH)                      \
  C(NVML_ERROR_UNKNOWN)                                        \
  C(NVML_FEATURE_ENABLED)                                      \
  C(NVML_TEMPERATURE_GPU)                                      \
  C(NVML_CLOCK_GRAPHICS)                                       \
  C(NVML_CLOCK_SM)                                             \
  C(NVML_CLOCK_MEM)                                            \
  C(NVML_CLOCK_VIDEO)                                          \
  C(NVML_MEMORY_ERROR_TYPE_CORRECTED)                          \
  C(NVML_VOLATILE_ECC)                                         \
  C(NVML_AGGREGATE_ECC)                                        \
  C(NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS) \
  C(NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)           \
  C(NVML_PSTATE_UNKNOWN)                                       \
  C(NVML_TOPOLOGY_SINGLE)                                      \
  C(NVML_TOPOLOGY_MULTIPLE)                                    \
  C(NVML_TOPOLOGY_HOSTBRIDGE)                                  \
  C(NVML_TOPOLOGY_NODE)                                        \
  C(NVML_TOPOLOGY_SYSTEM)                                      \
  C(NVML_DEVICE_UUID_BUFFER_SIZE)                              \
  C(NVML_DEVICE_NAME_BUFFER_SIZE)                              \
  C(NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE)                    \
  C(NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE)                      \
  C(NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE)                        \
  C(NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE)                     \
  C(NVML_DEVICE_MIG_ENABLE)                                    \
  C(nvmlEventTypeSingleBitEccError)                            \
  C(nvmlEventTypeDoubleBitEccError)                            \
  C(nvmlEventTypePState)                                       \
  C(nvmlEventTypeClock)                                        \
  C(nvmlEventTypeNone)                                         \
  C(NVML_VALUE_TYPE_DOUBLE)                                    \
  C(NVML_VALUE_TYPE_UNSIGNED_INT)                              \
  C(NVML_VALUE_TYPE_UNSIGNED_LONG_LONG)                        \
  C(NVML_VALUE_TYPE_SIGNED_LONG_LONG)                          \
  C(NVML_FI_DEV_MEMORY_TEMP)                                   \
  C(kNvmlMemoryV2Version)                                      \
  C(NVML_COMPUTEMODE_DEFAULT)                                  \
  C(NVML_COMPUTEMODE_PROHIBITED)                               \
  C(NVML_COMPUTEMODE_EXCLUSIVE_PROCESS)                        \
  C(NVML_GPU_INSTANCE_PROFILE_1_SLICE)                         \
  C(NVML_GPU_INSTANCE_PROFILE_2_SLICE)                         \
  C(NVML_GPU_INSTANCE_PROFILE_4_SLICE)                         \
  C(NVML_GPU_INSTANCE_PROFILE_7_SLICE)                         \
  C(NVML_GPU_INSTANCE_PROFILE_8_SLICE)                         \
  C(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1)                    \
  C(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)                     \
  C(NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE)                     \
  C(NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE)                     \
  C(NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE)                     \
  C(NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE)                     \
  C(NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED)               \
  C(NVML_DEVICE_NAME_V2_BUFFER_SIZE)                           \
  C(kNvmlComputeInstanceProfileInfoV2Version)                  \
  C(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX)                     \
  C(NVML_GPM_METRIC_GRAPHICS_UTIL)                             \
  C(NVML_GPM_METRIC_SM_OCCUPANCY)                              \
  C(NVML_GPM_METRIC_ANY_TENSOR_UTIL)                           \
  C(NVML_GPM_METRIC_FP64_UTIL)                                 \
  C(NVML_GPM_METRIC_FP16_UTIL)                                 \
  C(NVML_GPM_METRIC_PCIE_RX_PER_SEC)                           \
  C(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC)                   \
  C(NVML_GPM_METRIC_MAX)                                       \
  C(NVML_GPM_METRICS_GET_VERSION)                              \
  C(NVML_GPM_SUPPORT_VERSION)                                  \
  C(NVML_GPU_VIRTUALIZATION_MODE_NONE)                         \
  C(NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH)                  \
  C(NVML_GPU_VIRTUALIZATION_MODE_VGPU)                         \
  C(NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU)                    \
  C(NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA)                    \
  C(NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE)                    \
  C(NVML_GRID_LICENSE_BUFFER_SIZE)                             \
  C(NVML_GRID_LICENSE_FEATURE_MAX_COUNT)                       \
  C(NVML_BRAND_UNKNOWN)                                        \
  C(NVML_BRAND_QUADRO)                                         \
  C(NVML_BRAND_TESLA)                                          \
  C(NVML_BRAND_NVS)                                            \
  C(NVML_BRAND_GRID)                                           \
  C(NVML_BRAND_GEFORCE)                                        \
  C(NVML_BRAND_TITAN)                                          \
  C(NVML_BRAND_NVIDIA_VAPPS)                                   \
  C(NVML_BRAND_NVIDIA_VPC)                                     \
  C(NVML_BRAND_NVIDIA_VCS)                                     \
  C(NVML_BRAND_NVIDIA_VWS)                                     \
  C(NVML_BRAND_NVIDIA_CLOUD_GAMING)                            \
  C(NVML_BRAND_QUADRO_RTX)                                     \
  C(NVML_BRAND_NVIDIA_RTX)                                     \
  C(NVML_BRAND_NVIDIA)                                         \
  C(NVML_BRAND_GEFORCE_RTX)                                    \
  C(NVML_BRAND_TITAN_RTX)                                      \
  C(NVML_BRAND_COUNT)

// E(name): entry points of src/nvml/entry_points.h that NVIDIA's header of that version declares.
#define GPUNODE_NVML_HEADER_ENTRY_POINTS(E)        \
  E(nvmlDeviceGetComputeMode)                      \
  E(nvmlDeviceSetComputeMode)                      \
  E(nvmlDeviceSetMigMode)                          \
  E(nvmlDeviceGetGpuInstanceProfileInfoV)          \
  E(nvmlDeviceGetGpuInstancePossiblePlacements_v2) \
  E(nvmlDeviceGetGpuInstanceRemainingCapacity)     \
  E(nvmlDeviceCreateGpuInstanceWithPlacement)      \
  E(nvmlDeviceGetGpuInstances)                     \
  E(nvmlGpuInstanceGetInfo)                        \
  E(nvmlGpuInstanceDestroy)                        \
  E(nvmlGpuInstanceGetComputeInstanceProfileInfoV) \
  E(nvmlGpuInstanceCreateComputeInstance)          \
  E(nvmlGpuInstanceGetComputeInstances)            \
  E(nvmlComputeInstanceGetInfo_v2)                 \
  E(nvmlComputeInstanceDestroy)                    \
  E(nvmlDeviceGetProcessUtilization)               \
  E(nvmlGpmQueryDeviceSupport)                     \
  E(nvmlGpmSampleAlloc)                            \
  E(nvmlGpmSampleFree)                             \
  E(nvmlGpmSampleGet)                              \
  E(nvmlGpmMetricsGet)                             \
  E(nvmlDeviceGetArchitecture)                     \
  E(nvmlDeviceGetAttributes_v2)                    \
  E(nvmlDeviceGetClockInfo)                        \
  E(nvmlDeviceGetComputeInstanceId)                \
  E(nvmlDeviceGetComputeRunningProcesses_v2)       \
  E(nvmlDeviceGetComputeRunningProcesses_v3)       \
  E(nvmlDeviceGetCount)                            \
  E(nvmlDeviceGetCount_v2)                         \
  E(nvmlDeviceGetCudaComputeCapability)            \
  E(nvmlDeviceGetDecoderUtilization)               \
  E(nvmlDeviceGetDeviceHandleFromMigDeviceHandle)  \
  E(nvmlDeviceGetEccMode)                          \
  E(nvmlDeviceGetEncoderUtilization)               \
  E(nvmlDeviceGetEnforcedPowerLimit)               \
  E(nvmlDeviceGetFanSpeed)                         \
  E(nvmlDeviceGetFieldValues)                      \
  E(nvmlDeviceGetGpuInstanceId)                    \
  E(nvmlDeviceGetHandleByIndex)                    \
  E(nvmlDeviceGetHandleByIndex_v2)                 \
  E(nvmlDeviceGetHandleByUUID)                     \
  E(nvmlDeviceGetIndex)                            \
  E(nvmlDeviceGetMaxClockInfo)                     \
  E(nvmlDeviceGetMaxMigDeviceCount)                \
  E(nvmlDeviceGetMemoryInfo)                       \
  E(nvmlDeviceGetMemoryInfo_v2)                    \
  E(nvmlDeviceGetMigDeviceHandleByIndex)           \
  E(nvmlDeviceGetMigMode)                          \
  E(nvmlDeviceGetMinorNumber)                      \
  E(nvmlDeviceGetName)                             \
  E(nvmlDeviceGetNvLinkRemotePciInfo_v2)           \
  E(nvmlDeviceGetNvLinkState)                      \
  E(nvmlDeviceGetPciInfo_v2)                       \
  E(nvmlDeviceGetPciInfo_v3)                       \
  E(nvmlDeviceGetPcieReplayCounter)                \
  E(nvmlDeviceGetPerformanceState)                 \
  E(nvmlDeviceGetPersistenceMode)                  \
  E(nvmlDeviceGetVirtualizationMode)               \
  E(nvmlDeviceGetGridLicensableFeatures_v4)        \
  E(nvmlDeviceGetPowerUsage)                       \
  E(nvmlDeviceGetRemappedRows)                     \
  E(nvmlDeviceGetRetiredPages)                     \
  E(nvmlDeviceGetSerial)                           \
  E(nvmlDeviceGetBrand)                            \
  E(nvmlDeviceGetSupportedEventTypes)              \
  E(nvmlDeviceGetTemperature)                      \
  E(nvmlDeviceGetTopologyCommonAncestor)           \
  E(nvmlDeviceGetTotalEccErrors)                   \
  E(nvmlDeviceGetTotalEnergyConsumption)           \
  E(nvmlDeviceGetUUID)                             \
  E(nvmlDeviceGetUtilizationRates)                 \
  E(nvmlDeviceIsMigDeviceHandle)                   \
  E(nvmlDeviceRegisterEvents)                      \
  E(nvmlErrorString)                               \
  E(nvmlEventSetCreate)                            \
  E(nvmlEventSetFree)                              \
  E(nvmlEventSetWait)                              \
  E(nvmlEventSetWait_v2)                           \
  E(nvmlInit)                                      \
  E(nvmlInit_v2)                                   \
  E(nvmlShutdown)                                  \
  E(nvmlSystemGetCudaDriverVersion)                \
  E(nvmlSystemGetCudaDriverVersion_v2)             \
  E(nvmlSystemGetDriverVersion)                    \
  E(nvmlSystemGetNVMLVersion)
