// The subset of NVML's C ABI that gpunode uses, declared by us.
//
// These declarations must match libnvidia-ml.so.1 byte for byte: the production layer calls the
// real driver library through them, and the simulator (sim/) exports the same symbols. Layouts
// are pinned by static_assert below; the values and sizes follow NVML_API_VERSION 13 (LP64); the
// GPM and process-utilization declarations were checked against nvml.h of CUDA 11.8 (API version
// 11). Nothing here is ever linked directly: production code resolves every symbol with dlsym.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

typedef int nvmlReturn_t;
enum : nvmlReturn_t {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
};

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct nvmlEventSet_st* nvmlEventSet_t;
typedef struct nvmlGpuInstance_st* nvmlGpuInstance_t;

typedef int nvmlEnableState_t;
enum : nvmlEnableState_t { NVML_FEATURE_DISABLED = 0, NVML_FEATURE_ENABLED = 1 };

typedef int nvmlComputeMode_t;
enum : nvmlComputeMode_t {
  NVML_COMPUTEMODE_DEFAULT = 0,
  NVML_COMPUTEMODE_EXCLUSIVE_THREAD = 1,  // deprecated by NVIDIA, still a value
  NVML_COMPUTEMODE_PROHIBITED = 2,
  NVML_COMPUTEMODE_EXCLUSIVE_PROCESS = 3,
};

typedef int nvmlGpuVirtualizationMode_t;
enum : nvmlGpuVirtualizationMode_t {
  NVML_GPU_VIRTUALIZATION_MODE_NONE = 0,         // bare metal
  NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH = 1,  // the whole GPU passed to a virtual machine
  NVML_GPU_VIRTUALIZATION_MODE_VGPU = 2,         // a vGPU, seen from inside its virtual machine
  NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU = 3,    // the hypervisor's GPU in vGPU mode
  NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA = 4,    // the hypervisor's GPU in vSGA mode
};

// The product brand of a GPU (nvmlDeviceGetBrand); values of nvml.h's nvmlBrandType_t. GRID is no
// longer reported by drivers; NVML_BRAND_NVIDIA_VGAMING, a deprecated alias of CLOUD_GAMING, is
// left out. GEFORCE_RTX and TITAN_RTX are marked unused in nvml.h.
typedef int nvmlBrandType_t;
enum : nvmlBrandType_t {
  NVML_BRAND_UNKNOWN = 0,
  NVML_BRAND_QUADRO = 1,
  NVML_BRAND_TESLA = 2,
  NVML_BRAND_NVS = 3,
  NVML_BRAND_GRID = 4,
  NVML_BRAND_GEFORCE = 5,
  NVML_BRAND_TITAN = 6,
  NVML_BRAND_NVIDIA_VAPPS = 7,          // NVIDIA Virtual Applications (vGPU)
  NVML_BRAND_NVIDIA_VPC = 8,            // NVIDIA Virtual PC (vGPU)
  NVML_BRAND_NVIDIA_VCS = 9,            // NVIDIA Virtual Compute Server (vGPU)
  NVML_BRAND_NVIDIA_VWS = 10,           // NVIDIA RTX Virtual Workstation (vGPU)
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,  // NVIDIA Cloud Gaming (vGPU)
  NVML_BRAND_QUADRO_RTX = 12,
  NVML_BRAND_NVIDIA_RTX = 13,
  NVML_BRAND_NVIDIA = 14,
  NVML_BRAND_GEFORCE_RTX = 15,
  NVML_BRAND_TITAN_RTX = 16,
  NVML_BRAND_COUNT = 17,
};

typedef int nvmlTemperatureSensors_t;
enum : nvmlTemperatureSensors_t { NVML_TEMPERATURE_GPU = 0 };

typedef int nvmlClockType_t;
enum : nvmlClockType_t {
  NVML_CLOCK_GRAPHICS = 0,
  NVML_CLOCK_SM = 1,
  NVML_CLOCK_MEM = 2,
  NVML_CLOCK_VIDEO = 3,
};

typedef int nvmlMemoryErrorType_t;
enum : nvmlMemoryErrorType_t {
  NVML_MEMORY_ERROR_TYPE_CORRECTED = 0,
  NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1,
};

typedef int nvmlEccCounterType_t;
enum : nvmlEccCounterType_t { NVML_VOLATILE_ECC = 0, NVML_AGGREGATE_ECC = 1 };

typedef int nvmlPageRetirementCause_t;
enum : nvmlPageRetirementCause_t {
  NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = 0,
  NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = 1,
};

typedef int nvmlPstates_t;  // 0..15 = P0..P15, 32 = unknown
enum : nvmlPstates_t { NVML_PSTATE_UNKNOWN = 32 };

typedef int nvmlGpuTopologyLevel_t;
enum : nvmlGpuTopologyLevel_t {
  NVML_TOPOLOGY_INTERNAL = 0,
  NVML_TOPOLOGY_SINGLE = 10,
  NVML_TOPOLOGY_MULTIPLE = 20,
  NVML_TOPOLOGY_HOSTBRIDGE = 30,
  NVML_TOPOLOGY_NODE = 40,
  NVML_TOPOLOGY_SYSTEM = 50,
};

enum : unsigned {
  NVML_DEVICE_UUID_BUFFER_SIZE = 80,
  NVML_DEVICE_NAME_BUFFER_SIZE = 64,
  NVML_DEVICE_SERIAL_BUFFER_SIZE = 30,
  NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80,
  NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE = 80,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE = 32,
  NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE = 16,
  NVML_NVLINK_MAX_LINKS = 36,
  NVML_DEVICE_MIG_DISABLE = 0,
  NVML_DEVICE_MIG_ENABLE = 1,
};

// Event types for nvmlDeviceRegisterEvents.
enum : unsigned long long {
  nvmlEventTypeSingleBitEccError = 0x1ULL,
  nvmlEventTypeDoubleBitEccError = 0x2ULL,
  nvmlEventTypePState = 0x4ULL,
  nvmlEventTypeXidCriticalError = 0x8ULL,
  nvmlEventTypeClock = 0x10ULL,
  nvmlEventTypeNone = 0x0ULL,
};

// Returned as gpuInstanceId / computeInstanceId when the process does not run in MIG.
constexpr unsigned kNvmlNoInstanceId = 0xFFFFFFFFu;
// nvmlProcessInfo_t::usedGpuMemory when the driver cannot tell (Windows WDDM).
constexpr unsigned long long kNvmlValueNotAvailable = ~0ULL;

typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

// nvmlMemory_v2_t: `used` excludes `reserved`, as nvidia-smi prints it. Set version to
// kNvmlMemoryV2Version before the call.
typedef struct {
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_v2_t;
constexpr unsigned kNvmlMemoryV2Version = sizeof(nvmlMemory_v2_t) | (2u << 24);

typedef struct {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;  // (device id << 16) | vendor id
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
} nvmlPciInfo_t;

typedef struct {
  unsigned int gpu;
  unsigned int memory;
} nvmlUtilization_t;

// nvmlProcessInfo_v2_t; the layout both the _v2 and _v3 process queries fill.
typedef struct {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the XID for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
} nvmlEventData_t;

// nvmlDeviceAttributes_v2_t (MIG device attributes).
typedef struct {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

// nvmlDeviceGetFieldValues: one request/answer per field. Only the fields gpunode reads are named.
typedef int nvmlValueType_t;
enum : nvmlValueType_t {
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
};
enum : unsigned { NVML_FI_DEV_MEMORY_TEMP = 82 };

typedef union {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
} nvmlValue_t;

typedef struct {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;
  nvmlValue_t value;
} nvmlFieldValue_t;

// ---- MIG management (nvml.h "Multi Instance GPU Management"). ----
typedef struct nvmlComputeInstance_st* nvmlComputeInstance_t;

// The `profile` argument of nvmlDeviceGetGpuInstanceProfileInfo(V): an index, not the profile id
// the info returns. 1_SLICE_REV2 and 2_SLICE_REV1 are in the headers of NVML_API_VERSION 12 on.
enum : unsigned {
  NVML_GPU_INSTANCE_PROFILE_1_SLICE = 0x0,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE = 0x1,
  NVML_GPU_INSTANCE_PROFILE_3_SLICE = 0x2,
  NVML_GPU_INSTANCE_PROFILE_4_SLICE = 0x3,
  NVML_GPU_INSTANCE_PROFILE_7_SLICE = 0x4,
  NVML_GPU_INSTANCE_PROFILE_8_SLICE = 0x5,
  NVML_GPU_INSTANCE_PROFILE_6_SLICE = 0x6,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 = 0x7,
  NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 = 0x8,
  NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 = 0x9,
  NVML_GPU_INSTANCE_PROFILE_COUNT = 0xA,
};
// The `profile` argument of nvmlGpuInstanceGetComputeInstanceProfileInfo(V).
enum : unsigned {
  NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0x0,
  NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 0x1,
  NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 0x2,
  NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 0x3,
  NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 0x4,
  NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE = 0x5,
  NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE = 0x6,
  NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 0x7,
  NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0x0,
  NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96,
};

typedef struct {
  unsigned int start;  // first memory slice
  unsigned int size;   // memory slices
} nvmlGpuInstancePlacement_t;

typedef struct {
  unsigned int version;  // kNvmlGpuInstanceProfileInfoV2Version
  unsigned int id;       // the profile id (e.g. 19 for 1g.10gb on A100)
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;
constexpr unsigned kNvmlGpuInstanceProfileInfoV2Version =
    sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2u << 24);

// nvmlGpuInstanceProfileInfo_t: v2 without version and name.
typedef struct {
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

typedef struct {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

typedef struct {
  unsigned int start;  // first compute slice within the GPU instance
  unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct {
  unsigned int version;  // kNvmlComputeInstanceProfileInfoV2Version
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;
constexpr unsigned kNvmlComputeInstanceProfileInfoV2Version =
    sizeof(nvmlComputeInstanceProfileInfo_v2_t) | (2u << 24);

typedef struct {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

// NVLink throughput fields (nvmlDeviceGetFieldValues, scopeId = link number): data moved over
// the link since the driver loaded, in KiB, as an unsigned long long.
enum : unsigned {
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138,
  NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139,
};

// nvmlDeviceGetProcessUtilization: one sample per process and driver sampling period.
typedef struct {
  unsigned int pid;
  unsigned long long timeStamp;  // CPU time of the sample, microseconds
  unsigned int smUtil;           // percent
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

// nvmlDeviceGetProcessesUtilizationInfo (driver 550 and later): the same samples with JPEG and
// optical-flow engines, in a versioned request. nvml.h of CUDA 12.4 (NVML_API_VERSION 12); not
// in the 11.8 header tests/nvml compares against, hence the asserts below.
typedef struct {
  unsigned long long timeStamp;  // CPU time of the sample, microseconds
  unsigned int pid;
  unsigned int smUtil;  // percent
  unsigned int memUtil;
  unsigned int encUtil;
  unsigned int decUtil;
  unsigned int jpgUtil;
  unsigned int ofaUtil;
} nvmlProcessUtilizationInfo_v1_t;

typedef struct {
  unsigned int version;              // nvmlProcessesUtilizationInfo_v1
  unsigned int processSamplesCount;  // in: room in procUtilArray; out: samples written or needed
  unsigned long long lastSeenTimeStamp;  // only samples newer than this
  nvmlProcessUtilizationInfo_v1_t* procUtilArray;
} nvmlProcessesUtilizationInfo_v1_t;
typedef nvmlProcessesUtilizationInfo_v1_t nvmlProcessesUtilizationInfo_t;
// NVML_STRUCT_VERSION(ProcessesUtilizationInfo, 1).
constexpr unsigned kNvmlProcessesUtilizationInfoV1Version =
    static_cast<unsigned>(sizeof(nvmlProcessesUtilizationInfo_v1_t)) | (1u << 24);

// ---- GPU Performance Monitoring (GPM), Hopper and later. nvml.h of CUDA 11.8 (NVML_API_VERSION
// 11), "GPM" group; nvmlGpmMigSampleGet arrived with the CUDA 12.0 header, same sample type. ----
typedef struct nvmlGpmSample_st* nvmlGpmSample_t;

// nvmlGpmMetricId_t: the metrics gpunode asks for. Utilizations are percentages 0-100; the
// PER_SEC metrics are MiB per second.
typedef unsigned nvmlGpmMetricId_t;
enum : nvmlGpmMetricId_t {
  NVML_GPM_METRIC_GRAPHICS_UTIL = 1,
  NVML_GPM_METRIC_SM_UTIL = 2,
  NVML_GPM_METRIC_SM_OCCUPANCY = 3,
  NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5,
  NVML_GPM_METRIC_DRAM_BW_UTIL = 10,
  NVML_GPM_METRIC_FP64_UTIL = 11,
  NVML_GPM_METRIC_FP32_UTIL = 12,
  NVML_GPM_METRIC_FP16_UTIL = 13,
  NVML_GPM_METRIC_PCIE_TX_PER_SEC = 20,
  NVML_GPM_METRIC_PCIE_RX_PER_SEC = 21,
  NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC = 60,
  NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC = 61,
  NVML_GPM_METRIC_MAX = 98,  // the size of nvmlGpmMetricsGet_t::metrics in version 1
};

typedef struct {
  unsigned int metricId;    // in
  nvmlReturn_t nvmlReturn;  // out: value is valid only when NVML_SUCCESS
  double value;             // out
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;  // out: may be null
} nvmlGpmMetric_t;

typedef struct {
  unsigned int version;     // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;  // entries of metrics[] to fill
  nvmlGpmSample_t sample1;  // the earlier sample
  nvmlGpmSample_t sample2;  // the later sample
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
constexpr unsigned NVML_GPM_METRICS_GET_VERSION = 1;

typedef struct {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
} nvmlGpmSupport_t;
constexpr unsigned NVML_GPM_SUPPORT_VERSION = 1;

// vGPU software licensing, as a vGPU guest's driver reports it.
typedef int nvmlGridLicenseFeatureCode_t;
enum : nvmlGridLicenseFeatureCode_t {
  NVML_GRID_LICENSE_FEATURE_CODE_UNKNOWN = 0,
  NVML_GRID_LICENSE_FEATURE_CODE_VGPU = 1,
  NVML_GRID_LICENSE_FEATURE_CODE_NVIDIA_RTX = 2,
  NVML_GRID_LICENSE_FEATURE_CODE_GAMING = 3,
  NVML_GRID_LICENSE_FEATURE_CODE_COMPUTE = 4,
};
constexpr unsigned NVML_GRID_LICENSE_BUFFER_SIZE = 128;
constexpr unsigned NVML_GRID_LICENSE_FEATURE_MAX_COUNT = 3;

typedef struct {
  unsigned int year;
  unsigned short month;
  unsigned short day;
  unsigned short hour;
  unsigned short min;
  unsigned short sec;
  unsigned char status;
} nvmlGridLicenseExpiry_t;

typedef struct {
  nvmlGridLicenseFeatureCode_t featureCode;
  unsigned int featureState;  // non-zero while the feature is licensed
  char licenseInfo[NVML_GRID_LICENSE_BUFFER_SIZE];
  char productName[NVML_GRID_LICENSE_BUFFER_SIZE];
  unsigned int featureEnabled;  // non-zero for the feature the guest uses
  nvmlGridLicenseExpiry_t licenseExpiry;
} nvmlGridLicensableFeature_t;

typedef struct {
  int isGridLicenseSupported;
  unsigned int licensableFeaturesCount;
  nvmlGridLicensableFeature_t gridLicensableFeatures[NVML_GRID_LICENSE_FEATURE_MAX_COUNT];
} nvmlGridLicensableFeatures_t;

static_assert(sizeof(nvmlDevice_t) == 8);
static_assert(sizeof(nvmlGridLicenseExpiry_t) == 16);
static_assert(sizeof(nvmlGridLicensableFeature_t) == 284);
static_assert(sizeof(nvmlGridLicensableFeatures_t) == 860);
static_assert(sizeof(nvmlMemory_t) == 24);
static_assert(sizeof(nvmlMemory_v2_t) == 40);
static_assert(kNvmlMemoryV2Version == 0x02000028);
static_assert(sizeof(nvmlPciInfo_t) == 68);
static_assert(offsetof(nvmlPciInfo_t, pciDeviceId) == 28);
static_assert(offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlUtilization_t) == 8);
static_assert(sizeof(nvmlProcessInfo_t) == 24);
static_assert(offsetof(nvmlProcessInfo_t, usedGpuMemory) == 8);
static_assert(sizeof(nvmlEventData_t) == 32);
static_assert(offsetof(nvmlEventData_t, eventData) == 16);
static_assert(sizeof(nvmlDeviceAttributes_t) == 40);
static_assert(sizeof(nvmlFieldValue_t) == 40);
static_assert(offsetof(nvmlFieldValue_t, valueType) == 24);
static_assert(offsetof(nvmlFieldValue_t, value) == 32);
static_assert(sizeof(nvmlGpuInstancePlacement_t) == 8);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_t) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_t, memorySizeMB) == 40);
static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 152);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, memorySizeMB) == 48);
static_assert(offsetof(nvmlGpuInstanceProfileInfo_v2_t, name) == 56);
static_assert(kNvmlGpuInstanceProfileInfoV2Version == 0x02000098);
static_assert(sizeof(nvmlGpuInstanceInfo_t) == 24);
static_assert(offsetof(nvmlGpuInstanceInfo_t, placement) == 16);
static_assert(sizeof(nvmlComputeInstancePlacement_t) == 8);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_t) == 36);
static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 136);
static_assert(offsetof(nvmlComputeInstanceProfileInfo_v2_t, name) == 40);
static_assert(kNvmlComputeInstanceProfileInfoV2Version == 0x02000088);
static_assert(sizeof(nvmlComputeInstanceInfo_t) == 32);
static_assert(offsetof(nvmlComputeInstanceInfo_t, id) == 16);
static_assert(offsetof(nvmlComputeInstanceInfo_t, placement) == 24);

static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32);
static_assert(offsetof(nvmlProcessUtilizationSample_t, timeStamp) == 8);
static_assert(offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16);
static_assert(sizeof(nvmlProcessUtilizationInfo_v1_t) == 40);
static_assert(offsetof(nvmlProcessUtilizationInfo_v1_t, pid) == 8);
static_assert(offsetof(nvmlProcessUtilizationInfo_v1_t, ofaUtil) == 32);
static_assert(sizeof(nvmlProcessesUtilizationInfo_v1_t) == 24);
static_assert(offsetof(nvmlProcessesUtilizationInfo_v1_t, lastSeenTimeStamp) == 8);
static_assert(offsetof(nvmlProcessesUtilizationInfo_v1_t, procUtilArray) == 16);
static_assert(kNvmlProcessesUtilizationInfoV1Version == 0x01000018);
static_assert(sizeof(nvmlGpmSample_t) == 8);
static_assert(sizeof(nvmlGpmMetric_t) == 40);
static_assert(offsetof(nvmlGpmMetric_t, value) == 8);
static_assert(offsetof(nvmlGpmMetric_t, metricInfo) == 16);
static_assert(offsetof(nvmlGpmMetricsGet_t, sample1) == 8);
static_assert(offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlGpmMetricsGet_t) == 24 + 98 * 40);
static_assert(sizeof(nvmlGpmSupport_t) == 8);

// ---- Entry points. Versioned names are listed beside the older names they fall back to. ----
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char* nvmlErrorString(nvmlReturn_t result);

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length);
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion);
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion);

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetCount(unsigned int* deviceCount);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index);
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length);
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length);
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device, nvmlBrandType_t* type);
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device, unsigned int* arch);
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor);
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t device, nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t device, unsigned int* node);
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory);
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory);
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization);
nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                             unsigned int* samplingPeriodUs);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power);
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t device, unsigned int* limit);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy);
nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device, unsigned int* speed);
nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t device, nvmlPstates_t* pState);
nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value);
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock);
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                       unsigned int* clock);
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t device, nvmlEnableState_t* current,
                                  nvmlEnableState_t* pending);
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts);
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                       unsigned int* pageCount, unsigned long long* addresses);
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred);
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values);
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode);
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t device,
                                             nvmlGpuVirtualizationMode_t* pVirtualMode);
nvmlReturn_t nvmlDeviceGetGridLicensableFeatures_v4(
    nvmlDevice_t device, nvmlGridLicensableFeatures_t* pGridLicensableFeatures);
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device, nvmlComputeMode_t* mode);
nvmlReturn_t nvmlDeviceSetComputeMode(nvmlDevice_t device, nvmlComputeMode_t mode);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos);

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode,
                                  unsigned int* pendingMode);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index,
                                                 nvmlDevice_t* migDevice);
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice);
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice,
                                                          nvmlDevice_t* device);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes);

nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode,
                                  nvmlReturn_t* activationStatus);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                 nvmlGpuInstanceProfileInfo_t* info);
nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t device, unsigned int profile,
                                                  nvmlGpuInstanceProfileInfo_v2_t* info);
nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device,
                                                           unsigned int profileId,
                                                           nvmlGpuInstancePlacement_t* placements,
                                                           unsigned int* count);
nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                       unsigned int* count);
nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                         nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                      const nvmlGpuInstancePlacement_t* placement,
                                                      nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance);
nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                       nvmlGpuInstance_t* gpuInstances, unsigned int* count);
// Not called by gpunode; the simulator exports it for NVIDIA's programs (go-nvlib).
nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id,
                                          nvmlGpuInstance_t* gpuInstance);
nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance,
                                                          unsigned int profile,
                                                          unsigned int engProfile,
                                                          nvmlComputeInstanceProfileInfo_t* info);
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(
    nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,
    nvmlComputeInstanceProfileInfo_v2_t* info);
nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance,
                                                  unsigned int profileId,
                                                  nvmlComputeInstance_t* computeInstance);
nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance);
nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance,
                                                unsigned int profileId,
                                                nvmlComputeInstance_t* computeInstances,
                                                unsigned int* count);
nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance,
                                           nvmlComputeInstanceInfo_t* info);
// Not called by gpunode; the simulator exports it for NVIDIA's programs (go-nvlib).
nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                   nvmlComputeInstance_t* computeInstance);

nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive);
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link,
                                                 nvmlPciInfo_t* pci);
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
                                                 nvmlGpuTopologyLevel_t* pathInfo);

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set);
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long* eventTypes);
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set);
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t* data, unsigned int timeoutms);
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set);

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t* utilization,
                                             unsigned int* processSamplesCount,
                                             unsigned long long lastSeenTimeStamp);
nvmlReturn_t nvmlDeviceGetProcessesUtilizationInfo(
    nvmlDevice_t device, nvmlProcessesUtilizationInfo_t* procesesUtilInfo);

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t device, nvmlGpmSupport_t* gpmSupport);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t* gpmSample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t device, nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t device, unsigned int gpuInstanceId,
                                 nvmlGpmSample_t gpmSample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t* metricsGet);

}  // extern "C"
