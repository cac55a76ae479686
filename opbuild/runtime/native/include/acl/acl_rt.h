/* acl/acl_rt.h: the AscendCL runtime subset of opbuild's C ABI (device, streams, memory).
 *
 * The device is opbuild's CPU simulator: device memory is host memory (512-byte aligned,
 * allocated by the simulator), a stream is a simulator stream (an in-order queue served by one
 * thread), the NULL stream is synchronous. There is one device, id 0. The application runs on
 * the host: aclrtGetRunMode says ACL_HOST (device memory is still allocated with aclrtMalloc and
 * copied with aclrtMemcpy, as for a real card).
 */
#ifndef OPBUILD_ACL_ACL_RT_H_
#define OPBUILD_ACL_ACL_RT_H_

#include <stddef.h>
#include <stdint.h>

#include "acl/acl_base.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACL_EVENT_SYNC 0x00000001u
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002u
#define ACL_EVENT_TIME_LINE 0x00000008u

typedef enum aclrtRunMode {
    ACL_DEVICE = 0,
    ACL_HOST = 1,
} aclrtRunMode;

typedef enum aclrtEventStatus {
    ACL_EVENT_STATUS_COMPLETE = 0,
    ACL_EVENT_STATUS_NOT_READY = 1,
    ACL_EVENT_STATUS_RESERVED = 2,
} aclrtEventStatus;

typedef enum aclrtEventRecordedStatus {
    ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
    ACL_EVENT_RECORDED_STATUS_COMPLETE = 1,
} aclrtEventRecordedStatus;

typedef enum {
    ACL_MEMCPY_HOST_TO_HOST = 0,
    ACL_MEMCPY_HOST_TO_DEVICE = 1,
    ACL_MEMCPY_DEVICE_TO_HOST = 2,
    ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
    ACL_MEMCPY_DEFAULT = 4,
} aclrtMemcpyKind;

typedef enum {
    ACL_MEM_MALLOC_HUGE_FIRST = 0,
    ACL_MEM_MALLOC_HUGE_ONLY = 1,
    ACL_MEM_MALLOC_NORMAL_ONLY = 2,
    ACL_MEM_MALLOC_HUGE_FIRST_P2P = 3,
    ACL_MEM_MALLOC_HUGE_ONLY_P2P = 4,
    ACL_MEM_MALLOC_NORMAL_ONLY_P2P = 5,
} aclrtMemMallocPolicy;

typedef enum {
    ACL_OPT_DETERMINISTIC = 0,
} aclSysParamOpt;

/* configPath: NULL or "" (defaults), or an acl.json file: it must be valid JSON with an object at
 * the top (else ACL_ERROR_PARSE_FILE, the message naming file, line and column); a missing or
 * unreadable file is ACL_ERROR_INVALID_FILE. Unknown keys are ignored. A "dump" object (dump_path,
 * dump_mode, dump_list, dump_op_switch, dump_data: docs/debugging.md) turns the data dump on until
 * aclFinalize; a bad field is ACL_ERROR_INVALID_DUMP_CONFIG naming the file and the field. */
ACL_FUNC_VISIBILITY aclError aclInit(const char *configPath);
ACL_FUNC_VISIBILITY aclError aclFinalize(void);

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t *deviceId);
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count);
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);

ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream *stream);
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/* Waits for the stream's work; a failed kernel gives ACL_ERROR_RT_AICORE_EXCEPTION. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);

/* Waits at most `timeout` ms (-1: forever): ACL_ERROR_RT_STREAM_SYNC_TIMEOUT when the work is not
 * done by then (it goes on running). */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout);
/* ACL_HOST: the application runs on the host (see above). */
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode *runMode);

/* ---- events: ordering points in a stream's queue. An event completes when the stream's work
 * recorded before it is done; its time is the host clock (CLOCK_MONOTONIC) at that moment. */
ACL_FUNC_VISIBILITY aclError aclrtCreateEvent(aclrtEvent *event);
/* flag: ACL_EVENT_SYNC, ACL_EVENT_TIME_LINE, ACL_EVENT_CAPTURE_STREAM_PROGRESS (or'ed); every
 * event of the simulator records time. */
ACL_FUNC_VISIBILITY aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag);
ACL_FUNC_VISIBILITY aclError aclrtDestroyEvent(aclrtEvent event);
/* Record the event at the current end of `stream` (NULL: completes now). Recording again
 * replaces the earlier recording. */
ACL_FUNC_VISIBILITY aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream);
/* Back to "not recorded" (after the stream's work queued before this call). */
ACL_FUNC_VISIBILITY aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream);
/* Deprecated in CANN: ACL_EVENT_STATUS_COMPLETE or ACL_EVENT_STATUS_NOT_READY. */
ACL_FUNC_VISIBILITY aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status);
ACL_FUNC_VISIBILITY aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status);
/* Wait until the last recording completed (an event never recorded: at once). */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEvent(aclrtEvent event);
/* The same, at most `timeout` ms (-1: forever): ACL_ERROR_RT_EVENT_SYNC_TIMEOUT when not complete by then. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout);
/* `stream`'s later work waits until the event's current recording completed. */
ACL_FUNC_VISIBILITY aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event);
/* Milliseconds between the completion of two completed events (ACL_ERROR_INVALID_PARAM when
 * one has not completed). */
ACL_FUNC_VISIBILITY aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent);

/* Device memory (size > 0). */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr);

/* count bytes from src to dst; ACL_ERROR_INVALID_PARAM when destMax < count. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind);
/* The same, ordered on `stream` (NULL: done before returning). */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void *dst, size_t destMax, const void *src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);
ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value, size_t count);

/* ACL_OPT_DETERMINISTIC: 1 selects deterministic (d=1) binaries for later aclnn calls. */
ACL_FUNC_VISIBILITY aclError aclrtCtxSetSysParamOpt(aclSysParamOpt opt, int64_t value);
ACL_FUNC_VISIBILITY aclError aclrtCtxGetSysParamOpt(aclSysParamOpt opt, int64_t *value);

/* The SoC's full name (as rtGetSocVersion), or NULL for an unknown OPBUILD_SOC. */
ACL_FUNC_VISIBILITY const char *aclrtGetSocName(void);
/* The runtime's name of the SoC (the full name, e.g. Ascend910B1, of OPBUILD_SOC or the default
 * ascend910b) into version[maxLen]; CANN's libruntime function, exported by the acl library.
 * Returns 0, or ACL_ERROR_RT_PARAM_INVALID (NULL, too short, unknown OPBUILD_SOC). */
ACL_FUNC_VISIBILITY int32_t rtGetSocVersion(char *version, const uint32_t maxLen);

#ifdef __cplusplus
}
#endif
#endif /* OPBUILD_ACL_ACL_RT_H_ */
