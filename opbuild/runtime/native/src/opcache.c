/* opcache.c: the native hit path's cache (see opcache.h). No Python here: a hit never takes the GIL. */
#define _GNU_SOURCE
#include "opcache.h"
#include "setting.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ops ------------------------------------------------------------------------------------ */

struct opcache_op {
    struct opcache_op *next;
    char *root, *op_type;
    uint64_t id;
    int ready; /* atomic: the signature below is set */
    uint32_t n_in, n_attr, n_out;
    uint8_t in_kind[64];    /* 0 required, 1 optional, 2 dynamic */
    uint8_t attr_kind[64];  /* OPKEY_INT ... OPKEY_BOOLS */
    uint64_t *attr_default[64];
    size_t attr_default_len[64];
};

static pthread_mutex_t g_ops_lock = PTHREAD_MUTEX_INITIALIZER;
static opcache_op *g_ops;
static uint64_t g_next_id = 1;

/* last lookup of this thread: the generated wrappers pass the same two pointers every call */
static __thread const char *t_last_root, *t_last_type;
static __thread opcache_op *t_last_op;

opcache_op *opcache_op_get(const char *root, const char *op_type) {
    /* roots are interned (opbuild_aclnn_package_root never frees one); an op type literal's
     * address could be another op's after a library is unloaded: its text is compared too */
    if (root == t_last_root && op_type == t_last_type && t_last_op != NULL && strcmp(t_last_op->op_type, op_type) == 0)
        return t_last_op;
    opcache_op *found = NULL;
    pthread_mutex_lock(&g_ops_lock);
    for (opcache_op *o = g_ops; o != NULL; o = o->next)
        if (strcmp(o->op_type, op_type) == 0 && strcmp(o->root, root) == 0) {
            found = o;
            break;
        }
    if (found == NULL) {
        found = calloc(1, sizeof *found);
        if (found != NULL) {
            found->root = strdup(root);
            found->op_type = strdup(op_type);
            if (found->root == NULL || found->op_type == NULL) {
                free(found->root);
                free(found->op_type);
                free(found);
                found = NULL;
            } else {
                found->id = g_next_id++;
                found->next = g_ops;
                g_ops = found;
            }
        }
    }
    pthread_mutex_unlock(&g_ops_lock);
    if (found != NULL) {
        t_last_root = root;
        t_last_type = op_type;
        t_last_op = found;
    }
    return found;
}

uint64_t opcache_op_id(const opcache_op *op) { return op->id; }

void opcache_op_api(const opcache_op *op, char *buf, size_t n) { snprintf(buf, n, "aclnn%s", op->op_type); }
uint32_t opcache_n_inputs(const opcache_op *op) { return op->n_in; }
uint32_t opcache_n_outputs(const opcache_op *op) { return op->n_out; }

int opcache_op_has_signature(const opcache_op *op) { return __atomic_load_n(&op->ready, __ATOMIC_ACQUIRE); }

void opcache_op_set_signature(opcache_op *op, const uint8_t *in_kinds, uint32_t n_in, const uint8_t *attr_kinds,
                              uint32_t n_attr, uint32_t n_out, const uint64_t *const *defaults,
                              const size_t *default_len) {
    if (n_in > 64 || n_attr > 64 || n_out > 64) return;
    pthread_mutex_lock(&g_ops_lock);
    if (!op->ready) {
        op->n_in = n_in;
        op->n_attr = n_attr;
        op->n_out = n_out;
        memcpy(op->in_kind, in_kinds, n_in);
        memcpy(op->attr_kind, attr_kinds, n_attr);
        int ok = 1;
        for (uint32_t i = 0; i < n_attr; i++) {
            op->attr_default_len[i] = default_len[i];
            if (default_len[i]) {
                op->attr_default[i] = malloc(default_len[i] * sizeof(uint64_t));
                if (op->attr_default[i] == NULL) ok = 0;
                else memcpy(op->attr_default[i], defaults[i], default_len[i] * sizeof(uint64_t));
            }
        }
        if (ok) __atomic_store_n(&op->ready, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_ops_lock);
}

/* ---- the key of a C call -------------------------------------------------------------------- */

static int key_tensor(opkey *key, const aclTensor *t) {
    if (t == NULL || t->magic != ACL_MAGIC(OPBUILD_ACL_TENSOR)) return -1;
    opkey_tensor(key, t->dataType, t->format, t->viewDimsNum, t->viewDims, t->strides, t->offset);
    return 0;
}

typedef plancache_table table;
static table *my_table(int create);
static uint64_t env_token(void);

int opcache_call_key(const opcache_op *op, uint64_t dp, const void *const *inputs, const void *const *attrs,
                     const aclTensor *const *outputs, opkey *key) {
    int ready = opcache_op_has_signature(op);
    opkey_begin(key, op->id, env_token(), dp, ready ? op->n_in + op->n_out : 0, ready ? op->n_attr : 0);
    if (!ready) return -1;
    for (uint32_t i = 0; i < op->n_in; i++) {
        if (op->in_kind[i] != 0 || key_tensor(key, inputs[i]) < 0) return -1; /* lists, absent: Python */
    }
    for (uint32_t i = 0; i < op->n_out; i++)
        if (key_tensor(key, outputs[i]) < 0) return -1;
    for (uint32_t i = 0; i < op->n_attr; i++) {
        const void *a = attrs[i];
        if (a == NULL) {
            if (!op->attr_default_len[i]) return -1; /* required: Python reports it */
            opkey_raw(key, op->attr_default[i], op->attr_default_len[i]);
            continue;
        }
        switch (op->attr_kind[i]) {
        case OPKEY_INT: opkey_int(key, *(const int64_t *)a); break;
        case OPKEY_FLOAT: opkey_float(key, *(const double *)a); break;
        case OPKEY_BOOL: opkey_bool(key, *(const _Bool *)a); break;
        case OPKEY_STR: opkey_str(key, (const char *)a, strlen((const char *)a)); break;
        case OPKEY_INTS: {
            const aclIntArray *v = a;
            if (v->magic != ACL_MAGIC(OPBUILD_ACL_INT_ARRAY)) return -1;
            opkey_ints(key, v->values, v->size);
            break;
        }
        case OPKEY_FLOATS: {
            const aclFloatArray *v = a;
            if (v->magic != ACL_MAGIC(OPBUILD_ACL_FLOAT_ARRAY)) return -1;
            opkey_floats_f32(key, v->values, v->size);
            break;
        }
        case OPKEY_BOOLS: {
            const aclBoolArray *v = a;
            if (v->magic != ACL_MAGIC(OPBUILD_ACL_BOOL_ARRAY)) return -1;
            opkey_bools(key, (const uint8_t *)v->values, v->size);
            break;
        }
        default: return -1;
        }
    }
    return key->failed ? -1 : 0;
}

/* ---- the per-thread table (plancache.h) ------------------------------------------------------ */

/* This thread's table: created at first use, freed at thread exit (a pthread key destructor). */
static __thread plancache_table *t_table;
static pthread_key_t g_table_key;
static pthread_once_t g_table_once = PTHREAD_ONCE_INIT;

static void table_free(void *p) { plancache_table_free(p); }

static void make_table_key(void) { pthread_key_create(&g_table_key, table_free); }

static table *my_table(int create) {
    table *t = t_table;
    if (t != NULL || !create) return t;
    pthread_once(&g_table_once, make_table_key);
    t = plancache_table_new();
    if (t == NULL) return NULL;
    pthread_setspecific(g_table_key, t);
    t_table = t;
    return t;
}

/* The search environment's token, through this thread's table's cache (opkey.h). */
static uint64_t env_token(void) {
    table *t = my_table(1);
    return t != NULL ? opkey_env_token_cached(&t->env) : opkey_env_token();
}

void opcache_note_miss(void) {
    table *t = my_table(1);
    if (t != NULL) t->stats.misses++;
}

opcache_plan *opcache_lookup(const opkey *key) {
    table *t = my_table(1);
    if (t == NULL) return NULL;
    opcache_plan *p = plancache_find(t, key->w, key->n, opkey_hash(key->w, key->n));
    if (p != NULL) opcache_plan_ref(p);
    return p;
}

void opcache_insert(opcache_plan *plan) {
    table *t = my_table(1);
    if (t != NULL) plancache_insert(t, plan);
}

/* ---- launch arguments ----------------------------------------------------------------------- */

/* The address of a tensor's first view element, or NULL for anything the Python path handles or
 * reports: empty, no data, a view outside its storage, dims whose extent overflows, storage
 * reaching past the end of the aclrtMalloc buffer holding it, misaligned. */
static void *view_address(opcache_plan *plan, uint32_t slot, uint64_t gen, const aclTensor *t, uint8_t itemsize) {
    if (t->data == NULL) return NULL;
    int64_t low = t->offset, high = t->offset, storage = 1, step;
    for (uint64_t i = 0; i < t->viewDimsNum; i++) {
        int64_t d = t->viewDims[i], s = t->strides[i];
        if (d <= 0) return NULL; /* empty tensors: Python */
        if (__builtin_mul_overflow(d - 1, s, &step)) return NULL;
        if (__builtin_add_overflow(s > 0 ? high : low, step, s > 0 ? &high : &low)) return NULL;
    }
    for (uint64_t i = 0; i < t->storageDimsNum; i++)
        if (__builtin_mul_overflow(storage, t->storageDims[i], &storage)) return NULL;
    if (low < 0 || high >= storage) return NULL; /* Python reports it */
    uint64_t bytes, room;
    if (acl_tensor_storage_bytes(t, itemsize, &bytes) != 0) return NULL;
    int memo = slot < PLANCACHE_EXTENT_MEMO && plan->extent_gen == gen;
    if (!memo || plan->extent_data[slot] != t->data || plan->extent_bytes[slot] != bytes) {
        if (acl_device_room(t->data, &room) && bytes > room)
            return NULL; /* storage past the end of its device buffer: Python reports it */
        if (slot < PLANCACHE_EXTENT_MEMO) {
            plan->extent_data[slot] = t->data;
            plan->extent_bytes[slot] = bytes;
        }
    }
    uintptr_t addr = (uintptr_t)t->data + (uintptr_t)(t->offset * itemsize);
    if (itemsize && addr % itemsize) return NULL; /* misaligned: Python copies */
    return (void *)addr;
}

int opcache_launch_args(opcache_plan *plan, const void *const *inputs, uint32_t n_in,
                        const aclTensor *const *outputs, uint32_t n_out, void **args) {
    if (n_in + n_out != plan->ntensors || plan->nargs != plan->ntensors + 2) return -1;
    uint64_t gen = acl_device_generation();
    for (uint32_t i = 0; i < plan->ntensors; i++) {
        const aclTensor *t = i < n_in ? (const aclTensor *)inputs[i] : outputs[i - n_in];
        void *a = view_address(plan, i, gen, t, plan->itemsize[i]);
        if (a == NULL) {
            plan->extent_gen = 0; /* (a memo half updated) */
            return -1;
        }
        args[i] = a;
    }
    plan->extent_gen = gen;
    args[plan->ntensors] = NULL;
    args[plan->ntensors + 1] = plan->tiling;
    return 0;
}

/* ---- exported for tools and tests ----------------------------------------------------------- */

void opbuild_aclnn_clear_cache(void) {
    table *t = my_table(0);
    if (t != NULL) plancache_table_clear(t);
}

size_t opbuild_aclnn_cache_capacity(size_t capacity) { return plancache_capacity(capacity); }

void opbuild_aclnn_cache_stats(opcache_stats *out) {
    table *t = my_table(0);
    if (t == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    out->hits = t->stats.hits;
    out->misses = t->stats.misses;
    out->inserts = t->stats.inserts;
    out->stale = t->stats.stale;
    out->evictions = t->stats.evictions;
    out->size = t->count;
}

ACL_FUNC_VISIBILITY uint64_t opbuild_aclnn_op_id(const char *root, const char *op_type) {
    opcache_op *op = opcache_op_get(root, op_type);
    return op ? op->id : 0;
}

ACL_FUNC_VISIBILITY int64_t opbuild_aclnn_call_key(const char *root, const char *op_type, uint64_t dp,
                                                   const void *const *inputs, const void *const *attrs,
                                                   const aclTensor *const *outputs, uint64_t *out, size_t cap) {
    opcache_op *op = opcache_op_get(root, op_type);
    if (op == NULL) return -1;
    opkey key;
    int rc = opcache_call_key(op, dp, inputs, attrs, outputs, &key);
    int64_t n = rc < 0 ? -1 : (int64_t)key.n;
    if (n > 0 && out != NULL) memcpy(out, key.w, (size_t)(n < (int64_t)cap ? n : (int64_t)cap) * sizeof(uint64_t));
    opkey_free(&key);
    return n;
}

ACL_FUNC_VISIBILITY int64_t opbuild_opkey_env_token(void) { return (int64_t)opkey_env_token(); }
