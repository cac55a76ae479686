/* plancache.h: the one native plan cache (issue 24): the plan record, the per-thread table, its
 * one eviction policy and its one freshness check.
 *
 * Every front end that serves a cache hit in C keeps its plans here: the aclnn C ABI (opcache.c,
 * in the acl library) and the _fastpath extension's two-phase wrappers (fastpath.c). Like
 * opkey.c, this file has no dependency (no Python, no acl types) and is compiled into both
 * libraries (setup.py); each library has its own tables, with the same behaviour:
 *
 *   - a plan is filed under its key (opkey.h words); equal words = the same plan;
 *   - a table holds at most plancache_capacity() plans (OPBUILD_PARAM_CACHE_SIZE, default 1024,
 *     read once per process); inserting into a full table evicts the least recently used plan
 *     (a lookup or a touch makes a plan the most recently used);
 *   - a plan whose package stamp (mtime ns, size, inode of the package's
 *     binary_info_config.json) changed is dropped at its next lookup, so a package rebuilt in
 *     place selects again; the stamp is re-checked at most every OPKEY_STAMP_INTERVAL_NS per plan.
 *
 * A table is per thread by its owner's choice: the acl library keeps one per pthread (opcache.c),
 * _fastpath one per Python thread state (fastpath.c). Nothing here locks: a table is used by one
 * thread. Plans are refcounted (an acl executor or a stream launch may outlive its table entry).
 * What a front end keeps beside a plan (the Python plan objects) is `front`, released by
 * `front_free` when the last reference goes.
 */
#ifndef OPBUILD_PLANCACHE_H
#define OPBUILD_PLANCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "opkey.h"

#define PLANCACHE_EXTENT_MEMO 8 /* tensors of a plan whose extent check is remembered (C ABI) */
#define PLANCACHE_DEFAULT_CAPACITY 1024

typedef struct plancache_table plancache_table;

/* A plan: what a Python miss computed for one key, enough to launch the next call of that key. */
typedef struct plancache_plan {
    long refs; /* atomic */
    uint64_t *words; /* the key (opkey.h) */
    size_t nwords;
    uint64_t hash;   /* opkey_hash of the words */
    /* the launch */
    void *fn;
    uint32_t block_dim, nargs, ntensors;
    int sync, empty;
    uint64_t ws_size;
    void *tiling;       /* the tiling argument; owned (freed with the plan) when tiling_owned */
    int tiling_owned;
    size_t tiling_len;  /* bytes of the tiling argument (as the record gave them) */
    uint8_t *itemsize;  /* per tensor slot, or NULL (owned) */
    char *key_text;     /* full simplified key, or NULL (owned) */
    char *kernel;       /* binary name, for messages, or NULL (owned) */
    /* freshness (plancache_plan_stamp) */
    char *stamp_path;   /* binary_info_config.json; NULL = not checked (owned) */
    int64_t stamp[3];   /* mtime ns, size, inode */
    int64_t checked_ns; /* when the stamp was last checked (a plan is used by one thread) */
    /* The tensors last found to fit in their device buffers, valid while the simulator's
     * allocation generation is extent_gen (the C ABI's view_address). */
    uint64_t extent_gen;
    const void *extent_data[PLANCACHE_EXTENT_MEMO];
    uint64_t extent_bytes[PLANCACHE_EXTENT_MEMO];
    /* what the front end keeps with the plan, released with it */
    void *front;
    void (*front_free)(void *front);
    /* the table's links (a plan is in at most one table, once) */
    struct plancache_plan *next;          /* bucket chain */
    struct plancache_plan *newer, *older; /* recency list */
    plancache_table *table;
} plancache_plan;

typedef struct plancache_stats {
    uint64_t hits, misses, inserts, stale, size, evictions;
} plancache_stats;

struct plancache_table {
    plancache_plan **buckets;
    size_t mask, count;
    plancache_plan *newest, *oldest; /* the recency list, most recently used first */
    plancache_stats stats;
    opkey_env_cache env; /* this thread's last look at the search environment (opkey.h) */
};

/* A new plan (one reference) filed under `key`'s words; NULL when out of memory. */
plancache_plan *plancache_plan_new(const uint64_t *words, size_t nwords);
void plancache_plan_ref(plancache_plan *p);
void plancache_plan_unref(plancache_plan *p);
/* The package stamp the plan is checked against: `path` (NULL or "" = never stale) and its
 * stamp when the plan was made (`stamp`), or NULL to stat the file now. -1 when the file cannot
 * be stat'ed (such a plan must not be cached). */
int plancache_plan_stamp(plancache_plan *p, const char *path, const int64_t *stamp);
/* Whether the plan's package is unchanged (one stat at most every OPKEY_STAMP_INTERVAL_NS). */
int plancache_plan_fresh(plancache_plan *p);

/* ---- the plan record: the one way a Python miss hands its plan to C ------------------------
 *
 * Built by opbuild.runtime.call.plans.native_record from a plans.Plan, parsed by
 * plancache_plan_from_record for both front ends (fastpath.c register_plan, acl_bridge.c
 * learn_from_miss). Native byte order: PLANCACHE_RECORD_WORDS 64-bit words
 *   magic, fn, block_dim, nargs, flags (PLANCACHE_SYNC | PLANCACHE_EMPTY), workspace size,
 *   tiling address (the Python plan's buffer), stamp mtime ns, size, inode,
 *   the lengths of: tiling bytes, item sizes (one byte per tensor), stamp path, key text, kernel
 * then those five byte strings in that order, nothing after them. A change to what a plan holds
 * is this layout, plancache_plan, the parser (and plancache_plan_like beside it) and native_record. */
#define PLANCACHE_RECORD_MAGIC 0x31304e414c50504full /* "OPPLAN01" */
#define PLANCACHE_RECORD_WORDS 15
enum { PLANCACHE_SYNC = 1, PLANCACHE_EMPTY = 2 };

/* A new plan (one reference) from a record, filed under `words`; the tiling argument is a copy
 * of the record's tiling bytes when `copy_tiling` (a plan that outlives the Python plan), else
 * the record's tiling address (the caller keeps the Python plan alive). NULL and a message in
 * `err` naming what is wrong for a malformed record (or out of memory). */
plancache_plan *plancache_plan_from_record(const void *record, size_t len, const uint64_t *words, size_t nwords,
                                           int copy_tiling, char *err, size_t errlen);

/* A new plan (one reference) filed under `words` that launches like `proto` (the same kernel,
 * arguments, flags, item sizes, key text, kernel name and package stamp) with its own block_dim,
 * workspace size and tiling argument (not owned: the caller keeps it alive, as for a record's
 * address): the native miss of a known call signature (signature_miss.c), whose plans differ
 * from its first one in these three only. NULL when out of memory. Beside the parser: a change
 * to what a plan holds is made in both. */
plancache_plan *plancache_plan_like(const plancache_plan *proto, const uint64_t *words, size_t nwords,
                                   uint32_t block_dim, uint64_t ws_size, void *tiling);

/* The plans a table holds at most (> 0 sets it for every table's next insert). */
size_t plancache_capacity(size_t set);

plancache_table *plancache_table_new(void);
void plancache_table_free(plancache_table *t);
/* Drop every plan. */
void plancache_table_clear(plancache_table *t);
/* The plan filed under these words (borrowed: the table's reference), or NULL. A stale plan is
 * dropped (NULL). Counts a hit or a miss; a hit becomes the most recently used. */
plancache_plan *plancache_find(plancache_table *t, const uint64_t *words, size_t nwords, uint64_t hash);
/* File a plan (the table takes a reference): a plan under the same words is replaced; a full
 * table evicts its least recently used plan. -1 when out of memory (not filed). */
int plancache_insert(plancache_table *t, plancache_plan *p);
/* Drop one plan of this table. */
void plancache_remove(plancache_table *t, plancache_plan *p);
/* Make a plan found without plancache_find (a front end's memo of its last hit) the most recently used. */
void plancache_touch_slow(plancache_table *t, plancache_plan *p);
static inline void plancache_touch(plancache_table *t, plancache_plan *p) {
    if (t->newest != p) plancache_touch_slow(t, p);
}

#endif /* OPBUILD_PLANCACHE_H */
