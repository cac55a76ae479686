/* opkey.h: the op-parameter cache key, the one definition (issue 11).
 *
 * A key is a sequence of 64-bit words; two calls may share a cached plan (selected binary,
 * tiling result) exactly when their keys are equal. The words, in order:
 *
 *   OPKEY_VERSION
 *   op id            which op of which package (an id handed out per (package root, op type))
 *   env token        SoC and package search environment (opkey_env_token)
 *   dp               deterministic * 4 + impl mode (the d= and p= of the simplified key)
 *   n slots, n attrs
 *   per tensor slot (inputs in IR order, then outputs):
 *     absent optional:  OPKEY_ABSENT
 *     a tensor:         OPKEY_TENSOR, dtype (GE code), format (GE code), ndim, dims..., strides
 *                       (elements)..., storage offset (elements)
 *     a tensor list:    OPKEY_LIST, count, then each tensor as above
 *   per attribute (spec order, defaults filled in):
 *     OPKEY_INT value | OPKEY_FLOAT bits of the double | OPKEY_BOOL 0/1 |
 *     OPKEY_STR byte length, bytes packed 8 per word (little endian, zero padded) |
 *     OPKEY_INTS/FLOATS/BOOLS count, items (int64 / double bits / 0/1)
 *
 * opbuild/runtime/call/cache_key.py is the pure-Python equivalent (used where this is not built);
 * tests/capi/test_native_cache.py checks the two equal over generated calls. Written with no
 * dependency (no Python, no acl types) so that the acl library and the _fastpath extension
 * compile the same file.
 */
#ifndef OPBUILD_OPKEY_H
#define OPBUILD_OPKEY_H

#include <stddef.h>
#include <stdint.h>

#include "opbuild/vocabulary_gen.h" /* OPKEY_VERSION, the OPKEY_* tags, OPKEY_ENV_*, OPKEY_STAMP_INTERVAL_NS */

#define OPKEY_INLINE 256
/* The layout above, for readers of a key's words (signature_miss.c): the header's words, and the
 * words of one tensor slot of `ndim` dims (tag, dtype, format, ndim, dims, strides, offset). */
#define OPKEY_HEADER_WORDS 6
#define OPKEY_TENSOR_WORDS(ndim) (4 + 2 * (ndim) + 1)

typedef struct opkey {
    uint64_t *w;     /* the words: `inline_` or a malloc'ed buffer */
    size_t n, cap;
    int failed;      /* out of memory: the key is unusable (callers take the miss path) */
    uint64_t inline_[OPKEY_INLINE];
} opkey;

/* Append one word (out of line only when the inline buffer is full: every key builds ~30). */
void opkey_put_slow(opkey *k, uint64_t word);
static inline void opkey_put(opkey *k, uint64_t word) {
    if (k->n < k->cap) k->w[k->n++] = word;
    else opkey_put_slow(k, word);
}

void opkey_begin(opkey *k, uint64_t op_id, uint64_t env_token, uint64_t dp, uint32_t n_slots, uint32_t n_attrs);
void opkey_free(opkey *k);
void opkey_absent(opkey *k);
void opkey_list(opkey *k, uint64_t count);
void opkey_tensor(opkey *k, int64_t dtype, int64_t format, uint64_t ndim, const int64_t *dims, const int64_t *strides,
                  int64_t offset);
void opkey_int(opkey *k, int64_t v);
void opkey_float(opkey *k, double v);
void opkey_bool(opkey *k, int v);
void opkey_str(opkey *k, const char *s, size_t len);
void opkey_ints(opkey *k, const int64_t *v, uint64_t n);
void opkey_floats_f32(opkey *k, const float *v, uint64_t n); /* aclFloatArray items, as doubles */
void opkey_floats(opkey *k, const double *v, uint64_t n);
void opkey_bools(opkey *k, const uint8_t *v, uint64_t n);
/* Append words encoded elsewhere (an attribute's default value, encoded once by cache_key.py). */
void opkey_raw(opkey *k, const uint64_t *w, size_t n);

/* 64-bit hash of the words (for hash tables; equality compares the words). Internal to this
 * process (never stored or compared with Python): two multiply lanes, then a final mix. */
uint64_t opkey_hash(const uint64_t *w, size_t n);

/* FNV-1a 64 of the search environment: for each of OPKEY_ENV_VARS, its value's bytes then a
 * 0x01 separator, or just 0x00 when unset. `values[i]` NULL = unset. */
extern const char *const OPKEY_ENV_VARS[OPKEY_ENV_COUNT]; /* OPBUILD_SOC, ASCEND_CUSTOM_OPP_PATH, ... */
uint64_t opkey_env_hash(const char *const *values);
/* opkey_env_hash of this process's environment (one pass over it). */
uint64_t opkey_env_token(void);

/* What a scan saw, to skip the next one when the environment cannot have changed: `environ`,
 * its length, its last entry and each variable's entry. setenv/putenv/unsetenv (os.environ in
 * Python) replace an entry's pointer, append one or shift the array, and each of those changes
 * something remembered. (A value edited in place through getenv's pointer is not seen; POSIX
 * forbids that.) One per thread: the callers keep it in their per-thread cache. */
typedef struct opkey_env_cache {
    int valid;
    char **env;
    size_t n;
    const char *last;
    const char *entry[OPKEY_ENV_COUNT];
    size_t slot[OPKEY_ENV_COUNT];
    uint64_t token;
} opkey_env_cache;
/* opkey_env_token, recomputed only when the environment may have changed since `c` saw it. */
uint64_t opkey_env_token_cached(opkey_env_cache *c);

/* How often a cached plan re-checks its package's stamp (one stat): OPKEY_STAMP_INTERVAL_NS of
 * vocabulary_gen.h (vocabulary.STAMP_INTERVAL_NS says why). */
/* CLOCK_MONOTONIC in ns (vDSO, no syscall). */
int64_t opkey_now_ns(void);

#endif /* OPBUILD_OPKEY_H */
