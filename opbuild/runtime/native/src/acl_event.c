/* acl_event.c: events, timed stream synchronization, the run mode and rtGetSocVersion.
 *
 * An event is an ordering point in a stream's queue: aclrtRecordEvent queues a host task that
 * marks the recording complete (and stamps the host's CLOCK_MONOTONIC) when the stream reaches
 * it; aclrtStreamWaitEvent queues a host task that blocks the waiting stream's worker until the
 * recording it saw is complete. Recordings are numbered, so recording again while an earlier
 * recording is pending replaces it (waiters of the earlier one are released by the later one).
 * Events and their pending tasks share the event by reference count: destroying an event with
 * work pending frees it when the last task ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acl_internal.h"

#define EVENT_MAGIC ACL_MAGIC(0x26)

typedef struct acl_event {
    uint64_t magic;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    uint32_t flag;
    int refs;            /* the handle + pending tasks */
    uint64_t recorded;   /* number of the last recording, 0: never recorded (or reset) */
    uint64_t completed;  /* number of the last completed recording */
    int reset;           /* aclrtResetEvent since the last recording */
    struct timespec when;
    struct acl_event *next;
} acl_event;

/* The CLOCK_MONOTONIC time `ms` milliseconds from now (the deadline of a timed wait; the conditions
 * waited on use CLOCK_MONOTONIC). */
static struct timespec deadline_after_ms(int32_t ms) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

static pthread_mutex_t g_events_lock = PTHREAD_MUTEX_INITIALIZER;
static acl_event *g_events;

/* The live event `h` with a reference taken, or NULL. */
static acl_event *event_get(aclrtEvent h) {
    pthread_mutex_lock(&g_events_lock);
    acl_event *found = NULL;
    for (acl_event *e = g_events; e != NULL; e = e->next) {
        if (e == h) {
            found = e;
            pthread_mutex_lock(&e->lock);
            e->refs++;
            pthread_mutex_unlock(&e->lock);
            break;
        }
    }
    pthread_mutex_unlock(&g_events_lock);
    return found;
}

static void event_put(acl_event *e) {
    pthread_mutex_lock(&e->lock);
    int last = --e->refs == 0;
    pthread_mutex_unlock(&e->lock);
    if (!last) return;
    e->magic = 0;
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
    free(e);
}

#define NOT_LIVE_EVENT "%s: %p is not a live event of aclrtCreateEvent"

aclError aclrtCreateEventWithFlag(aclrtEvent *event, uint32_t flag) {
    if (event == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEventWithFlag: event is a null pointer");
    uint32_t known = ACL_EVENT_SYNC | ACL_EVENT_CAPTURE_STREAM_PROGRESS | ACL_EVENT_TIME_LINE;
    if (flag & ~known)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEventWithFlag: unknown flag bits 0x%x", flag & ~known);
    acl_event *e = calloc(1, sizeof *e);
    if (e == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateEvent: out of memory");
    pthread_mutex_init(&e->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &ca);
    pthread_condattr_destroy(&ca);
    e->magic = EVENT_MAGIC;
    e->flag = flag;
    e->refs = 1;
    pthread_mutex_lock(&g_events_lock);
    e->next = g_events;
    g_events = e;
    pthread_mutex_unlock(&g_events_lock);
    acl_live_add(OPBUILD_ACL_EVENT, 1);
    *event = e;
    return ACL_SUCCESS;
}

aclError aclrtCreateEvent(aclrtEvent *event) {
    if (event == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateEvent: event is a null pointer");
    return aclrtCreateEventWithFlag(event, ACL_EVENT_SYNC);
}

aclError aclrtDestroyEvent(aclrtEvent event) {
    pthread_mutex_lock(&g_events_lock);
    acl_event **link = &g_events;
    while (*link != NULL && *link != event) link = &(*link)->next;
    acl_event *e = *link;
    if (e != NULL) *link = e->next;
    pthread_mutex_unlock(&g_events_lock);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtDestroyEvent", event);
    acl_live_add(OPBUILD_ACL_EVENT, -1);
    event_put(e); /* the handle's reference */
    return ACL_SUCCESS;
}

typedef struct event_task {
    acl_event *e;
    uint64_t n;
} event_task;

static void complete_recording(acl_event *e, uint64_t n) {
    pthread_mutex_lock(&e->lock);
    if (n > e->completed && n <= e->recorded) {
        e->completed = n;
        clock_gettime(CLOCK_MONOTONIC, &e->when);
        pthread_cond_broadcast(&e->cond);
    }
    pthread_mutex_unlock(&e->lock);
}

static void run_record(void *arg) {
    event_task *t = arg;
    complete_recording(t->e, t->n);
    event_put(t->e);
    free(t);
}

/* Wait until recording n (or a later one) completed, or the event was reset past it. Lock held. */
static void wait_recording_locked(acl_event *e, uint64_t n) {
    while (e->completed < n && e->recorded >= n) pthread_cond_wait(&e->cond, &e->lock);
}

static void run_wait(void *arg) {
    event_task *t = arg;
    pthread_mutex_lock(&t->e->lock);
    wait_recording_locked(t->e, t->n);
    pthread_mutex_unlock(&t->e->lock);
    event_put(t->e);
    free(t);
}

/* Queue fn({e, n}) on a live stream, the task holding a reference to e. */
static aclError enqueue_event_task(const char *api, aclrtStream stream, acl_event *e, uint64_t n, sim_host_fn fn) {
    const sim_api *sim = acl_sim();
    if (sim == NULL) return ACL_ERROR_RT_FAILURE;
    if (!acl_stream_is_live(stream))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "%s: %p is not a live stream of aclrtCreateStream", api, stream);
    event_task *t = malloc(sizeof *t);
    if (t == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "%s: out of memory", api);
    pthread_mutex_lock(&e->lock);
    e->refs++;
    pthread_mutex_unlock(&e->lock);
    t->e = e;
    t->n = n;
    int rc = sim->stream_enqueue_host(stream, fn, t);
    if (rc != SIM_OK) {
        free(t);
        event_put(e);
        return acl_fail(ACL_ERROR_RT_FAILURE, "%s: cannot queue on stream %p: %s", api, stream, sim->last_error());
    }
    return ACL_SUCCESS;
}

aclError aclrtRecordEvent(aclrtEvent event, aclrtStream stream) {
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtRecordEvent", event);
    pthread_mutex_lock(&e->lock);
    uint64_t n = ++e->recorded;
    e->reset = 0;
    pthread_mutex_unlock(&e->lock);
    aclError st = ACL_SUCCESS;
    if (stream == NULL) complete_recording(e, n); /* the default stream is synchronous */
    else st = enqueue_event_task("aclrtRecordEvent", stream, e, n, run_record);
    event_put(e);
    return st;
}

aclError aclrtResetEvent(aclrtEvent event, aclrtStream stream) {
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtResetEvent", event);
    aclError st = ACL_SUCCESS;
    if (stream != NULL) st = aclrtSynchronizeStream(stream); /* the reset comes after the stream's earlier work */
    if (st == ACL_SUCCESS) {
        pthread_mutex_lock(&e->lock);
        /* "not recorded": numbers stay increasing, so pending tasks of older recordings stay harmless */
        e->completed = e->recorded;
        e->when.tv_sec = e->when.tv_nsec = 0;
        e->reset = 1;
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
    }
    event_put(e);
    return st;
}

/* 0 never recorded or reset, 1 pending, 2 complete. Lock held. */
static int recorded_state(const acl_event *e) {
    if (e->recorded == 0 || e->reset) return 0;
    return e->completed >= e->recorded ? 2 : 1;
}

aclError aclrtQueryEventStatus(aclrtEvent event, aclrtEventRecordedStatus *status) {
    if (status == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEventStatus: status is a null pointer");
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtQueryEventStatus", event);
    pthread_mutex_lock(&e->lock);
    int state = recorded_state(e);
    pthread_mutex_unlock(&e->lock);
    event_put(e);
    *status = state == 1 ? ACL_EVENT_RECORDED_STATUS_NOT_READY : ACL_EVENT_RECORDED_STATUS_COMPLETE;
    return ACL_SUCCESS;
}

aclError aclrtQueryEvent(aclrtEvent event, aclrtEventStatus *status) {
    if (status == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtQueryEvent: status is a null pointer");
    aclrtEventRecordedStatus s;
    aclError st = aclrtQueryEventStatus(event, &s);
    if (st == ACL_SUCCESS)
        *status = s == ACL_EVENT_RECORDED_STATUS_COMPLETE ? ACL_EVENT_STATUS_COMPLETE : ACL_EVENT_STATUS_NOT_READY;
    return st;
}

aclError aclrtSynchronizeEvent(aclrtEvent event) {
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtSynchronizeEvent", event);
    pthread_mutex_lock(&e->lock);
    if (recorded_state(e) == 1) wait_recording_locked(e, e->recorded);
    pthread_mutex_unlock(&e->lock);
    event_put(e);
    return ACL_SUCCESS;
}

aclError aclrtSynchronizeEventWithTimeout(aclrtEvent event, int32_t timeout) {
    if (timeout < -1 || timeout == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeEventWithTimeout: timeout %d: give -1 (no limit) or "
                        "a number of milliseconds > 0", (int)timeout);
    if (timeout == -1) return aclrtSynchronizeEvent(event);
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtSynchronizeEventWithTimeout", event);
    struct timespec deadline = deadline_after_ms(timeout);
    pthread_mutex_lock(&e->lock);
    uint64_t n = e->recorded;
    int rc = 0;
    if (recorded_state(e) == 1)
        while (e->completed < n && e->recorded >= n && rc != ETIMEDOUT)
            rc = pthread_cond_timedwait(&e->cond, &e->lock, &deadline);
    int pending = recorded_state(e) == 1 && e->completed < n;
    pthread_mutex_unlock(&e->lock);
    event_put(e);
    if (pending)
        return acl_fail(ACL_ERROR_RT_EVENT_SYNC_TIMEOUT, "aclrtSynchronizeEventWithTimeout: event %p did not complete "
                        "within %d ms", event, (int)timeout);
    return ACL_SUCCESS;
}

aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent event) {
    acl_event *e = event_get(event);
    if (e == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtStreamWaitEvent", event);
    pthread_mutex_lock(&e->lock);
    int state = recorded_state(e);
    uint64_t n = e->recorded;
    if (state == 1 && stream == NULL) wait_recording_locked(e, n); /* the default stream waits here */
    pthread_mutex_unlock(&e->lock);
    aclError st = ACL_SUCCESS;
    if (state == 1 && stream != NULL) st = enqueue_event_task("aclrtStreamWaitEvent", stream, e, n, run_wait);
    event_put(e);
    return st;
}

aclError aclrtEventElapsedTime(float *ms, aclrtEvent startEvent, aclrtEvent endEvent) {
    if (ms == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: ms is a null pointer");
    acl_event *a = event_get(startEvent);
    acl_event *b = a ? event_get(endEvent) : NULL;
    if (a == NULL || b == NULL) {
        if (a) event_put(a);
        return acl_fail(ACL_ERROR_INVALID_PARAM, NOT_LIVE_EVENT, "aclrtEventElapsedTime", a ? endEvent : startEvent);
    }
    struct timespec ta, tb;
    pthread_mutex_lock(&a->lock);
    int sa = recorded_state(a);
    ta = a->when;
    pthread_mutex_unlock(&a->lock);
    pthread_mutex_lock(&b->lock);
    int sb = recorded_state(b);
    tb = b->when;
    pthread_mutex_unlock(&b->lock);
    event_put(a);
    event_put(b);
    if (sa != 2 || sb != 2)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtEventElapsedTime: the %s event has %s", sa != 2 ? "start" : "end",
                        (sa != 2 ? sa : sb) == 0 ? "not been recorded" : "not completed yet (synchronize it first)");
    *ms = (float)((double)(tb.tv_sec - ta.tv_sec) * 1e3 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e6);
    return ACL_SUCCESS;
}

/* ---- timed stream synchronization ----------------------------------------------------------- */

typedef struct sync_waiter {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    int refs; /* the caller + the queued task */
} sync_waiter;

static void waiter_put(sync_waiter *w) {
    pthread_mutex_lock(&w->lock);
    int last = --w->refs == 0;
    pthread_mutex_unlock(&w->lock);
    if (!last) return;
    pthread_mutex_destroy(&w->lock);
    pthread_cond_destroy(&w->cond);
    free(w);
}

static void run_signal(void *arg) {
    sync_waiter *w = arg;
    pthread_mutex_lock(&w->lock);
    w->done = 1;
    pthread_cond_broadcast(&w->cond);
    pthread_mutex_unlock(&w->lock);
    waiter_put(w);
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
    if (timeout < -1 || timeout == 0)
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStreamWithTimeout: timeout %d: give -1 (no limit) or "
                        "a number of milliseconds > 0", (int)timeout);
    if (timeout == -1 || stream == NULL) return aclrtSynchronizeStream(stream);
    const sim_api *sim = acl_sim();
    if (sim == NULL) return ACL_ERROR_RT_FAILURE;
    if (!acl_stream_is_live(stream))
        return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtSynchronizeStreamWithTimeout: %p is not a live stream of "
                        "aclrtCreateStream", stream);
    sync_waiter *w = calloc(1, sizeof *w);
    if (w == NULL) return acl_fail(ACL_ERROR_BAD_ALLOC, "aclrtSynchronizeStreamWithTimeout: out of memory");
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    w->refs = 2;
    if (sim->stream_enqueue_host(stream, run_signal, w) != SIM_OK) {
        w->refs = 1;
        waiter_put(w);
        return acl_fail(ACL_ERROR_RT_FAILURE, "aclrtSynchronizeStreamWithTimeout: %s", sim->last_error());
    }
    struct timespec deadline = deadline_after_ms(timeout);
    pthread_mutex_lock(&w->lock);
    int rc = 0;
    while (!w->done && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&w->cond, &w->lock, &deadline);
    int done = w->done;
    pthread_mutex_unlock(&w->lock);
    waiter_put(w);
    if (!done)
        return acl_fail(ACL_ERROR_RT_STREAM_SYNC_TIMEOUT, "aclrtSynchronizeStreamWithTimeout: the work on stream %p "
                        "did not finish within %d ms", stream, (int)timeout);
    return aclrtSynchronizeStream(stream); /* the queue reached our task: collects a kernel failure */
}

/* ---- run mode, SoC ---------------------------------------------------------------------------- */

aclError aclrtGetRunMode(aclrtRunMode *runMode) {
    if (runMode == NULL) return acl_fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode: runMode is a null pointer");
    *runMode = ACL_HOST;
    return ACL_SUCCESS;
}

/* Short name (OPBUILD_SOC) -> full name: opbuild.abi.vocabulary.SOCS (opbuild/vocabulary_gen.h). */
static const struct { const char *name, *full; } SOC_VERSIONS[] = OPBUILD_SOC_VERSIONS;

int32_t rtGetSocVersion(char *version, const uint32_t maxLen) {
    if (version == NULL || maxLen == 0)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, "rtGetSocVersion: %s", version ? "maxLen is 0" : "version is a null "
                        "pointer");
    const char *full = aclrtGetSocName();
    if (full == NULL) return ACL_ERROR_RT_PARAM_INVALID;
    if (strlen(full) >= maxLen)
        return acl_fail(ACL_ERROR_RT_PARAM_INVALID, "rtGetSocVersion: maxLen %u is too short for %s", maxLen, full);
    snprintf(version, maxLen, "%s", full);
    return 0;
}

const char *aclrtGetSocName(void) {
    const char *soc = getenv(OPBUILD_ENV_SOC);
    if (soc == NULL || *soc == '\0') soc = OPBUILD_DEFAULT_SOC;
    for (size_t i = 0; i < sizeof SOC_VERSIONS / sizeof SOC_VERSIONS[0]; i++)
        if (strcmp(SOC_VERSIONS[i].name, soc) == 0) return SOC_VERSIONS[i].full;
    acl_fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtGetSocName: OPBUILD_SOC=%s is not a known SoC", soc);
    return NULL;
}
