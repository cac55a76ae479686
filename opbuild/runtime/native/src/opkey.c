/* opkey.c: the op-parameter cache key (see opkey.h for the word layout). */
#include "opkey.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

const char *const OPKEY_ENV_VARS[OPKEY_ENV_COUNT] = {"OPBUILD_SOC", "ASCEND_CUSTOM_OPP_PATH", "ASCEND_OPP_PATH",
                                                     "ASCEND_HOME_PATH"};

static void put(opkey *k, uint64_t word) {
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
    put(k, OPKEY_VERSION);
    put(k, op_id);
    put(k, env_token);
    put(k, dp);
    put(k, n_slots);
    put(k, n_attrs);
}

void opkey_free(opkey *k) {
    if (k->w != k->inline_) free(k->w);
    k->w = k->inline_;
    k->n = 0;
}

void opkey_absent(opkey *k) { put(k, OPKEY_ABSENT); }

void opkey_list(opkey *k, uint64_t count) {
    put(k, OPKEY_LIST);
    put(k, count);
}

void opkey_tensor(opkey *k, int64_t dtype, int64_t format, uint64_t ndim, const int64_t *dims, const int64_t *strides,
                  int64_t offset) {
    put(k, OPKEY_TENSOR);
    put(k, (uint64_t)dtype);
    put(k, (uint64_t)format);
    put(k, ndim);
    for (uint64_t i = 0; i < ndim; i++) put(k, (uint64_t)dims[i]);
    for (uint64_t i = 0; i < ndim; i++) put(k, (uint64_t)strides[i]);
    put(k, (uint64_t)offset);
}

static uint64_t double_bits(double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    return bits;
}

void opkey_int(opkey *k, int64_t v) {
    put(k, OPKEY_INT);
    put(k, (uint64_t)v);
}

void opkey_float(opkey *k, double v) {
    put(k, OPKEY_FLOAT);
    put(k, double_bits(v));
}

void opkey_bool(opkey *k, int v) {
    put(k, OPKEY_BOOL);
    put(k, v ? 1u : 0u);
}

void opkey_str(opkey *k, const char *s, size_t len) {
    put(k, OPKEY_STR);
    put(k, len);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t word = 0;
        for (size_t j = 0; j < 8 && i + j < len; j++) word |= (uint64_t)(unsigned char)s[i + j] << (8 * j);
        put(k, word);
    }
}

void opkey_ints(opkey *k, const int64_t *v, uint64_t n) {
    put(k, OPKEY_INTS);
    put(k, n);
    for (uint64_t i = 0; i < n; i++) put(k, (uint64_t)v[i]);
}

void opkey_floats_f32(opkey *k, const float *v, uint64_t n) {
    put(k, OPKEY_FLOATS);
    put(k, n);
    for (uint64_t i = 0; i < n; i++) put(k, double_bits((double)v[i]));
}

void opkey_floats(opkey *k, const double *v, uint64_t n) {
    put(k, OPKEY_FLOATS);
    put(k, n);
    for (uint64_t i = 0; i < n; i++) put(k, double_bits(v[i]));
}

void opkey_bools(opkey *k, const uint8_t *v, uint64_t n) {
    put(k, OPKEY_BOOLS);
    put(k, n);
    for (uint64_t i = 0; i < n; i++) put(k, v[i] ? 1u : 0u);
}

void opkey_raw(opkey *k, const uint64_t *w, size_t n) {
    for (size_t i = 0; i < n; i++) put(k, w[i]);
}

uint64_t opkey_hash(const uint64_t *w, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    for (size_t i = 0; i < n; i++) {
        h ^= w[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
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

/* One pass over the environment (every call builds a key: 4 getenv calls would scan it 4 times).
 * The first definition of a name wins, as with getenv. */
uint64_t opkey_env_token(void) {
    static size_t lens[OPKEY_ENV_COUNT];
    if (lens[0] == 0)
        for (int i = 0; i < OPKEY_ENV_COUNT; i++) lens[i] = strlen(OPKEY_ENV_VARS[i]);
    const char *values[OPKEY_ENV_COUNT] = {NULL, NULL, NULL, NULL};
    for (char **e = environ; e != NULL && *e != NULL; e++) {
        const char *entry = *e;
        if (entry[0] != 'O' && entry[0] != 'A') continue;
        for (int i = 0; i < OPKEY_ENV_COUNT; i++) {
            if (values[i] == NULL && strncmp(entry, OPKEY_ENV_VARS[i], lens[i]) == 0 && entry[lens[i]] == '=') {
                values[i] = entry + lens[i] + 1;
                break;
            }
        }
    }
    return opkey_env_hash(values);
}

int64_t opkey_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
