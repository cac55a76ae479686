/* opkey.c: the op-parameter cache key (see opkey.h for the word layout). */
#include "opkey.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const OPKEY_ENV_VARS[OPKEY_ENV_COUNT] = OPKEY_ENV_VAR_NAMES;

void opkey_put_slow(opkey *k, uint64_t word) {
    if (k->n == k->cap) {
        if (k->failed) return;
        size_t cap = k->cap * 2;
        uint64_t *w = k->w == k->inline_ ? malloc(cap * sizeof *w) : realloc(k->w, cap * sizeof *w);
        if (w == NULL) {
            k->failed = 1;
            return;
        }
        if (k->w == k->inline_) memcpy(w, k->inline_, k->n * sizeof *w);
        k->w = w;
        k->cap = cap;
    }
    k->w[k->n++] = word;
}

void opkey_begin(opkey *k, uint64_t op_id, uint64_t env_token, uint64_t dp, uint32_t n_slots, uint32_t n_attrs) {
    k->w = k->inline_;
    k->cap = OPKEY_INLINE;
    k->n = 0;
    k->failed = 0;
    opkey_put(k, OPKEY_VERSION);
    opkey_put(k, op_id);
    opkey_put(k, env_token);
    opkey_put(k, dp);
    opkey_put(k, n_slots);
    opkey_put(k, n_attrs);
}

void opkey_free(opkey *k) {
    if (k->w != k->inline_) free(k->w);
    k->w = k->inline_;
    k->n = 0;
}

void opkey_absent(opkey *k) { opkey_put(k, OPKEY_ABSENT); }

void opkey_list(opkey *k, uint64_t count) {
    opkey_put(k, OPKEY_LIST);
    opkey_put(k, count);
}

void opkey_tensor(opkey *k, int64_t dtype, int64_t format, uint64_t ndim, const int64_t *dims, const int64_t *strides,
                  int64_t offset) {
    opkey_put(k, OPKEY_TENSOR);
    opkey_put(k, (uint64_t)dtype);
    opkey_put(k, (uint64_t)format);
    opkey_put(k, ndim);
    for (uint64_t i = 0; i < ndim; i++) opkey_put(k, (uint64_t)dims[i]);
    for (uint64_t i = 0; i < ndim; i++) opkey_put(k, (uint64_t)strides[i]);
    opkey_put(k, (uint64_t)offset);
}

static uint64_t double_bits(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

void opkey_int(opkey *k, int64_t v) {
    opkey_put(k, OPKEY_INT);
    opkey_put(k, (uint64_t)v);
}

void opkey_float(opkey *k, double v) {
    opkey_put(k, OPKEY_FLOAT);
    opkey_put(k, double_bits(v));
}

void opkey_bool(opkey *k, int v) {
    opkey_put(k, OPKEY_BOOL);
    opkey_put(k, v ? 1u : 0u);
}

void opkey_str(opkey *k, const char *s, size_t len) {
    opkey_put(k, OPKEY_STR);
    opkey_put(k, len);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t word = 0;
        for (size_t j = 0; j < 8 && i + j < len; j++) word |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
        opkey_put(k, word);
    }
}

void opkey_ints(opkey *k, const int64_t *v, uint64_t n) {
    opkey_put(k, OPKEY_INTS);
    opkey_put(k, n);
    for (uint64_t i = 0; i < n; i++) opkey_put(k, (uint64_t)v[i]);
}

void opkey_floats_f32(opkey *k, const float *v, uint64_t n) {
    opkey_put(k, OPKEY_FLOATS);
    opkey_put(k, n);
    for (uint64_t i = 0; i < n; i++) opkey_put(k, double_bits((double)v[i]));
}

void opkey_floats(opkey *k, const double *v, uint64_t n) {
    opkey_put(k, OPKEY_FLOATS);
    opkey_put(k, n);
    for (uint64_t i = 0; i < n; i++) opkey_put(k, double_bits(v[i]));
}

void opkey_bools(opkey *k, const uint8_t *v, uint64_t n) {
    opkey_put(k, OPKEY_BOOLS);
    opkey_put(k, n);
    for (uint64_t i = 0; i < n; i++) opkey_put(k, v[i] ? 1u : 0u);
}

void opkey_raw(opkey *k, const uint64_t *w, size_t n) {
    for (size_t i = 0; i < n; i++) opkey_put(k, w[i]);
}

uint64_t opkey_hash(const uint64_t *w, size_t n) {
    /* two independent lanes (the multiplies overlap), each (h ^ word) * odd constant; the final
     * mix (murmur3's fmix64) spreads every bit into the low bits the tables index with */
    uint64_t a = 0x9e3779b97f4a7c15ull ^ n, b = 0xc2b2ae3d27d4eb4full;
    size_t i = 0;
    for (; i + 1 < n; i += 2) {
        a = (a ^ w[i]) * 0xff51afd7ed558ccdull;
        b = (b ^ w[i + 1]) * 0xc4ceb9fe1a85ec53ull;
    }
    if (i < n) a = (a ^ w[i]) * 0xff51afd7ed558ccdull;
    uint64_t h = a ^ (b >> 29) ^ (b << 35);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

uint64_t opkey_env_hash(const char *const *values) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < OPKEY_ENV_COUNT; i++) {
        const char *v = values[i];
        if (v != NULL) {
            for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
                h ^= *p;
                h *= 0x100000001b3ull;
            }
        }
        h ^= v != NULL ? 0x01u : 0x00u;
        h *= 0x100000001b3ull;
    }
    return h;
}

extern char **environ;

static int env_unchanged(const opkey_env_cache *c) {
    char **env = environ;
    if (!c->valid || env != c->env) return 0;
    if (env == NULL) return 1;
    if (env[c->n] != NULL || (c->n && env[c->n - 1] != c->last)) return 0;
    for (int i = 0; i < OPKEY_ENV_COUNT; i++)
        if (c->entry[i] != NULL && env[c->slot[i]] != c->entry[i]) return 0;
    return 1;
}

/* One pass over the environment. The first definition of a name wins, as with getenv. */
static uint64_t env_scan(opkey_env_cache *c) {
    static size_t lens[OPKEY_ENV_COUNT];
    if (lens[0] == 0)
        for (int i = 0; i < OPKEY_ENV_COUNT; i++) lens[i] = strlen(OPKEY_ENV_VARS[i]);
    const char *values[OPKEY_ENV_COUNT] = {NULL, NULL, NULL, NULL};
    char **env = environ;
    size_t n = 0;
    for (; env != NULL && env[n] != NULL; n++) {
        const char *entry = env[n];
        if (entry[0] != 'O' && entry[0] != 'A') continue;
        for (int i = 0; i < OPKEY_ENV_COUNT; i++) {
            if (values[i] == NULL && strncmp(entry, OPKEY_ENV_VARS[i], lens[i]) == 0 && entry[lens[i]] == '=') {
                values[i] = entry + lens[i] + 1;
                c->entry[i] = entry;
                c->slot[i] = n;
                break;
            }
        }
    }
    for (int i = 0; i < OPKEY_ENV_COUNT; i++)
        if (values[i] == NULL) c->entry[i] = NULL;
    c->env = env;
    c->n = n;
    c->last = n ? env[n - 1] : NULL;
    c->token = opkey_env_hash(values);
    c->valid = 1;
    return c->token;
}

uint64_t opkey_env_token(void) {
    opkey_env_cache c;
    return env_scan(&c);
}

uint64_t opkey_env_token_cached(opkey_env_cache *c) { return env_unchanged(c) ? c->token : env_scan(c); }

int64_t opkey_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
