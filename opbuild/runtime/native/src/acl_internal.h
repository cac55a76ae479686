/* acl_internal.h: private declarations of opbuild's acl library (opbuild.runtime._opbuild_acl).
 *
 * The library is split in these files:
 *   acl_log.c     error messages (stderr in the CANN log style, aclGetRecentErrMsg), live counters
 *   acl_meta.c    aclTensor & co: plain C structs, their constructors and destructors, the layout
 *   acl_rt.c      aclInit/aclrt*: the device simulator, dlopened (see sim_api below)
 *   acl_bridge.c  aclnn phases, executors and settings: the native hit path, the Python miss path
 *   opcache.c     the native op-parameter cache (per thread) and the key of a C call (opkey.c)
 *   acl_config.c  aclInit's acl.json
 *   acl_event.c   events, timed stream sync, run mode, rtGetSocVersion
 *   acl_desc.c    aclTensorDesc, aclDataBuffer, aclopAttr, aclmdlDataset (layouts: acl_desc.h)
 *   acl_op.c      aclop* and aclmdl*, run by opbuild/om/aclop.py and aclmdl.py
 *
 * The struct layouts below are read by opbuild/runtime/capi.py through ctypes; it checks them
 * against opbuild_acl_layout() before first use.
 */
#ifndef OPBUILD_ACL_INTERNAL_H
#define OPBUILD_ACL_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "acl/acl.h"
#include "opbuild/vocabulary_gen.h" /* OPBUILD_ENV_*, ACLNN_*, OPKEY_* */
#include "aclnn/acl_meta.h"
#include "aclnn/aclnn_base.h"
#include "aclnn/opbuild_acl.h"
#include "sim.h"

#define ACL_INTERNAL __attribute__((visibility("hidden")))

#define ACL_MAX_DIMS 32u
#define ACL_MSG_LEN 4096u

/* Magic numbers at the start of each object ("opbuild" + kind); cleared on destruction. */
#define ACL_MAGIC_BASE 0x6F706275696C6400ull
#define ACL_MAGIC(kind) (ACL_MAGIC_BASE | (uint64_t)(kind))
/* The magic kind of an aclScalarList (not one of the counted kinds of opbuild_acl.h). */
#define OPBUILD_ACL_SCALAR_LIST 0x20

struct aclTensor {
    uint64_t magic;
    int64_t dataType;     /* aclDataType */
    int64_t format;       /* aclFormat */
    int64_t offset;       /* elements from `data` to the view's first element */
    uint64_t viewDimsNum;
    uint64_t storageDimsNum;
    void *data;           /* storage base address (caller's memory) */
    int64_t *viewDims;    /* viewDimsNum entries */
    int64_t *strides;     /* viewDimsNum entries, in elements */
    int64_t *storageDims; /* storageDimsNum entries */
    int64_t dims[];       /* backing store of the three arrays */
};

struct aclScalar {
    uint64_t magic;
    int64_t dataType;
    uint64_t size;        /* bytes used in value */
    union {
        uint8_t bytes[16];
        int64_t i64;
        uint64_t u64;
        double f64;
        float f32;
    } value;
};

struct aclTensorList {
    uint64_t magic;
    uint64_t size;
    aclTensor **tensors;  /* size entries, owned */
    aclTensor *items[];
};

struct aclScalarList {
    uint64_t magic;
    uint64_t size;
    aclScalar **scalars;  /* size entries, owned */
    aclScalar *items[];
};

struct aclIntArray {
    uint64_t magic;
    uint64_t size;
    int64_t *values;
    int64_t items[];
};

struct aclFloatArray {
    uint64_t magic;
    uint64_t size;
    float *values;
    float items[];
};

struct aclBoolArray {
    uint64_t magic;
    uint64_t size;
    bool *values;
    bool items[];
};

/* ---- acl_log.c -------------------------------------------------------------------------------- */

/* Format a message, print it to stderr as an ERROR log line of `module` (unless
 * ASCEND_GLOBAL_LOG_LEVEL > 3) and keep it as this thread's recent error. */
ACL_INTERNAL void acl_error(const char *module, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ACL_INTERNAL void acl_verror(const char *module, const char *fmt, va_list ap);
/* acl_error("ASCENDCL", ...) and return `code`. */
ACL_INTERNAL aclError acl_fail(aclError code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* acl_error("OP", "<api> failed (<status> <name>): <message>") and return `status`. */
ACL_INTERNAL aclnnStatus aclnn_fail(aclnnStatus status, const char *api, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ACL_INTERNAL const char *aclnn_status_name(aclnnStatus status);

ACL_INTERNAL void acl_live_add(int kind, int64_t delta);
/* The bytes an aclTensor's storage covers (storage elements x element size): 0, or -1 when they
 * are more than 2^64 (the tensor is refused). Inline: the C ABI's cache hit checks every tensor. */
static inline int acl_tensor_storage_bytes(const aclTensor *t, uint64_t itemsize, uint64_t *bytes) {
    uint64_t n = itemsize;
    for (uint64_t i = 0; i < t->storageDimsNum; i++)
        if (__builtin_mul_overflow(n, (uint64_t)t->storageDims[i], &n)) return -1;
    *bytes = n;
    return 0;
}

/* ---- acl_config.c ----------------------------------------------------------------------------- */

/* Read and check aclInit's acl.json (NULL or "": nothing to read); the status, reported. */
ACL_INTERNAL aclError acl_read_config(const char *path);

/* ---- acl_op.c --------------------------------------------------------------------------------- */

/* aclFinalize: forget the aclopSetModelDir directory (and end the dump aclInit started). */
ACL_INTERNAL void acl_op_finalize(void);
/* aclInit's acl.json "dump" object (JSON text): checked and started by opbuild.runtime.debug.dump;
 * ACL_SUCCESS or ACL_ERROR_INVALID_DUMP_CONFIG (reported: the file and the field). */
ACL_INTERNAL aclError acl_dump_configure(const char *path, const char *dump_json);

/* ---- acl_rt.c --------------------------------------------------------------------------------- */

/* The simulator's functions, resolved from the library device.py loads too (same path rule:
 * env OPBUILD_SIM_LIB, else the _opbuild_sim library next to this one), so a process has one
 * simulator whichever side loads it first. */
typedef struct sim_api {
    uint32_t (*abi_version)(void);
    const char *(*last_error)(void);
    void *(*malloc_)(size_t size);
    int (*free_)(void *ptr);
    sim_stream *(*stream_create)(void);
    int (*stream_synchronize)(sim_stream *stream, char *err, uint32_t errlen);
    int (*stream_destroy)(sim_stream *stream, char *err, uint32_t errlen);
    int (*stream_enqueue_host)(sim_stream *stream, sim_host_fn fn, void *arg);
    int (*launch)(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs, uint32_t block_dim,
                  int intercore_sync, char *err, uint32_t errlen);
    int (*launch_then)(sim_stream *stream, opbuild_kernel_launch_fn fn, void *const *args, uint32_t nargs,
                       uint32_t block_dim, int intercore_sync, sim_host_fn then_fn, void *then_arg, char *err,
                       uint32_t errlen);
    int (*allocation)(const void *ptr, uint64_t *start, uint64_t *size);
    const uint64_t *(*allocation_generation)(void);
} sim_api;

/* The loaded simulator, or NULL (the reason reported with acl_error). */
ACL_INTERNAL const sim_api *acl_sim(void);
/* 1 and the bytes from `ptr` to the end of the aclrtMalloc buffer holding it, or 0 when `ptr` is
 * in no live device buffer (host memory: nothing known). */
ACL_INTERNAL int acl_device_room(const void *ptr, uint64_t *room);
/* The simulator's allocation generation now (sim_allocation_generation; 0 without a simulator). */
ACL_INTERNAL uint64_t acl_device_generation_slow(void);
ACL_INTERNAL extern const uint64_t *acl_device_generation_counter; /* set by the first slow call */
static inline uint64_t acl_device_generation(void) {
    const uint64_t *c = __atomic_load_n(&acl_device_generation_counter, __ATOMIC_ACQUIRE);
    return c != NULL ? __atomic_load_n(c, __ATOMIC_ACQUIRE) : acl_device_generation_slow();
}
/* Whether `stream` is a live stream of aclrtCreateStream. */
ACL_INTERNAL bool acl_stream_is_live(aclrtStream stream);
/* The directory holding this library (no trailing slash). */
ACL_INTERNAL const char *acl_library_dir(void);

#endif /* OPBUILD_ACL_INTERNAL_H */
