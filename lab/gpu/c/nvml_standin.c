/*
 * A stand-in libnvidia-ml.so.1 for the GPU-node harness: answers the NVML calls the device plugin and a
 * pod's probe make, for GPUs that are the /dev/nvidia<N> character devices it finds (so the plugin's
 * process, which sees every node, counts them all, and a container that was given one device counts one).
 * Init fails as the real library does when /dev/nvidiactl is absent. Written for the lab; not NVIDIA code.
 *
 * Environment: GANGSCHED_NVML_DEV_DIR (default /dev) where the device nodes are looked for.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10

#define DRIVER_VERSION "580.95.05"
#define CUDA_VERSION 13000
#define MAX_GPUS 64

typedef int nvmlReturn_t;

struct gpu {
    unsigned int minor;
    unsigned int index;
    char uuid[96];
    char name[96];
    char bus_id[32];
};
typedef struct gpu *nvmlDevice_t;
typedef void *nvmlEventSet_t;

typedef struct {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;

typedef struct {
    unsigned long long timestamp;
    unsigned long long eventType;
    nvmlDevice_t device;
    unsigned long long eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

static struct gpu gpus[MAX_GPUS];
static unsigned int gpu_count;
static int initialised;
static int event_set_token;

static const char *dev_dir(void) {
    const char *d = getenv("GANGSCHED_NVML_DEV_DIR");
    return d && *d ? d : "/dev";
}

static int cmp_uint(const void *a, const void *b) {
    unsigned int x = *(const unsigned int *)a, y = *(const unsigned int *)b;
    return x < y ? -1 : x > y;
}

static nvmlReturn_t discover(void) {
    char path[512];
    struct stat st;
    snprintf(path, sizeof path, "%s/nvidiactl", dev_dir());
    if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode))
        return NVML_ERROR_DRIVER_NOT_LOADED;
    DIR *d = opendir(dev_dir());
    if (!d)
        return NVML_ERROR_DRIVER_NOT_LOADED;
    unsigned int minors[MAX_GPUS];
    unsigned int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < MAX_GPUS) {
        const char *s = e->d_name;
        if (strncmp(s, "nvidia", 6) != 0 || s[6] < '0' || s[6] > '9')
            continue;
        char *end;
        unsigned long m = strtoul(s + 6, &end, 10);
        if (*end != '\0' || m > 254)
            continue;
        snprintf(path, sizeof path, "%s/%s", dev_dir(), s);
        if (stat(path, &st) != 0 || !S_ISCHR(st.st_mode))
            continue;
        minors[n++] = (unsigned int)m;
    }
    closedir(d);
    qsort(minors, n, sizeof minors[0], cmp_uint);
    for (unsigned int i = 0; i < n; i++) {
        struct gpu *g = &gpus[i];
        g->minor = minors[i];
        g->index = i;
        snprintf(g->uuid, sizeof g->uuid, "GPU-5e1f0000-0000-4000-8000-%012u", minors[i]);
        snprintf(g->name, sizeof g->name, "Stand-in GPU 80GB");
        snprintf(g->bus_id, sizeof g->bus_id, "00000000:%02X:00.0", 0x10 + minors[i]);
    }
    gpu_count = n;
    return NVML_SUCCESS;
}

static nvmlReturn_t copy_str(char *dst, unsigned int len, const char *src) {
    if (!dst)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(dst, src);
    return NVML_SUCCESS;
}

#define CHECK_DEVICE(dev)                                                                                    \
    do {                                                                                                     \
        if (!initialised)                                                                                    \
            return NVML_ERROR_UNINITIALIZED;                                                                 \
        if ((dev) < gpus || (dev) >= gpus + gpu_count)                                                       \
            return NVML_ERROR_INVALID_ARGUMENT;                                                              \
    } while (0)

nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    nvmlReturn_t r = discover();
    if (r == NVML_SUCCESS)
        initialised++;
    return r;
}
nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

nvmlReturn_t nvmlShutdown(void) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    initialised--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    default: return "Unknown Error";
    }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int len) { return copy_str(version, len, DRIVER_VERSION); }
nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int len) { return copy_str(version, len, "13." DRIVER_VERSION); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    if (!v)
        return NVML_ERROR_INVALID_ARGUMENT;
    *v = CUDA_VERSION;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = gpu_count;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *dev) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!dev || index >= gpu_count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *dev = &gpus[index];
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *dev) { return nvmlDeviceGetHandleByIndex_v2(index, dev); }

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *dev) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < gpu_count; i++)
        if (strcmp(gpus[i].uuid, uuid) == 0) {
            *dev = &gpus[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *dev) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!bus || !dev)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned int i = 0; i < gpu_count; i++)
        if (strcasecmp(gpus[i].bus_id, bus) == 0) {
            *dev = &gpus[i];
            return NVML_SUCCESS;
        }
    return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus, nvmlDevice_t *dev) { return nvmlDeviceGetHandleByPciBusId_v2(bus, dev); }

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned int len) {
    CHECK_DEVICE(dev);
    return copy_str(name, len, dev->name);
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned int len) {
    CHECK_DEVICE(dev);
    return copy_str(uuid, len, dev->uuid);
}
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char *serial, unsigned int len) {
    CHECK_DEVICE(dev);
    char s[32];
    snprintf(s, sizeof s, "0000000000%03u", dev->minor);
    return copy_str(serial, len, s);
}
nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned int *minor) {
    CHECK_DEVICE(dev);
    if (!minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *minor = dev->minor;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t dev, unsigned int *index) {
    CHECK_DEVICE(dev);
    if (!index)
        return NVML_ERROR_INVALID_ARGUMENT;
    *index = dev->index;
    return NVML_SUCCESS;
}

#define GIB (1024ULL * 1024ULL * 1024ULL)
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m) {
    CHECK_DEVICE(dev);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = 80 * GIB;
    m->used = 0;
    m->free = m->total;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m) {
    CHECK_DEVICE(dev);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    m->total = 80 * GIB;
    m->reserved = 0;
    m->used = 0;
    m->free = m->total;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *p) {
    CHECK_DEVICE(dev);
    if (!p)
        return NVML_ERROR_INVALID_ARGUMENT;
    memset(p, 0, sizeof *p);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", 0x10 + dev->minor);
    snprintf(p->busId, sizeof p->busId, "%s", dev->bus_id);
    p->bus = 0x10 + dev->minor;
    p->pciDeviceId = 0x233010de;
    p->pciSubSystemId = 0x16c110de;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(dev, p); }
nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *p) { return nvmlDeviceGetPciInfo_v3(dev, p); }

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor) {
    CHECK_DEVICE(dev);
    if (!major || !minor)
        return NVML_ERROR_INVALID_ARGUMENT;
    *major = 9;
    *minor = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t dev, unsigned int *arch) {
    CHECK_DEVICE(dev);
    if (!arch)
        return NVML_ERROR_INVALID_ARGUMENT;
    *arch = 9; /* Hopper */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t dev, int *brand) {
    CHECK_DEVICE(dev);
    if (!brand)
        return NVML_ERROR_INVALID_ARGUMENT;
    *brand = 14; /* NVIDIA */
    return NVML_SUCCESS;
}

/* MIG capable, MIG disabled */
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned int *current, unsigned int *pending) {
    CHECK_DEVICE(dev);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = 0;
    *pending = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned int *count) {
    CHECK_DEVICE(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned int index, nvmlDevice_t *mig) {
    (void)index;
    (void)mig;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t dev, unsigned int *is_mig) {
    CHECK_DEVICE(dev);
    if (!is_mig)
        return NVML_ERROR_INVALID_ARGUMENT;
    *is_mig = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t mig, nvmlDevice_t *dev) {
    (void)dev;
    CHECK_DEVICE(mig);
    return NVML_ERROR_INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode) {
    CHECK_DEVICE(dev);
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = 1;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *current, int *pending) {
    CHECK_DEVICE(dev);
    if (!current || !pending)
        return NVML_ERROR_INVALID_ARGUMENT;
    *current = 1;
    *pending = 1;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int error_type, int counter_type, unsigned long long *count) {
    (void)error_type;
    (void)counter_type;
    CHECK_DEVICE(dev);
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = 0;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode) {
    CHECK_DEVICE(dev);
    if (!mode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *mode = 0;
    return NVML_SUCCESS;
}

/* what a stand-in cannot answer */
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t dev, void *attrs) {
    (void)attrs;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t dev, void *attrs) { return nvmlDeviceGetAttributes_v2(dev, attrs); }
nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t dev, void *info) {
    (void)info;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t dev, void *info) { return nvmlDeviceGetGpuFabricInfo(dev, info); }
nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t dev, unsigned int *node) {
    (void)node;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_SUPPORTED;
}

/* health events: the types the plugin watches are supported, none ever happens (a wait times out) */
nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    if (!initialised)
        return NVML_ERROR_UNINITIALIZED;
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    *set = &event_set_token;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    (void)set;
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t dev, unsigned long long *types) {
    CHECK_DEVICE(dev);
    if (!types)
        return NVML_ERROR_INVALID_ARGUMENT;
    *types = 0x1 | 0x2 | 0x8; /* single and double bit ECC errors, critical Xid errors */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set) {
    (void)types;
    CHECK_DEVICE(dev);
    return set ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    (void)set;
    (void)data;
    usleep((useconds_t)timeout_ms * 1000);
    return NVML_ERROR_TIMEOUT;
}
nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    return nvmlEventSetWait_v2(set, data, timeout_ms);
}

/* topology, for the plugin's preferred allocation: the GPUs share a CPU socket and have no NVLink */
nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t dev1, nvmlDevice_t dev2, int *level) {
    CHECK_DEVICE(dev1);
    CHECK_DEVICE(dev2);
    if (!level)
        return NVML_ERROR_INVALID_ARGUMENT;
    *level = dev1 == dev2 ? 0 : 40; /* NVML_TOPOLOGY_INTERNAL, NVML_TOPOLOGY_NODE */
    return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned int link, int *active) {
    (void)link;
    (void)active;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *p) {
    (void)link;
    (void)p;
    CHECK_DEVICE(dev);
    return NVML_ERROR_NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t dev, unsigned int link, nvmlPciInfo_t *p) {
    return nvmlDeviceGetNvLinkRemotePciInfo_v2(dev, link, p);
}
nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t dev1, nvmlDevice_t dev2, int index, int *status) {
    (void)index;
    CHECK_DEVICE(dev1);
    CHECK_DEVICE(dev2);
    if (!status)
        return NVML_ERROR_INVALID_ARGUMENT;
    *status = 4; /* NVML_P2P_STATUS_NOT_SUPPORTED */
    return NVML_SUCCESS;
}
