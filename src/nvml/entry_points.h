// The one table of NVML entry points gpunode resolves, DCGM-style.
//
// X(member, preferred symbol, fallback symbols...): the loader tries the names in order and keeps
// the first the library exports. Every fallback must have the same signature and struct layout as
// the preferred name (checked at compile time in library.cc). A member none of whose names is
// exported stays null, and calls through it report NVML_ERROR_FUNCTION_NOT_FOUND, which the
// typed API treats as "not supported by this driver".
#pragma once

#define GPUNODE_NVML_ENTRY_POINTS(X)                                                               \
  X(init, nvmlInit_v2, nvmlInit)                                                                   \
  X(shutdown, nvmlShutdown)                                                                        \
  X(error_string, nvmlErrorString)                                                                 \
  X(system_get_driver_version, nvmlSystemGetDriverVersion)                                         \
  X(system_get_nvml_version, nvmlSystemGetNVMLVersion)                                             \
  X(system_get_cuda_driver_version, nvmlSystemGetCudaDriverVersion_v2,                             \
    nvmlSystemGetCudaDriverVersion)                                                                \
  X(device_get_count, nvmlDeviceGetCount_v2, nvmlDeviceGetCount)                                   \
  X(device_get_handle_by_index, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetHandleByIndex)         \
  X(device_get_handle_by_uuid, nvmlDeviceGetHandleByUUID)                                          \
  X(device_get_index, nvmlDeviceGetIndex)                                                          \
  X(device_get_minor_number, nvmlDeviceGetMinorNumber)                                             \
  X(device_get_uuid, nvmlDeviceGetUUID)                                                            \
  X(device_get_name, nvmlDeviceGetName)                                                            \
  X(device_get_serial, nvmlDeviceGetSerial)                                                        \
  X(device_get_brand, nvmlDeviceGetBrand)                                                          \
  X(device_get_architecture, nvmlDeviceGetArchitecture)                                            \
  X(device_get_cuda_compute_capability, nvmlDeviceGetCudaComputeCapability)                        \
  X(device_get_pci_info, nvmlDeviceGetPciInfo_v3, nvmlDeviceGetPciInfo_v2)                         \
  X(device_get_numa_node_id, nvmlDeviceGetNumaNodeId)                                              \
  X(device_get_memory_info, nvmlDeviceGetMemoryInfo)                                               \
  X(device_get_memory_info_v2, nvmlDeviceGetMemoryInfo_v2)                                         \
  X(device_get_utilization_rates, nvmlDeviceGetUtilizationRates)                                   \
  X(device_get_encoder_utilization, nvmlDeviceGetEncoderUtilization)                               \
  X(device_get_decoder_utilization, nvmlDeviceGetDecoderUtilization)                               \
  X(device_get_temperature, nvmlDeviceGetTemperature)                                              \
  X(device_get_power_usage, nvmlDeviceGetPowerUsage)                                               \
  X(device_get_enforced_power_limit, nvmlDeviceGetEnforcedPowerLimit)                              \
  X(device_get_total_energy_consumption, nvmlDeviceGetTotalEnergyConsumption)                      \
  X(device_get_fan_speed, nvmlDeviceGetFanSpeed)                                                   \
  X(device_get_performance_state, nvmlDeviceGetPerformanceState)                                   \
  X(device_get_pcie_replay_counter, nvmlDeviceGetPcieReplayCounter)                                \
  X(device_get_clock_info, nvmlDeviceGetClockInfo)                                                 \
  X(device_get_max_clock_info, nvmlDeviceGetMaxClockInfo)                                          \
  X(device_get_ecc_mode, nvmlDeviceGetEccMode)                                                     \
  X(device_get_total_ecc_errors, nvmlDeviceGetTotalEccErrors)                                      \
  X(device_get_retired_pages, nvmlDeviceGetRetiredPages)                                           \
  X(device_get_remapped_rows, nvmlDeviceGetRemappedRows)                                           \
  X(device_get_field_values, nvmlDeviceGetFieldValues)                                             \
  X(device_get_persistence_mode, nvmlDeviceGetPersistenceMode)                                     \
  X(device_get_virtualization_mode, nvmlDeviceGetVirtualizationMode)                               \
  X(device_get_grid_licensable_features, nvmlDeviceGetGridLicensableFeatures_v4)                   \
  X(device_get_compute_mode, nvmlDeviceGetComputeMode)                                             \
  X(device_set_compute_mode, nvmlDeviceSetComputeMode)                                             \
  X(device_get_compute_running_processes, nvmlDeviceGetComputeRunningProcesses_v3,                 \
    nvmlDeviceGetComputeRunningProcesses_v2)                                                       \
  X(device_get_mig_mode, nvmlDeviceGetMigMode)                                                     \
  X(device_get_max_mig_device_count, nvmlDeviceGetMaxMigDeviceCount)                               \
  X(device_get_mig_device_handle_by_index, nvmlDeviceGetMigDeviceHandleByIndex)                    \
  X(device_is_mig_device_handle, nvmlDeviceIsMigDeviceHandle)                                      \
  X(device_get_device_handle_from_mig_device_handle, nvmlDeviceGetDeviceHandleFromMigDeviceHandle) \
  X(device_get_gpu_instance_id, nvmlDeviceGetGpuInstanceId)                                        \
  X(device_get_compute_instance_id, nvmlDeviceGetComputeInstanceId)                                \
  X(device_get_attributes, nvmlDeviceGetAttributes_v2)                                             \
  X(device_set_mig_mode, nvmlDeviceSetMigMode)                                                     \
  X(device_get_gpu_instance_profile_info_v, nvmlDeviceGetGpuInstanceProfileInfoV)                  \
  X(device_get_gpu_instance_possible_placements, nvmlDeviceGetGpuInstancePossiblePlacements_v2)    \
  X(device_get_gpu_instance_remaining_capacity, nvmlDeviceGetGpuInstanceRemainingCapacity)         \
  X(device_create_gpu_instance_with_placement, nvmlDeviceCreateGpuInstanceWithPlacement)           \
  X(device_get_gpu_instances, nvmlDeviceGetGpuInstances)                                           \
  X(gpu_instance_get_info, nvmlGpuInstanceGetInfo)                                                 \
  X(gpu_instance_destroy, nvmlGpuInstanceDestroy)                                                  \
  X(gpu_instance_get_compute_instance_profile_info_v,                                              \
    nvmlGpuInstanceGetComputeInstanceProfileInfoV)                                                 \
  X(gpu_instance_create_compute_instance, nvmlGpuInstanceCreateComputeInstance)                    \
  X(gpu_instance_get_compute_instances, nvmlGpuInstanceGetComputeInstances)                        \
  X(compute_instance_get_info, nvmlComputeInstanceGetInfo_v2)                                      \
  X(compute_instance_destroy, nvmlComputeInstanceDestroy)                                          \
  X(device_get_nvlink_state, nvmlDeviceGetNvLinkState)                                             \
  X(device_get_nvlink_remote_pci_info, nvmlDeviceGetNvLinkRemotePciInfo_v2)                        \
  X(device_get_topology_common_ancestor, nvmlDeviceGetTopologyCommonAncestor)                      \
  X(event_set_create, nvmlEventSetCreate)                                                          \
  X(device_get_supported_event_types, nvmlDeviceGetSupportedEventTypes)                            \
  X(device_register_events, nvmlDeviceRegisterEvents)                                              \
  X(event_set_wait, nvmlEventSetWait_v2, nvmlEventSetWait)                                         \
  X(event_set_free, nvmlEventSetFree)                                                              \
  X(device_get_process_utilization, nvmlDeviceGetProcessUtilization)                               \
  X(device_get_processes_utilization_info, nvmlDeviceGetProcessesUtilizationInfo)                  \
  X(gpm_query_device_support, nvmlGpmQueryDeviceSupport)                                           \
  X(gpm_sample_alloc, nvmlGpmSampleAlloc)                                                          \
  X(gpm_sample_free, nvmlGpmSampleFree)                                                            \
  X(gpm_sample_get, nvmlGpmSampleGet)                                                              \
  X(gpm_mig_sample_get, nvmlGpmMigSampleGet)                                                       \
  X(gpm_metrics_get, nvmlGpmMetricsGet)
