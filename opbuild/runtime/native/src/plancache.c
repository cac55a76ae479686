/* plancache.c: the one native plan cache (see plancache.h). No Python, no acl types. */
#define _GNU_SOURCE
#include "plancache.h"
#include "setting.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Symbols of this file stay inside the library that links it (the acl library and _fastpath
 * both compile it; -fvisibility=hidden keeps them apart). */

/* ---- plans ---------------------------------------------------------------------------------- */

plancache_plan *plancache_plan_new(const uint64_t *words, size_t nwords) {
    plancache_plan *p = calloc(1, sizeof *p);
    if (p == NULL) return NULL;
    p->words = malloc((nwords ? nwords : 1) * sizeof(uint64_t));
    if (p->words == NULL) {
        free(p);
        return NULL;
    }
    memcpy(p->words, words, nwords * sizeof(uint64_t));
    p->nwords = nwords;
    p->hash = opkey_hash(words, nwords);
    p->refs = 1;
    return p;
}

void plancache_plan_ref(plancache_plan *p) { __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED); }

void plancache_plan_unref(plancache_plan *p) {
    if (p == NULL || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    if (p->front_free != NULL) p->front_free(p->front);
    free(p->words);
    if (p->tiling_owned) free(p->tiling);
    free(p->itemsize);
    free(p->key_text);
    free(p->kernel);
    free(p->stamp_path);
    free(p);
}

static int stamp_of(const char *path, int64_t out[3]) {
    struct stat st;
    if (stat(path, &st) != 0) return -1;
    out[0] = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    out[1] = (int64_t)st.st_size;
    out[2] = (int64_t)st.st_ino;
    return 0;
}

int plancache_plan_stamp(plancache_plan *p, const char *path, const int64_t *stamp) {
    free(p->stamp_path);
    p->stamp_path = NULL;
    if (path == NULL || path[0] == '\0') return 0;
    if (stamp != NULL) memcpy(p->stamp, stamp, sizeof p->stamp);
    else if (stamp_of(path, p->stamp) != 0) return -1;
    p->stamp_path = strdup(path);
    if (p->stamp_path == NULL) return -1;
    p->checked_ns = opkey_now_ns();
    return 0;
}

int plancache_plan_fresh(plancache_plan *p) {
    if (p->stamp_path == NULL) return 1;
    int64_t t = opkey_now_ns();
    if (t - p->checked_ns < OPKEY_STAMP_INTERVAL_NS) return 1;
    int64_t now[3];
    if (stamp_of(p->stamp_path, now) != 0 || memcmp(now, p->stamp, sizeof now) != 0) return 0;
    p->checked_ns = t;
    return 1;
}

/* ---- the plan record ------------------------------------------------------------------------ */

static char *dup_bytes(const char *p, size_t n) {
    char *s = malloc(n + 1);
    if (s != NULL) {
        memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

plancache_plan *plancache_plan_from_record(const void *record, size_t len, const uint64_t *words, size_t nwords,
                                           int copy_tiling, char *err, size_t errlen) {
    const size_t head = PLANCACHE_RECORD_WORDS * sizeof(uint64_t);
    uint64_t w[PLANCACHE_RECORD_WORDS];
    if (len < head) {
        snprintf(err, errlen, "plan record: %zu bytes, shorter than its %zu-byte header", len, head);
        return NULL;
    }
    memcpy(w, record, head);
    if (w[0] != PLANCACHE_RECORD_MAGIC) {
        snprintf(err, errlen, "plan record: magic 0x%016llx, expected 0x%016llx (OPPLAN01)", (unsigned long long)w[0],
                 (unsigned long long)PLANCACHE_RECORD_MAGIC);
        return NULL;
    }
    uint64_t block_dim = w[2], nargs = w[3], flags = w[4];
    const uint64_t *lens = w + 10; /* tiling, item sizes, stamp path, key text, kernel */
    uint64_t body = 0;
    for (int i = 0; i < 5; i++) {
        if (lens[i] > len || body + lens[i] > len) {
            snprintf(err, errlen, "plan record: field %d's length %llu exceeds the record (%zu bytes)", i,
                     (unsigned long long)lens[i], len);
            return NULL;
        }
        body += lens[i];
    }
    if (head + body != len) {
        snprintf(err, errlen, "plan record: %zu bytes, its header says %llu", len, (unsigned long long)(head + body));
        return NULL;
    }
    if (nargs < 2 || nargs - 2 != lens[1] || nargs > 0xFFFFull) {
        snprintf(err, errlen, "plan record: %llu launch arguments for %llu tensors (tensors + workspace + tiling)",
                 (unsigned long long)nargs, (unsigned long long)lens[1]);
        return NULL;
    }
    if (block_dim > 0x7FFFFFFFull || (flags & ~(uint64_t)(PLANCACHE_SYNC | PLANCACHE_EMPTY)) != 0) {
        snprintf(err, errlen, "plan record: block_dim %llu or flags 0x%llx out of range", (unsigned long long)block_dim,
                 (unsigned long long)flags);
        return NULL;
    }
    const char *p = (const char *)record + head;
    const char *tiling = p, *itemsize = tiling + lens[0], *stamp_path = itemsize + lens[1];
    const char *key_text = stamp_path + lens[2], *kernel = key_text + lens[3];
    plancache_plan *plan = plancache_plan_new(words, nwords);
    if (plan == NULL) goto oom;
    plan->fn = (void *)(uintptr_t)w[1];
    plan->block_dim = (uint32_t)block_dim;
    plan->nargs = (uint32_t)nargs;
    plan->ntensors = (uint32_t)lens[1];
    plan->sync = (flags & PLANCACHE_SYNC) != 0;
    plan->empty = (flags & PLANCACHE_EMPTY) != 0;
    plan->ws_size = w[5];
    plan->tiling_len = (size_t)lens[0];
    if (copy_tiling) {
        if (lens[0]) {
            plan->tiling = dup_bytes(tiling, lens[0]);
            plan->tiling_owned = 1;
            if (plan->tiling == NULL) goto oom;
        }
    } else {
        plan->tiling = (void *)(uintptr_t)w[6];
    }
    plan->itemsize = (uint8_t *)dup_bytes(itemsize, lens[1]);
    plan->key_text = dup_bytes(key_text, lens[3]);
    plan->kernel = dup_bytes(kernel, lens[4]);
    if (plan->itemsize == NULL || plan->key_text == NULL || plan->kernel == NULL) goto oom;
    if (lens[2]) {
        char *path = dup_bytes(stamp_path, lens[2]);
        int64_t stamp[3] = {(int64_t)w[7], (int64_t)w[8], (int64_t)w[9]};
        int rc = path != NULL ? plancache_plan_stamp(plan, path, stamp) : -1;
        free(path);
        if (rc != 0) goto oom;
    }
    return plan;
oom:
    plancache_plan_unref(plan);
    snprintf(err, errlen, "plan record: out of memory");
    return NULL;
}

plancache_plan *plancache_plan_like(const plancache_plan *proto, const uint64_t *words, size_t nwords,
                                   uint32_t block_dim, uint64_t ws_size, void *tiling) {
    plancache_plan *plan = plancache_plan_new(words, nwords);
    if (plan == NULL) return NULL;
    plan->fn = proto->fn;
    plan->block_dim = block_dim;
    plan->nargs = proto->nargs;
    plan->ntensors = proto->ntensors;
    plan->sync = proto->sync;
    plan->empty = proto->empty;
    plan->ws_size = ws_size;
    plan->tiling = tiling;
    plan->tiling_len = proto->tiling_len;
    if (proto->itemsize != NULL && (plan->itemsize = (uint8_t *)dup_bytes((const char *)proto->itemsize, proto->ntensors)) == NULL)
        goto oom;
    if (proto->key_text != NULL && (plan->key_text = strdup(proto->key_text)) == NULL) goto oom;
    if (proto->kernel != NULL && (plan->kernel = strdup(proto->kernel)) == NULL) goto oom;
    if (proto->stamp_path != NULL) {
        if (plancache_plan_stamp(plan, proto->stamp_path, proto->stamp) != 0) goto oom;
        plan->checked_ns = proto->checked_ns;
    }
    return plan;
oom:
    plancache_plan_unref(plan);
    return NULL;
}

/* ---- capacity -------------------------------------------------------------------------------- */

static size_t g_capacity;
static pthread_once_t g_capacity_once = PTHREAD_ONCE_INIT;

/* OPBUILD_PARAM_CACHE_SIZE by the one rule of opbuild's int settings (setting.h). */
static void read_capacity(void) {
    __atomic_store_n(&g_capacity, (size_t)OPBUILD_INT_SETTING(OPBUILD_PARAM_CACHE_SIZE), __ATOMIC_RELAXED);
}

size_t plancache_capacity(size_t set) {
    pthread_once(&g_capacity_once, read_capacity);
    if (set > 0) __atomic_store_n(&g_capacity, set, __ATOMIC_RELAXED);
    return __atomic_load_n(&g_capacity, __ATOMIC_RELAXED);
}

/* ---- the table ------------------------------------------------------------------------------ */

plancache_table *plancache_table_new(void) {
    plancache_table *t = calloc(1, sizeof *t);
    if (t == NULL) return NULL;
    t->buckets = calloc(64, sizeof *t->buckets);
    if (t->buckets == NULL) {
        free(t);
        return NULL;
    }
    t->mask = 63;
    return t;
}

void plancache_table_clear(plancache_table *t) {
    /* Detach first: a front end's release may run code that looks at the table. */
    plancache_plan *p = t->newest;
    memset(t->buckets, 0, (t->mask + 1) * sizeof *t->buckets);
    t->newest = t->oldest = NULL;
    t->count = 0;
    while (p != NULL) {
        plancache_plan *older = p->older;
        p->next = p->newer = p->older = NULL;
        p->table = NULL;
        plancache_plan_unref(p);
        p = older;
    }
}

void plancache_table_free(plancache_table *t) {
    if (t == NULL) return;
    plancache_table_clear(t);
    free(t->buckets);
    free(t);
}

static void lru_unlink(plancache_table *t, plancache_plan *p) {
    if (p->newer != NULL) p->newer->older = p->older;
    else t->newest = p->older;
    if (p->older != NULL) p->older->newer = p->newer;
    else t->oldest = p->newer;
    p->newer = p->older = NULL;
}

static void lru_push(plancache_table *t, plancache_plan *p) {
    p->newer = NULL;
    p->older = t->newest;
    if (t->newest != NULL) t->newest->newer = p;
    t->newest = p;
    if (t->oldest == NULL) t->oldest = p;
}

void plancache_touch_slow(plancache_table *t, plancache_plan *p) {
    if (p->table != t) return;
    lru_unlink(t, p);
    lru_push(t, p);
}

void plancache_remove(plancache_table *t, plancache_plan *p) {
    if (p->table != t) return;
    plancache_plan **link = &t->buckets[p->hash & t->mask];
    while (*link != NULL && *link != p) link = &(*link)->next;
    if (*link == NULL) return; /* not reachable: a plan of the table is in its bucket */
    *link = p->next;
    p->next = NULL;
    lru_unlink(t, p);
    p->table = NULL;
    t->count--;
    plancache_plan_unref(p);
}

plancache_plan *plancache_find(plancache_table *t, const uint64_t *words, size_t nwords, uint64_t hash) {
    for (plancache_plan *p = t->buckets[hash & t->mask]; p != NULL; p = p->next) {
        if (p->hash != hash || p->nwords != nwords || memcmp(p->words, words, nwords * sizeof(uint64_t)) != 0)
            continue;
        if (!plancache_plan_fresh(p)) { /* the package changed since: select again */
            plancache_remove(t, p);
            t->stats.stale++;
            t->stats.misses++;
            return NULL;
        }
        if (t->newest != p) {
            lru_unlink(t, p);
            lru_push(t, p);
        }
        t->stats.hits++;
        return p;
    }
    t->stats.misses++;
    return NULL;
}

static void table_grow(plancache_table *t) {
    size_t n = (t->mask + 1) * 2;
    plancache_plan **nb = calloc(n, sizeof *nb);
    if (nb == NULL) return; /* longer chains, still correct */
    for (size_t i = 0; i <= t->mask; i++) {
        plancache_plan *p = t->buckets[i];
        while (p != NULL) {
            plancache_plan *next = p->next;
            p->next = nb[p->hash & (n - 1)];
            nb[p->hash & (n - 1)] = p;
            p = next;
        }
    }
    free(t->buckets);
    t->buckets = nb;
    t->mask = n - 1;
}

int plancache_insert(plancache_table *t, plancache_plan *p) {
    if (p->table != NULL) return -1; /* already filed */
    for (plancache_plan *q = t->buckets[p->hash & t->mask]; q != NULL; q = q->next)
        if (q->hash == p->hash && q->nwords == p->nwords && memcmp(q->words, p->words, p->nwords * 8) == 0) {
            plancache_remove(t, q); /* replaced */
            break;
        }
    size_t capacity = plancache_capacity(0);
    while (t->count >= capacity && t->oldest != NULL) { /* bounded: least recently used out */
        plancache_remove(t, t->oldest);
        t->stats.evictions++;
    }
    if (t->count >= t->mask + 1) table_grow(t);
    plancache_plan_ref(p);
    p->table = t;
    p->next = t->buckets[p->hash & t->mask];
    t->buckets[p->hash & t->mask] = p;
    lru_push(t, p);
    t->count++;
    t->stats.inserts++;
    return 0;
}
