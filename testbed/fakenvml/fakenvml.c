/*
 * fakenvml.c - a SIMULATOR of NVIDIA's libnvidia-ml.so.1, for tests only.
 *
 * This is not NVIDIA code and touches no GPU. It exports the C ABI that the
 * real, unmodified pynvml (nvidia-ml-py) loads through LD_LIBRARY_PATH, and
 * answers from a text description of one node's GPUs:
 *
 *   FAKE_NVML_CONFIG  node description (key=value lines), written by
 *                     testbed/fakenvml_config.py from the test bed's own MIG
 *                     tables (testbed/mig_tables: NVIDIA's published -lgip and
 *                     -lgipp data), never from the collection's catalog.
 *   FAKE_NVML_STATE   optional; MIG mode, GPU/compute instances and processes.
 *                     Every call re-reads it under flock(FAKE_NVML_STATE.lock)
 *                     and every write rewrites it atomically (tmp + rename), so
 *                     the next process sees what the last one created, as with
 *                     a real driver. Without it the state lives in the process.
 *   FAKE_NVML_LOG     optional; one line per state-changing call (name,
 *                     arguments, return code): tests use it to prove that a
 *                     module made no NVML writes.
 *   FAKE_NVML_DEBUG   optional; configuration errors go to stderr.
 *
 * What it models (see docs/testbed-fakenvml.md for the full list):
 *  - init/shutdown with reference counting; calls before init return
 *    NVML_ERROR_UNINITIALIZED; no configuration = NVML_ERROR_DRIVER_NOT_LOADED.
 *  - identity: name, UUID, brand, PCI info, memory, architecture, compute
 *    capability, index, minor number; driver, NVML and CUDA driver versions.
 *  - MIG mode get/set: Ampere (catalog mig_mode_needs_reset) only sets the
 *    pending mode and reports NVML_ERROR_RESET_REQUIRED as activation status;
 *    Hopper and later switch at once. With processes on the GPU the mode stays
 *    pending with activation status NVML_ERROR_IN_USE. Disabling MIG while GPU
 *    instances exist returns NVML_ERROR_IN_USE. A GPU reset (applying the
 *    pending mode, dropping every instance and process) is done by the test
 *    bed (testbed/fakenvml_config.py reset), not through NVML.
 *  - GPU-instance profiles (v1 and V/v2 info, by index and by id), possible
 *    placements (all placements, in memory slices, whatever is occupied, as
 *    _v2 documents), remaining capacity, create (first free allowed start, or
 *    the given placement), list, get by id, info, destroy. Overlap, count and
 *    compute-slice limits return NVML_ERROR_INSUFFICIENT_RESOURCES; a
 *    placement that is not an allowed start returns NVML_ERROR_INVALID_ARGUMENT.
 *    With engines_total configured, the copy engines, decoders, encoders,
 *    JPEG and OFA units of all GPU instances together never exceed the GPU's
 *    (NVML_ERROR_INSUFFICIENT_RESOURCES): e.g. the one JPEG/OFA unit of an
 *    A30 goes to one +me instance, and a +me.all instance leaves the others
 *    only -me profiles (nvml.h on NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME).
 *  - compute instances: profiles (1..N compute slices of the GPU instance),
 *    create, list, get by id, info, destroy; a GPU instance with compute
 *    instances or processes cannot be destroyed (NVML_ERROR_IN_USE).
 *  - MIG device handles: max count, handle by index, UUID ("MIG-..."), name,
 *    memory, GI/CI ids, parent handle, lookup by UUID.
 *  - running compute processes (v2/v3 structs) as listed in the state file.
 *  - nvmlDeviceGetGpuFabricInfo and ...InfoV (v2 and v3 structs): cluster
 *    UUID, clique id, state, status; NVML_ERROR_NOT_SUPPORTED where the
 *    configured GPU has no multi-node NVLink.
 * What it does not model: clocks, power, ECC, NVLink links, events, vGPU,
 * accounting, GPU-instance ids and default placements chosen exactly as the
 * real driver does. Every other
 * function pynvml looks up is exported as a weak stub (generated from
 * nvml_symbols.txt) that returns NVML_ERROR_NOT_SUPPORTED.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_RESET_REQUIRED = 16, NVML_ERROR_IN_USE = 19, NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_UNKNOWN = 999,
};

/* ---- structs, laid out exactly as nvml.h / pynvml declare them ---- */
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int start, size; } nvmlPlacement_t;
typedef struct {
    unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount,
        copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[96];
} nvmlGpuInstanceProfileInfo_v2_t;
typedef struct { void *device; unsigned int id, profileId; nvmlPlacement_t placement; } nvmlGpuInstanceInfo_t;
typedef struct {
    unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;
typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
    char name[96];
} nvmlComputeInstanceProfileInfo_v2_t;
typedef struct {
    void *device, *gpuInstance;
    unsigned int id, profileId;
    nvmlPlacement_t placement;
} nvmlComputeInstanceInfo_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct {
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId, state;
} nvmlGpuFabricInfo_t;
typedef struct {
    unsigned int version;
    unsigned char clusterUuid[16];
    nvmlReturn_t status;
    unsigned int cliqueId, state, healthMask;
    unsigned char healthSummary; /* v3 only */
} nvmlGpuFabricInfo_v3_t;

#define STRUCT_VERSION(size, ver) ((unsigned int)((size) | ((ver) << 24)))
_Static_assert(sizeof(nvmlGpuInstanceProfileInfo_v2_t) == 0x98, "GI profile info v2 layout");
_Static_assert(sizeof(nvmlComputeInstanceProfileInfo_v2_t) == 0x88, "CI profile info v2 layout");
_Static_assert(sizeof(nvmlMemory_v2_t) == 0x28, "memory v2 layout");
_Static_assert(sizeof(nvmlGpuFabricInfo_v3_t) == 0x28, "fabric info v3 layout");
#define GI_PROFILE_INFO_V2 STRUCT_VERSION(0x98, 2)
#define CI_PROFILE_INFO_V2 STRUCT_VERSION(0x88, 2)
#define MEMORY_V2 STRUCT_VERSION(0x28, 2)
#define FABRIC_INFO_V2 STRUCT_VERSION(0x24, 2)
#define FABRIC_INFO_V3 STRUCT_VERSION(0x28, 3)

/* ---- configuration (static) and state (persisted) ---- */
#define MAXDEV 16
#define MAXPROF 18   /* NVML_GPU_INSTANCE_PROFILE_COUNT */
#define MAXGI 16
#define MAXCI 8
#define MAXPROC 64
#define MAXSTARTS 16
#define NCIPROF 7    /* NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE .. 6_SLICE */
static const unsigned ci_prof_slices[NCIPROF] = {1, 2, 3, 4, 7, 8, 6};

struct profile {
    int valid;
    unsigned index, id, slices, mem_slices, instances, sm, ce, dec, enc, jpeg, ofa, nstarts;
    unsigned long long mem_mib;
    unsigned starts[MAXSTARTS];
    char name[64];
};

struct devcfg {
    char name[96], uuid[96], bus_id[32];
    unsigned pci_device_id, pci_subsystem_id, domain, bus, device;
    unsigned long long mem_mib;
    int arch, brand, cc_major, cc_minor, minor;
    int mig_capable, mig_needs_reset, mig_mode, mig_pending;
    unsigned mem_slices, compute_slices, sm;
    int has_engines;            /* engines_total given: enforce the GPU's engine budget */
    unsigned eng_total[5];      /* copy engines, decoders, encoders, JPEG, OFA */
    int fabric;                 /* 1: multi-node NVLink fabric info supported */
    unsigned char cluster_uuid[16];
    unsigned clique_id, fabric_state, fabric_health_summary;
    int fabric_status;
    struct profile prof[MAXPROF];
};

struct config {
    char driver[80], nvml[80];
    int cuda, ndev, init_return;
    struct devcfg dev[MAXDEV];
};

struct gi { int used; unsigned profile_id, start, size; };
struct ci { int used; unsigned profile_id, start, size; };
struct proc { unsigned pid; unsigned long long mib; int gi, ci; };
struct devstate {
    int cur, pend, nproc;
    struct gi gi[MAXGI];
    struct ci ci[MAXGI][MAXCI];
    struct proc proc[MAXPROC];
};

static struct config cfg;
static struct devstate st[MAXDEV];
static int init_count;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static char state_path[4096], lock_path[4200], log_path[4096];
static int lock_fd = -1;

/* ---- handles: pointers into static tables, so they stay valid across state reloads ---- */
enum { K_DEV = 1, K_GI, K_CI, K_MIG };
#define MAGIC 0x4e564d4cu
struct fh { unsigned magic; int kind, dev, gi, ci; };
static struct fh h_dev[MAXDEV], h_gi[MAXDEV][MAXGI], h_ci[MAXDEV][MAXGI][MAXCI], h_mig[MAXDEV][MAXGI][MAXCI];

static void init_handles(void) {
    for (int d = 0; d < MAXDEV; d++) {
        h_dev[d] = (struct fh){MAGIC, K_DEV, d, -1, -1};
        for (int g = 0; g < MAXGI; g++) {
            h_gi[d][g] = (struct fh){MAGIC, K_GI, d, g, -1};
            for (int c = 0; c < MAXCI; c++) {
                h_ci[d][g][c] = (struct fh){MAGIC, K_CI, d, g, c};
                h_mig[d][g][c] = (struct fh){MAGIC, K_MIG, d, g, c};
            }
        }
    }
}

#define IN_TABLE(p, t) ((const char *)(p) >= (const char *)(t) && (const char *)(p) < (const char *)(t) + sizeof(t))
static struct fh *decode(const void *p) {
    if (!p) return NULL;
    if (!(IN_TABLE(p, h_dev) || IN_TABLE(p, h_gi) || IN_TABLE(p, h_ci) || IN_TABLE(p, h_mig))) return NULL;
    struct fh *h = (struct fh *)p;
    if (h->magic != MAGIC || h->dev < 0 || h->dev >= cfg.ndev) return NULL;
    return h;
}

/* ---- small helpers ---- */
static void debug(const char *fmt, ...) {
    if (!getenv("FAKE_NVML_DEBUG")) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("fakenvml: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void copy_str(char *dst, size_t n, const char *src) {
    if (n) snprintf(dst, n, "%s", src);
}

static void log_call(const char *fmt, ...) {
    if (!log_path[0]) return;
    FILE *f = fopen(log_path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}

static struct profile *prof_by_id(int d, unsigned id) {
    for (int i = 0; i < MAXPROF; i++)
        if (cfg.dev[d].prof[i].valid && cfg.dev[d].prof[i].id == id) return &cfg.dev[d].prof[i];
    return NULL;
}

static int parse_uuid_bytes(const char *s, unsigned char out[16]) {
    int n = 0;
    for (const char *p = s; *p && n < 32; p++) {
        int v;
        if (*p == '-') continue;
        if (*p >= '0' && *p <= '9') v = *p - '0';
        else if (*p >= 'a' && *p <= 'f') v = *p - 'a' + 10;
        else if (*p >= 'A' && *p <= 'F') v = *p - 'A' + 10;
        else return -1;
        if (n % 2 == 0) out[n / 2] = (unsigned char)(v << 4);
        else out[n / 2] |= (unsigned char)v;
        n++;
    }
    return n == 32 ? 0 : -1;
}

/* "<index> <id> <slices> <mem_slices> <instances> <mem_mib> <sm> <ce> <dec> <enc> <jpeg> <ofa> <starts> <name>" */
static int parse_profile(struct devcfg *dc, const char *v) {
    struct profile p;
    memset(&p, 0, sizeof p);
    char starts[128], name[64];
    if (sscanf(v, "%u %u %u %u %u %llu %u %u %u %u %u %u %127s %63s", &p.index, &p.id, &p.slices,
               &p.mem_slices, &p.instances, &p.mem_mib, &p.sm, &p.ce, &p.dec, &p.enc, &p.jpeg, &p.ofa,
               starts, name) != 14 || p.index >= MAXPROF)
        return -1;
    for (char *tok = strtok(starts, ","); tok && p.nstarts < MAXSTARTS; tok = strtok(NULL, ","))
        p.starts[p.nstarts++] = (unsigned)strtoul(tok, NULL, 10);
    copy_str(p.name, sizeof p.name, name);
    p.valid = 1;
    dc->prof[p.index] = p;
    return 0;
}

static int set_dev_key(struct devcfg *dc, const char *k, const char *v) {
    if (!strcmp(k, "name")) copy_str(dc->name, sizeof dc->name, v);
    else if (!strcmp(k, "uuid")) copy_str(dc->uuid, sizeof dc->uuid, v);
    else if (!strcmp(k, "pci_bus_id")) {
        copy_str(dc->bus_id, sizeof dc->bus_id, v);
        if (sscanf(v, "%x:%x:%x", &dc->domain, &dc->bus, &dc->device) != 3) return -1;
    } else if (!strcmp(k, "pci_device_id")) dc->pci_device_id = (unsigned)strtoul(v, NULL, 0);
    else if (!strcmp(k, "pci_subsystem_id")) dc->pci_subsystem_id = (unsigned)strtoul(v, NULL, 0);
    else if (!strcmp(k, "memory_mib")) dc->mem_mib = strtoull(v, NULL, 10);
    else if (!strcmp(k, "architecture")) dc->arch = atoi(v);
    else if (!strcmp(k, "brand")) dc->brand = atoi(v);
    else if (!strcmp(k, "cuda_compute_capability")) {
        if (sscanf(v, "%d.%d", &dc->cc_major, &dc->cc_minor) != 2) return -1;
    } else if (!strcmp(k, "minor_number")) dc->minor = atoi(v);
    else if (!strcmp(k, "sm_count")) dc->sm = (unsigned)atoi(v);
    else if (!strcmp(k, "mig_capable")) dc->mig_capable = atoi(v);
    else if (!strcmp(k, "mig_needs_reset")) dc->mig_needs_reset = atoi(v);
    else if (!strcmp(k, "mig_mode")) dc->mig_mode = atoi(v);
    else if (!strcmp(k, "mig_pending")) dc->mig_pending = atoi(v);
    else if (!strcmp(k, "memory_slices")) dc->mem_slices = (unsigned)atoi(v);
    else if (!strcmp(k, "compute_slices")) dc->compute_slices = (unsigned)atoi(v);
    else if (!strcmp(k, "fabric")) dc->fabric = atoi(v);
    else if (!strcmp(k, "fabric_cluster_uuid")) return parse_uuid_bytes(v, dc->cluster_uuid);
    else if (!strcmp(k, "fabric_clique_id")) dc->clique_id = (unsigned)strtoul(v, NULL, 0);
    else if (!strcmp(k, "fabric_state")) dc->fabric_state = (unsigned)atoi(v);
    else if (!strcmp(k, "fabric_status")) dc->fabric_status = atoi(v);
    else if (!strcmp(k, "fabric_health_summary")) dc->fabric_health_summary = (unsigned)atoi(v);
    else if (!strcmp(k, "gi_profile")) return parse_profile(dc, v);
    else if (!strcmp(k, "engines_total")) {
        if (sscanf(v, "%u %u %u %u %u", &dc->eng_total[0], &dc->eng_total[1], &dc->eng_total[2], &dc->eng_total[3],
                   &dc->eng_total[4]) != 5) return -1;
        dc->has_engines = 1;
    }
    else return -1;
    return 0;
}

static int load_config(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        debug("cannot open FAKE_NVML_CONFIG %s: %s", path, strerror(errno));
        return -1;
    }
    memset(&cfg, 0, sizeof cfg);
    copy_str(cfg.driver, sizeof cfg.driver, "550.127.05");
    copy_str(cfg.nvml, sizeof cfg.nvml, "12.550.127.05");
    cfg.cuda = 12040;
    char line[1024];
    int lineno = 0, bad = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || line[0] == '#') continue;
        char *eq = strchr(line, '=');
        if (!eq) { bad = lineno; break; }
        *eq = 0;
        const char *k = line, *v = eq + 1;
        int d;
        char sub[64];
        if (!strcmp(k, "driver_version")) copy_str(cfg.driver, sizeof cfg.driver, v);
        else if (!strcmp(k, "nvml_version")) copy_str(cfg.nvml, sizeof cfg.nvml, v);
        else if (!strcmp(k, "cuda_driver_version")) cfg.cuda = atoi(v);
        else if (!strcmp(k, "init_return")) cfg.init_return = atoi(v);
        else if (!strcmp(k, "device_count")) {
            cfg.ndev = atoi(v);
            if (cfg.ndev < 0 || cfg.ndev > MAXDEV) { bad = lineno; break; }
        } else if (sscanf(k, "device.%d.%63s", &d, sub) == 2 && d >= 0 && d < MAXDEV) {
            if (set_dev_key(&cfg.dev[d], sub, v)) { bad = lineno; break; }
        } else { bad = lineno; break; }
    }
    fclose(f);
    if (bad) {
        debug("%s:%d: cannot parse this line", path, bad);
        return -1;
    }
    return 0;
}

/* ---- state file: "mig D CUR PEND", "gi D ID PROFILE_ID START SIZE",
 *      "ci D GI ID PROFILE_ID START SIZE", "proc D PID MIB GI CI" ---- */
static void state_defaults(void) {
    memset(st, 0, sizeof st);
    for (int d = 0; d < cfg.ndev; d++) {
        st[d].cur = cfg.dev[d].mig_mode;
        st[d].pend = cfg.dev[d].mig_pending;
    }
}

static void load_state(void) {
    if (!state_path[0]) return;  /* in-process state */
    state_defaults();
    FILE *f = fopen(state_path, "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        int d, a, b, c, e, g;
        unsigned long long mib;
        if (sscanf(line, "mig %d %d %d", &d, &a, &b) == 3 && d >= 0 && d < cfg.ndev) {
            st[d].cur = a;
            st[d].pend = b;
        } else if (sscanf(line, "gi %d %d %d %d %d", &d, &a, &b, &c, &e) == 5 && d >= 0 && d < cfg.ndev &&
                   a >= 0 && a < MAXGI) {
            st[d].gi[a] = (struct gi){1, (unsigned)b, (unsigned)c, (unsigned)e};
        } else if (sscanf(line, "ci %d %d %d %d %d %d", &d, &g, &a, &b, &c, &e) == 6 && d >= 0 &&
                   d < cfg.ndev && g >= 0 && g < MAXGI && a >= 0 && a < MAXCI) {
            st[d].ci[g][a] = (struct ci){1, (unsigned)b, (unsigned)c, (unsigned)e};
        } else if (sscanf(line, "proc %d %d %llu %d %d", &d, &a, &mib, &b, &c) == 5 && d >= 0 &&
                   d < cfg.ndev && st[d].nproc < MAXPROC) {
            st[d].proc[st[d].nproc++] = (struct proc){(unsigned)a, mib, b, c};
        }
    }
    fclose(f);
}

static int save_state(void) {
    if (!state_path[0]) return 0;
    char tmp[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", state_path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "# fake libnvidia-ml state (simulator; testbed/fakenvml)\n");
    for (int d = 0; d < cfg.ndev; d++) {
        fprintf(f, "mig %d %d %d\n", d, st[d].cur, st[d].pend);
        for (int g = 0; g < MAXGI; g++) {
            if (!st[d].gi[g].used) continue;
            fprintf(f, "gi %d %d %u %u %u\n", d, g, st[d].gi[g].profile_id, st[d].gi[g].start, st[d].gi[g].size);
            for (int c = 0; c < MAXCI; c++)
                if (st[d].ci[g][c].used)
                    fprintf(f, "ci %d %d %d %u %u %u\n", d, g, c, st[d].ci[g][c].profile_id,
                            st[d].ci[g][c].start, st[d].ci[g][c].size);
        }
        for (int p = 0; p < st[d].nproc; p++)
            fprintf(f, "proc %d %u %llu %d %d\n", d, st[d].proc[p].pid, st[d].proc[p].mib, st[d].proc[p].gi,
                    st[d].proc[p].ci);
    }
    if (fflush(f) || fsync(fileno(f))) { fclose(f); unlink(tmp); return -1; }
    fclose(f);
    return rename(tmp, state_path);
}

static int initialized(void) { return init_count > 0; }

/* Every call runs between enter() and leave(): process mutex + file lock + fresh state. */
static nvmlReturn_t enter(int exclusive) {
    pthread_mutex_lock(&mu);
    if (!initialized()) {
        pthread_mutex_unlock(&mu);
        return NVML_ERROR_UNINITIALIZED;
    }
    if (lock_path[0]) {
        lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (lock_fd >= 0) flock(lock_fd, exclusive ? LOCK_EX : LOCK_SH);
    }
    load_state();
    return NVML_SUCCESS;
}

static nvmlReturn_t leave(nvmlReturn_t rc, int dirty) {
    if (dirty && save_state()) rc = NVML_ERROR_UNKNOWN;
    if (lock_fd >= 0) {
        flock(lock_fd, LOCK_UN);
        close(lock_fd);
        lock_fd = -1;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

/* ---- init / system ---- */
static nvmlReturn_t do_init(void) {
    pthread_mutex_lock(&mu);
    if (init_count > 0) {
        init_count++;
        pthread_mutex_unlock(&mu);
        return NVML_SUCCESS;
    }
    const char *conf = getenv("FAKE_NVML_CONFIG");
    if (!conf || !conf[0] || load_config(conf)) {
        pthread_mutex_unlock(&mu);
        return NVML_ERROR_DRIVER_NOT_LOADED;
    }
    if (cfg.init_return) {
        pthread_mutex_unlock(&mu);
        return cfg.init_return;
    }
    init_handles();
    const char *s = getenv("FAKE_NVML_STATE");
    state_path[0] = lock_path[0] = 0;
    if (s && s[0]) {
        copy_str(state_path, sizeof state_path, s);
        snprintf(lock_path, sizeof lock_path, "%s.lock", s);
    } else {
        state_defaults();
    }
    const char *l = getenv("FAKE_NVML_LOG");
    copy_str(log_path, sizeof log_path, l ? l : "");
    init_count = 1;
    pthread_mutex_unlock(&mu);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { (void)flags; return do_init(); }
API nvmlReturn_t nvmlInit_v2(void) { return do_init(); }
API nvmlReturn_t nvmlInit(void) { return do_init(); }

API nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&mu);
    nvmlReturn_t rc = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
    if (init_count > 0) init_count--;
    pthread_mutex_unlock(&mu);
    return rc;
}

API const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t put_str(char *buf, unsigned int len, const char *s) {
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    return leave(put_str(version, length, cfg.driver), 0);
}

API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    return leave(put_str(version, length, cfg.nvml), 0);
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    if (!v) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *v = cfg.cuda;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

/* ---- devices ---- */
static int gi_used(int d, int g) { return g >= 0 && g < MAXGI && st[d].gi[g].used; }
static int ci_used(int d, int g, int c) { return gi_used(d, g) && c >= 0 && c < MAXCI && st[d].ci[g][c].used; }

/* A live handle of one of the kinds in mask (1 << K_*), or NULL. */
static struct fh *live(const void *p, int mask) {
    struct fh *h = decode(p);
    if (!h || !(mask & (1 << h->kind))) return NULL;
    if ((h->kind == K_GI) && !gi_used(h->dev, h->gi)) return NULL;
    if ((h->kind == K_CI || h->kind == K_MIG) && !ci_used(h->dev, h->gi, h->ci)) return NULL;
    return h;
}
#define M_DEV (1 << K_DEV)
#define M_MIG (1 << K_MIG)
#define M_GI (1 << K_GI)
#define M_CI (1 << K_CI)

static void mig_uuid(int d, int g, int c, char *out, size_t n) {
    /* Deterministic per (GPU UUID, GI id, CI id); the real driver makes a new one per creation. */
    char buf[160];
    unsigned long long h1 = 1469598103934665603ULL, h2 = 0x84222325cbf29ce4ULL;
    snprintf(buf, sizeof buf, "%s/%d/%d", cfg.dev[d].uuid, g, c);
    for (const char *p = buf; *p; p++) {
        h1 = (h1 ^ (unsigned char)*p) * 1099511628211ULL;
        h2 = (h2 ^ (unsigned char)*p) * 0x100000001b3ULL + 0x9e3779b97f4a7c15ULL;
    }
    snprintf(out, n, "MIG-%08x-%04x-4%03x-%04x-%012llx", (unsigned)(h1 >> 32), (unsigned)(h1 >> 16) & 0xffff,
             (unsigned)h1 & 0xfff, (unsigned)((h2 >> 48) & 0x3fff) | 0x8000, h2 & 0xffffffffffffULL);
}

API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    if (!count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *count = (unsigned)cfg.ndev;
    return leave(NVML_SUCCESS, 0);
}
API nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **device) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    if (!device || index >= (unsigned)cfg.ndev) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *device = &h_dev[index];
    return leave(NVML_SUCCESS, 0);
}
API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, void **device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, void **device) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    if (!uuid || !device) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    char mu_[96];
    for (int d = 0; d < cfg.ndev; d++) {
        if (!strcmp(uuid, cfg.dev[d].uuid)) {
            *device = &h_dev[d];
            return leave(NVML_SUCCESS, 0);
        }
        for (int g = 0; g < MAXGI; g++)
            for (int c = 0; c < MAXCI; c++)
                if (ci_used(d, g, c)) {
                    mig_uuid(d, g, c, mu_, sizeof mu_);
                    if (!strcmp(uuid, mu_)) {
                        *device = &h_mig[d][g][c];
                        return leave(NVML_SUCCESS, 0);
                    }
                }
    }
    return leave(NVML_ERROR_NOT_FOUND, 0);
}

API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus_id, void **device) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    unsigned dom, bus, dev;
    if (!bus_id || !device || sscanf(bus_id, "%x:%x:%x", &dom, &bus, &dev) != 3)
        return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    for (int d = 0; d < cfg.ndev; d++)
        if (cfg.dev[d].domain == dom && cfg.dev[d].bus == bus && cfg.dev[d].device == dev) {
            *device = &h_dev[d];
            return leave(NVML_SUCCESS, 0);
        }
    return leave(NVML_ERROR_NOT_FOUND, 0);
}

static const char *gi_name(int d, int g) {
    struct profile *p = prof_by_id(d, st[d].gi[g].profile_id);
    return p ? p->name : "unknown";
}

API nvmlReturn_t nvmlDeviceGetName(void *device, char *name, unsigned int length) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (h->kind == K_DEV) return leave(put_str(name, length, cfg.dev[h->dev].name), 0);
    char buf[200];
    struct ci *ci = &st[h->dev].ci[h->gi][h->ci];
    struct profile *gp = prof_by_id(h->dev, st[h->dev].gi[h->gi].profile_id);
    if (gp && ci->size < gp->slices)  /* a compute instance smaller than its GPU instance */
        snprintf(buf, sizeof buf, "%s MIG %uc.%s", cfg.dev[h->dev].name, ci->size, gi_name(h->dev, h->gi));
    else
        snprintf(buf, sizeof buf, "%s MIG %s", cfg.dev[h->dev].name, gi_name(h->dev, h->gi));
    return leave(put_str(name, length, buf), 0);
}

API nvmlReturn_t nvmlDeviceGetUUID(void *device, char *uuid, unsigned int length) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (h->kind == K_DEV) return leave(put_str(uuid, length, cfg.dev[h->dev].uuid), 0);
    char buf[96];
    mig_uuid(h->dev, h->gi, h->ci, buf, sizeof buf);
    return leave(put_str(uuid, length, buf), 0);
}

API nvmlReturn_t nvmlDeviceGetBrand(void *device, int *type) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !type) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *type = cfg.dev[h->dev].brand;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetIndex(void *device, unsigned int *index) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !index) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *index = (unsigned)h->dev;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetMinorNumber(void *device, unsigned int *minor) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !minor) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *minor = (unsigned)cfg.dev[h->dev].minor;
    return leave(NVML_SUCCESS, 0);
}

static void fill_pci(int d, nvmlPciInfo_t *pci) {
    struct devcfg *dc = &cfg.dev[d];
    memset(pci, 0, sizeof *pci);
    pci->domain = dc->domain;
    pci->bus = dc->bus;
    pci->device = dc->device;
    pci->pciDeviceId = dc->pci_device_id;
    pci->pciSubSystemId = dc->pci_subsystem_id;
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%04X:%02X:%02X.0", dc->domain & 0xffff, dc->bus, dc->device);
    snprintf(pci->busId, sizeof pci->busId, "%08X:%02X:%02X.0", dc->domain, dc->bus, dc->device);
}

API nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *device, nvmlPciInfo_t *pci) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !pci) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    fill_pci(h->dev, pci);
    return leave(NVML_SUCCESS, 0);
}
API nvmlReturn_t nvmlDeviceGetPciInfo_v2(void *device, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(device, pci); }
API nvmlReturn_t nvmlDeviceGetPciInfo(void *device, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(device, pci); }

static unsigned long long used_mib(int d, int g, int c) {
    unsigned long long sum = 0;
    for (int p = 0; p < st[d].nproc; p++)
        if (g < 0 || (st[d].proc[p].gi == g && st[d].proc[p].ci == c)) sum += st[d].proc[p].mib;
    return sum;
}

static void memory_of(struct fh *h, unsigned long long *total, unsigned long long *used) {
    if (h->kind == K_DEV) {
        *total = cfg.dev[h->dev].mem_mib << 20;
        *used = used_mib(h->dev, -1, -1) << 20;
    } else {
        struct profile *p = prof_by_id(h->dev, st[h->dev].gi[h->gi].profile_id);
        *total = (p ? p->mem_mib : 0) << 20;
        *used = used_mib(h->dev, h->gi, h->ci) << 20;
    }
    if (*used > *total) *used = *total;
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo(void *device, nvmlMemory_t *mem) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !mem) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    memory_of(h, &mem->total, &mem->used);
    mem->free = mem->total - mem->used;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(void *device, nvmlMemory_v2_t *mem) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !mem) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (mem->version != MEMORY_V2) return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 0);
    memory_of(h, &mem->total, &mem->used);
    mem->reserved = 0;
    mem->free = mem->total - mem->used;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetArchitecture(void *device, unsigned int *arch) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !arch) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *arch = (unsigned)cfg.dev[h->dev].arch;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(void *device, int *major, int *minor) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !major || !minor) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *major = cfg.dev[h->dev].cc_major;
    *minor = cfg.dev[h->dev].cc_minor;
    return leave(NVML_SUCCESS, 0);
}

/* ---- processes ---- */
static nvmlReturn_t list_processes(void *device, unsigned int *count, nvmlProcessInfo_t *infos) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    struct devstate *s = &st[h->dev];
    unsigned n = 0;
    for (int p = 0; p < s->nproc; p++)
        if (h->kind == K_DEV || (s->proc[p].gi == h->gi && s->proc[p].ci == h->ci)) n++;
    if (!infos || *count < n) {
        *count = n;
        return leave(n ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS, 0);
    }
    unsigned i = 0;
    for (int p = 0; p < s->nproc; p++) {
        if (!(h->kind == K_DEV || (s->proc[p].gi == h->gi && s->proc[p].ci == h->ci))) continue;
        infos[i].pid = s->proc[p].pid;
        infos[i].usedGpuMemory = s->proc[p].mib << 20;
        infos[i].gpuInstanceId = s->proc[p].gi < 0 ? 0xFFFFFFFFu : (unsigned)s->proc[p].gi;
        infos[i].computeInstanceId = s->proc[p].ci < 0 ? 0xFFFFFFFFu : (unsigned)s->proc[p].ci;
        i++;
    }
    *count = n;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(void *d, unsigned int *c, nvmlProcessInfo_t *i) {
    return list_processes(d, c, i);
}
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(void *d, unsigned int *c, nvmlProcessInfo_t *i) {
    return list_processes(d, c, i);
}
/* The simulator has no graphics or MPS clients. */
static nvmlReturn_t no_processes(void *device, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    if (!live(device, M_DEV | M_MIG) || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *count = 0;
    return leave(NVML_SUCCESS, 0);
}
API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(void *d, unsigned int *c, void *i) { (void)i; return no_processes(d, c); }
API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(void *d, unsigned int *c, void *i) { (void)i; return no_processes(d, c); }
API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(void *d, unsigned int *c, void *i) { (void)i; return no_processes(d, c); }
API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(void *d, unsigned int *c, void *i) { (void)i; return no_processes(d, c); }

/* ---- MIG mode ---- */
API nvmlReturn_t nvmlDeviceGetMigMode(void *device, unsigned int *current, unsigned int *pending) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !current || !pending) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (!cfg.dev[h->dev].mig_capable) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    *current = (unsigned)st[h->dev].cur;
    *pending = (unsigned)st[h->dev].pend;
    return leave(NVML_SUCCESS, 0);
}

static int gi_count(int d) {
    int n = 0;
    for (int g = 0; g < MAXGI; g++) n += st[d].gi[g].used;
    return n;
}

API nvmlReturn_t nvmlDeviceSetMigMode(void *device, unsigned int mode, nvmlReturn_t *activation) {
    nvmlReturn_t rc = enter(1);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    int d = h ? h->dev : -1, dirty = 0;
    nvmlReturn_t act = NVML_SUCCESS;
    if (!h || !activation || mode > 1) rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (!cfg.dev[d].mig_capable) rc = NVML_ERROR_NOT_SUPPORTED;
    else if (mode == 0 && gi_count(d)) rc = NVML_ERROR_IN_USE;  /* destroy the instances first */
    else {
        dirty = 1;
        st[d].pend = (int)mode;
        if ((int)mode == st[d].cur) act = NVML_SUCCESS;
        else if (st[d].nproc) act = NVML_ERROR_IN_USE;          /* the GPU is not idle: stays pending */
        else if (cfg.dev[d].mig_needs_reset) act = NVML_ERROR_RESET_REQUIRED;  /* A100, A30 */
        else st[d].cur = (int)mode;                              /* Hopper and later */
        *activation = act;
    }
    log_call("nvmlDeviceSetMigMode gpu=%d mode=%u -> %d activation=%d", d, mode, rc, act);
    return leave(rc, dirty);
}

/* ---- GPU-instance profiles and placements ---- */
static struct profile *prof_by_index(int d, unsigned index) {
    if (index >= MAXPROF || !cfg.dev[d].prof[index].valid) return NULL;
    return &cfg.dev[d].prof[index];
}

static void fill_gi_profile(struct profile *p, nvmlGpuInstanceProfileInfo_t *o) {
    o->id = p->id;
    o->isP2pSupported = 0;
    o->sliceCount = p->slices;
    o->instanceCount = p->instances;
    o->multiprocessorCount = p->sm;
    o->copyEngineCount = p->ce;
    o->decoderCount = p->dec;
    o->encoderCount = p->enc;
    o->jpegCount = p->jpeg;
    o->ofaCount = p->ofa;
    o->memorySizeMB = p->mem_mib;
}

static nvmlReturn_t gi_profile_common(void *device, struct profile **out, unsigned key, int by_id) {
    struct fh *h = live(device, M_DEV);
    if (!h) return NVML_ERROR_INVALID_ARGUMENT;
    if (!cfg.dev[h->dev].mig_capable) return NVML_ERROR_NOT_SUPPORTED;
    if (!by_id && key >= MAXPROF) return NVML_ERROR_INVALID_ARGUMENT;
    *out = by_id ? prof_by_id(h->dev, key) : prof_by_index(h->dev, key);
    return *out ? NVML_SUCCESS : NVML_ERROR_NOT_SUPPORTED;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(void *device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct profile *p = NULL;
    if (!info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if ((rc = gi_profile_common(device, &p, profile, 0))) return leave(rc, 0);
    fill_gi_profile(p, info);
    return leave(NVML_SUCCESS, 0);
}

static nvmlReturn_t gi_profile_v2(void *device, unsigned key, int by_id, nvmlGpuInstanceProfileInfo_v2_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct profile *p = NULL;
    if (!info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (info->version != GI_PROFILE_INFO_V2) return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 0);
    if ((rc = gi_profile_common(device, &p, key, by_id))) return leave(rc, 0);
    nvmlGpuInstanceProfileInfo_t v1;
    fill_gi_profile(p, &v1);
    info->id = v1.id;
    info->isP2pSupported = v1.isP2pSupported;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->copyEngineCount = v1.copyEngineCount;
    info->decoderCount = v1.decoderCount;
    info->encoderCount = v1.encoderCount;
    info->jpegCount = v1.jpegCount;
    info->ofaCount = v1.ofaCount;
    info->memorySizeMB = v1.memorySizeMB;
    snprintf(info->name, sizeof info->name, "MIG %s", p->name);  /* as the real driver names them */
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(void *device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info) {
    return gi_profile_v2(device, profile, 0, info);
}
API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(void *device, unsigned int profile_id, nvmlGpuInstanceProfileInfo_v2_t *info) {
    return gi_profile_v2(device, profile_id, 1, info);
}

API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(void *device, unsigned int profile_id, nvmlPlacement_t *placements, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (!cfg.dev[h->dev].mig_capable) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    struct profile *p = prof_by_id(h->dev, profile_id);
    if (!p) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    if (!placements) {
        *count = p->nstarts;
        return leave(NVML_SUCCESS, 0);
    }
    if (*count < p->nstarts) {
        *count = p->nstarts;
        return leave(NVML_ERROR_INSUFFICIENT_SIZE, 0);
    }
    for (unsigned i = 0; i < p->nstarts; i++) placements[i] = (nvmlPlacement_t){p->starts[i], p->mem_slices};
    *count = p->nstarts;
    return leave(NVML_SUCCESS, 0);
}

/* Can an instance of p go at start on GPU d now?  NVML_SUCCESS or the NVML error. */
static unsigned occupied_mask(int d) {
    unsigned m = 0;
    for (int g = 0; g < MAXGI; g++)
        if (st[d].gi[g].used) m |= ((1u << st[d].gi[g].size) - 1) << st[d].gi[g].start;
    return m;
}

static void engines_of(const struct profile *p, unsigned out[5]) {
    out[0] = p->ce; out[1] = p->dec; out[2] = p->enc; out[3] = p->jpeg; out[4] = p->ofa;
}

static nvmlReturn_t can_create(int d, struct profile *p, int start) {
    int same = 0;
    unsigned compute = 0, used[5] = {0, 0, 0, 0, 0}, mine[5];
    for (int g = 0; g < MAXGI; g++) {
        if (!st[d].gi[g].used) continue;
        struct profile *q = prof_by_id(d, st[d].gi[g].profile_id);
        if (st[d].gi[g].profile_id == p->id) same++;
        compute += q ? q->slices : 0;
        if (q) {
            unsigned e[5];
            engines_of(q, e);
            for (int i = 0; i < 5; i++) used[i] += e[i];
        }
    }
    if ((unsigned)same >= p->instances || compute + p->slices > cfg.dev[d].compute_slices)
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    engines_of(p, mine);
    for (int i = 0; cfg.dev[d].has_engines && i < 5; i++)
        if (used[i] + mine[i] > cfg.dev[d].eng_total[i]) return NVML_ERROR_INSUFFICIENT_RESOURCES;
    if (start < 0) return NVML_SUCCESS;
    unsigned mask = ((1u << p->mem_slices) - 1) << start;
    if (start + p->mem_slices > cfg.dev[d].mem_slices || (occupied_mask(d) & mask))
        return NVML_ERROR_INSUFFICIENT_RESOURCES;
    return NVML_SUCCESS;
}

static int first_free_start(int d, struct profile *p) {
    for (unsigned i = 0; i < p->nstarts; i++)
        if (can_create(d, p, (int)p->starts[i]) == NVML_SUCCESS) return (int)p->starts[i];
    return -1;
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(void *device, unsigned int profile_id, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    int d = h->dev;
    if (!cfg.dev[d].mig_capable || !st[d].cur) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    struct profile *p = prof_by_id(d, profile_id);
    if (!p) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    /* Greedy count on a scratch copy: how many more fit, first free start each time. */
    struct devstate saved = st[d];
    unsigned n = 0;
    for (;;) {
        int s = first_free_start(d, p);
        if (s < 0) break;
        int g = 0;
        while (g < MAXGI && st[d].gi[g].used) g++;
        if (g == MAXGI) break;
        st[d].gi[g] = (struct gi){1, p->id, (unsigned)s, p->mem_slices};
        n++;
    }
    st[d] = saved;
    *count = n;
    return leave(NVML_SUCCESS, 0);
}

static int new_gi_id(int d, struct profile *p) {
    /* The full-GPU profile gets id 0 as on real GPUs; others the lowest free id from 1. */
    if (p->slices >= cfg.dev[d].compute_slices && !st[d].gi[0].used) return 0;
    for (int g = 1; g < MAXGI; g++)
        if (!st[d].gi[g].used) return g;
    return -1;
}

static nvmlReturn_t create_gi(void *device, unsigned profile_id, const nvmlPlacement_t *placement, void **out) {
    nvmlReturn_t rc = enter(1);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    int d = h ? h->dev : -1, start = -1, id = -1, dirty = 0;
    struct profile *p = h ? prof_by_id(d, profile_id) : NULL;
    if (!h || !out) rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (!cfg.dev[d].mig_capable || !st[d].cur) rc = NVML_ERROR_NOT_SUPPORTED;
    else if (!p) rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (placement) {
        int allowed = 0;
        for (unsigned i = 0; i < p->nstarts; i++) allowed |= p->starts[i] == placement->start;
        if (!allowed || placement->size != p->mem_slices) rc = NVML_ERROR_INVALID_ARGUMENT;
        else if ((rc = can_create(d, p, (int)placement->start)) == NVML_SUCCESS) start = (int)placement->start;
    } else if ((rc = can_create(d, p, -1)) == NVML_SUCCESS) {
        start = first_free_start(d, p);
        if (start < 0) rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (rc == NVML_SUCCESS) {
        id = new_gi_id(d, p);
        if (id < 0) rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
    }
    if (rc == NVML_SUCCESS) {
        st[d].gi[id] = (struct gi){1, p->id, (unsigned)start, p->mem_slices};
        memset(st[d].ci[id], 0, sizeof st[d].ci[id]);
        *out = &h_gi[d][id];
        dirty = 1;
    }
    if (placement)
        log_call("nvmlDeviceCreateGpuInstanceWithPlacement gpu=%d profile_id=%u start=%u size=%u -> %d gi=%d", d,
                 profile_id, placement->start, placement->size, rc, id);
    else
        log_call("nvmlDeviceCreateGpuInstance gpu=%d profile_id=%u -> %d gi=%d start=%d", d, profile_id, rc, id, start);
    return leave(rc, dirty);
}

API nvmlReturn_t nvmlDeviceCreateGpuInstance(void *device, unsigned int profile_id, void **gi) {
    return create_gi(device, profile_id, NULL, gi);
}
API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(void *device, unsigned int profile_id, const nvmlPlacement_t *placement, void **gi) {
    if (!placement) return NVML_ERROR_INVALID_ARGUMENT;
    return create_gi(device, profile_id, placement, gi);
}

static int procs_on(int d, int g, int c) {
    int n = 0;
    for (int p = 0; p < st[d].nproc; p++)
        if (st[d].proc[p].gi == g && (c < 0 || st[d].proc[p].ci == c)) n++;
    return n;
}

API nvmlReturn_t nvmlGpuInstanceDestroy(void *gpu_instance) {
    nvmlReturn_t rc = enter(1);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    int dirty = 0;
    if (!h) rc = NVML_ERROR_INVALID_ARGUMENT;
    else {
        int cis = 0;
        for (int c = 0; c < MAXCI; c++) cis += st[h->dev].ci[h->gi][c].used;
        if (cis || procs_on(h->dev, h->gi, -1)) rc = NVML_ERROR_IN_USE;
        else {
            st[h->dev].gi[h->gi].used = 0;
            dirty = 1;
        }
    }
    log_call("nvmlGpuInstanceDestroy gpu=%d gi=%d -> %d", h ? h->dev : -1, h ? h->gi : -1, rc);
    return leave(rc, dirty);
}

API nvmlReturn_t nvmlDeviceGetGpuInstances(void *device, unsigned int profile_id, void **gis, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !count || !gis) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    int d = h->dev;
    if (!cfg.dev[d].mig_capable || !st[d].cur) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    if (!prof_by_id(d, profile_id)) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    unsigned n = 0;
    for (int g = 0; g < MAXGI; g++)
        if (st[d].gi[g].used && st[d].gi[g].profile_id == profile_id) gis[n++] = &h_gi[d][g];
    *count = n;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceById(void *device, unsigned int id, void **gi) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !gi) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (!cfg.dev[h->dev].mig_capable || !st[h->dev].cur) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    if (!gi_used(h->dev, (int)id)) return leave(NVML_ERROR_NOT_FOUND, 0);
    *gi = &h_gi[h->dev][id];
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlGpuInstanceGetInfo(void *gpu_instance, nvmlGpuInstanceInfo_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    struct gi *g = &st[h->dev].gi[h->gi];
    info->device = &h_dev[h->dev];
    info->id = (unsigned)h->gi;
    info->profileId = g->profile_id;
    info->placement = (nvmlPlacement_t){g->start, g->size};
    return leave(NVML_SUCCESS, 0);
}

/* ---- compute instances: profile index k uses ci_prof_slices[k] of the GI's compute slices ---- */
static struct profile *gi_prof(struct fh *h) { return prof_by_id(h->dev, st[h->dev].gi[h->gi].profile_id); }

static nvmlReturn_t ci_profile(struct fh *h, unsigned index, nvmlComputeInstanceProfileInfo_t *o, char *name, size_t n) {
    struct profile *gp = gi_prof(h);
    if (index >= 9) return NVML_ERROR_INVALID_ARGUMENT;
    if (!gp || index >= NCIPROF || ci_prof_slices[index] > gp->slices) return NVML_ERROR_NOT_SUPPORTED;
    unsigned s = ci_prof_slices[index];
    o->id = index;
    o->sliceCount = s;
    o->instanceCount = gp->slices / s;
    o->multiprocessorCount = gp->slices ? gp->sm * s / gp->slices : 0;
    o->sharedCopyEngineCount = gp->ce;
    o->sharedDecoderCount = gp->dec;
    o->sharedEncoderCount = gp->enc;
    o->sharedJpegCount = gp->jpeg;
    o->sharedOfaCount = gp->ofa;
    if (name) {
        if (s == gp->slices) snprintf(name, n, "MIG %s", gp->name);
        else snprintf(name, n, "MIG %uc.%s", s, gp->name);
    }
    return NVML_SUCCESS;
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(void *gpu_instance, unsigned int profile, unsigned int eng, nvmlComputeInstanceProfileInfo_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (eng != 0) return leave(NVML_ERROR_NOT_SUPPORTED, 0);  /* only ..._ENGINE_PROFILE_SHARED */
    return leave(ci_profile(h, profile, info, NULL, 0), 0);
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(void *gpu_instance, unsigned int profile, unsigned int eng, nvmlComputeInstanceProfileInfo_v2_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (info->version != CI_PROFILE_INFO_V2) return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 0);
    if (eng != 0) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    nvmlComputeInstanceProfileInfo_t v1;
    if ((rc = ci_profile(h, profile, &v1, info->name, sizeof info->name))) return leave(rc, 0);
    info->id = v1.id;
    info->sliceCount = v1.sliceCount;
    info->instanceCount = v1.instanceCount;
    info->multiprocessorCount = v1.multiprocessorCount;
    info->sharedCopyEngineCount = v1.sharedCopyEngineCount;
    info->sharedDecoderCount = v1.sharedDecoderCount;
    info->sharedEncoderCount = v1.sharedEncoderCount;
    info->sharedJpegCount = v1.sharedJpegCount;
    info->sharedOfaCount = v1.sharedOfaCount;
    return leave(NVML_SUCCESS, 0);
}

/* First aligned free run of `size` compute slices in the GI, or -1. */
static int ci_free_start(struct fh *h, unsigned size, unsigned gi_slices) {
    unsigned used = 0;
    for (int c = 0; c < MAXCI; c++) {
        struct ci *ci = &st[h->dev].ci[h->gi][c];
        if (ci->used) used |= ((1u << ci->size) - 1) << ci->start;
    }
    for (unsigned s = 0; s + size <= gi_slices; s += size)
        if (!(used & (((1u << size) - 1) << s))) return (int)s;
    return -1;
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(void *gpu_instance, unsigned int profile, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    nvmlComputeInstanceProfileInfo_t info;
    if ((rc = ci_profile(h, profile, &info, NULL, 0))) return leave(rc, 0);
    struct ci saved[MAXCI];
    memcpy(saved, st[h->dev].ci[h->gi], sizeof saved);
    unsigned n = 0;
    for (int c = 0; c < MAXCI; c++) {
        if (st[h->dev].ci[h->gi][c].used) continue;
        int s = ci_free_start(h, info.sliceCount, gi_prof(h)->slices);
        if (s < 0) break;
        st[h->dev].ci[h->gi][c] = (struct ci){1, profile, (unsigned)s, info.sliceCount};
        n++;
    }
    memcpy(st[h->dev].ci[h->gi], saved, sizeof saved);
    *count = n;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(void *gpu_instance, unsigned int profile, void **out) {
    nvmlReturn_t rc = enter(1);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    int id = -1, dirty = 0;
    nvmlComputeInstanceProfileInfo_t info;
    if (!h || !out) rc = NVML_ERROR_INVALID_ARGUMENT;
    else if ((rc = ci_profile(h, profile, &info, NULL, 0)) == NVML_SUCCESS) {
        int same = 0;
        for (int c = 0; c < MAXCI; c++) {
            struct ci *ci = &st[h->dev].ci[h->gi][c];
            if (ci->used && ci->profile_id == profile) same++;
            if (!ci->used && id < 0) id = c;
        }
        int start = ci_free_start(h, info.sliceCount, gi_prof(h)->slices);
        if ((unsigned)same >= info.instanceCount || start < 0 || id < 0) rc = NVML_ERROR_INSUFFICIENT_RESOURCES;
        else {
            st[h->dev].ci[h->gi][id] = (struct ci){1, profile, (unsigned)start, info.sliceCount};
            *out = &h_ci[h->dev][h->gi][id];
            dirty = 1;
        }
    }
    log_call("nvmlGpuInstanceCreateComputeInstance gpu=%d gi=%d profile=%u -> %d ci=%d", h ? h->dev : -1,
             h ? h->gi : -1, profile, rc, rc ? -1 : id);
    return leave(rc, dirty);
}

API nvmlReturn_t nvmlComputeInstanceDestroy(void *compute_instance) {
    nvmlReturn_t rc = enter(1);
    if (rc) return rc;
    struct fh *h = live(compute_instance, M_CI);
    int dirty = 0;
    if (!h) rc = NVML_ERROR_INVALID_ARGUMENT;
    else if (procs_on(h->dev, h->gi, h->ci)) rc = NVML_ERROR_IN_USE;
    else {
        st[h->dev].ci[h->gi][h->ci].used = 0;
        dirty = 1;
    }
    log_call("nvmlComputeInstanceDestroy gpu=%d gi=%d ci=%d -> %d", h ? h->dev : -1, h ? h->gi : -1,
             h ? h->ci : -1, rc);
    return leave(rc, dirty);
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(void *gpu_instance, unsigned int profile, void **cis, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !cis || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    nvmlComputeInstanceProfileInfo_t info;
    if ((rc = ci_profile(h, profile, &info, NULL, 0))) return leave(rc, 0);
    unsigned n = 0;
    for (int c = 0; c < MAXCI; c++) {
        struct ci *ci = &st[h->dev].ci[h->gi][c];
        if (ci->used && ci->profile_id == profile) cis[n++] = &h_ci[h->dev][h->gi][c];
    }
    *count = n;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(void *gpu_instance, unsigned int id, void **ci) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(gpu_instance, M_GI);
    if (!h || !ci) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (!ci_used(h->dev, h->gi, (int)id)) return leave(NVML_ERROR_NOT_FOUND, 0);
    *ci = &h_ci[h->dev][h->gi][id];
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(void *compute_instance, nvmlComputeInstanceInfo_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(compute_instance, M_CI);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    struct ci *c = &st[h->dev].ci[h->gi][h->ci];
    info->device = &h_dev[h->dev];
    info->gpuInstance = &h_gi[h->dev][h->gi];
    info->id = (unsigned)h->ci;
    info->profileId = c->profile_id;
    info->placement = (nvmlPlacement_t){c->start, c->size};
    return leave(NVML_SUCCESS, 0);
}
API nvmlReturn_t nvmlComputeInstanceGetInfo(void *ci, nvmlComputeInstanceInfo_t *info) {
    return nvmlComputeInstanceGetInfo_v2(ci, info);
}

/* ---- MIG device handles ---- */
API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(void *device, unsigned int *count) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !count) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (!cfg.dev[h->dev].mig_capable) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    *count = cfg.dev[h->dev].compute_slices;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(void *device, unsigned int index, void **mig) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !mig) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    int d = h->dev;
    if (!cfg.dev[d].mig_capable || !st[d].cur) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    if (index >= cfg.dev[d].compute_slices) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    unsigned i = 0;
    for (int g = 0; g < MAXGI; g++)
        for (int c = 0; c < MAXCI; c++)
            if (ci_used(d, g, c) && i++ == index) {
                *mig = &h_mig[d][g][c];
                return leave(NVML_SUCCESS, 0);
            }
    return leave(NVML_ERROR_NOT_FOUND, 0);
}

API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(void *device, unsigned int *is_mig) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV | M_MIG);
    if (!h || !is_mig) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *is_mig = h->kind == K_MIG;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetGpuInstanceId(void *device, unsigned int *id) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_MIG);
    if (!h || !id) return leave(live(device, M_DEV) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT, 0);
    *id = (unsigned)h->gi;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetComputeInstanceId(void *device, unsigned int *id) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_MIG);
    if (!h || !id) return leave(live(device, M_DEV) ? NVML_ERROR_NOT_SUPPORTED : NVML_ERROR_INVALID_ARGUMENT, 0);
    *id = (unsigned)h->ci;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(void *mig, void **device) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(mig, M_MIG);
    if (!h || !device) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    *device = &h_dev[h->dev];
    return leave(NVML_SUCCESS, 0);
}

/* ---- fabric (multi-node NVLink / IMEX clique) ---- */
API nvmlReturn_t nvmlDeviceGetGpuFabricInfo(void *device, nvmlGpuFabricInfo_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    struct devcfg *dc = &cfg.dev[h->dev];
    if (!dc->fabric) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    memcpy(info->clusterUuid, dc->cluster_uuid, 16);
    info->status = dc->fabric_status;
    info->cliqueId = dc->clique_id;
    info->state = dc->fabric_state;
    return leave(NVML_SUCCESS, 0);
}

API nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(void *device, nvmlGpuFabricInfo_v3_t *info) {
    nvmlReturn_t rc = enter(0);
    if (rc) return rc;
    struct fh *h = live(device, M_DEV);
    if (!h || !info) return leave(NVML_ERROR_INVALID_ARGUMENT, 0);
    if (info->version != FABRIC_INFO_V2 && info->version != FABRIC_INFO_V3)
        return leave(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, 0);
    struct devcfg *dc = &cfg.dev[h->dev];
    if (!dc->fabric) return leave(NVML_ERROR_NOT_SUPPORTED, 0);
    memcpy(info->clusterUuid, dc->cluster_uuid, 16);
    info->status = dc->fabric_status;
    info->cliqueId = dc->clique_id;
    info->state = dc->fabric_state;
    info->healthMask = 0;
    if (info->version == FABRIC_INFO_V3) info->healthSummary = (unsigned char)dc->fabric_health_summary;
    return leave(NVML_SUCCESS, 0);
}
