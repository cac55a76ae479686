/* opcache.h: the native hit path of the aclnn C ABI: call key -> cached plan -> launch, no Python.
 *
 * The cache is plancache.h's table, one per thread, as CANN's op cache (no lock on a hit); a plan is what a Python miss
 * (opbuild/runtime/capi.py) computed: kernel entry, block_dim, a copy of the tiling argument,
 * workspace size. The key is opkey.h's, built from the aclTensors and attribute pointers of the
 * call with the op's signature (learned from its first miss). Eviction and the package stamp
 * check are plancache.c's (the same as the _fastpath extension's).
 */
#ifndef OPBUILD_OPCACHE_H
#define OPBUILD_OPCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "acl_internal.h"
#include "opkey.h"
#include "plancache.h"

/* An op of a package, registered once per (package root, op type); `id` is the key's op id. */
typedef struct opcache_op opcache_op;

/* A cached plan: the one plan record (plancache.h); refcounted (executors and stream launches
 * hold references). */
typedef plancache_plan opcache_plan;

ACL_INTERNAL opcache_op *opcache_op_get(const char *root, const char *op_type);
ACL_INTERNAL uint64_t opcache_op_id(const opcache_op *op);
/* "aclnn<OpType>" into buf. */
ACL_INTERNAL void opcache_op_api(const opcache_op *op, char *buf, size_t n);
ACL_INTERNAL int opcache_op_has_signature(const opcache_op *op);
/* Learn the op's signature from capi's tuple (in_kinds, attr_kinds, default attr words); GIL held. */
ACL_INTERNAL void opcache_op_set_signature(opcache_op *op, const uint8_t *in_kinds, uint32_t n_in,
                                           const uint8_t *attr_kinds, uint32_t n_attr, uint32_t n_out,
                                           const uint64_t *const *defaults, const size_t *default_len);

/* The key of a call from its C arguments; 0 and a key, or -1 when the call is not one the
 * native path handles (no signature yet, a tensor list, a NULL or non-tensor argument...). */
ACL_INTERNAL int opcache_call_key(const opcache_op *op, uint64_t dp, const void *const *inputs,
                                  const void *const *attrs, const aclTensor *const *outputs, opkey *key);

/* The calling thread's plan for `key` (a new reference), or NULL (plancache_find). */
ACL_INTERNAL opcache_plan *opcache_lookup(const opkey *key);
/* Count a call the native path could not even look up (no key: no signature yet, a list...). */
ACL_INTERNAL void opcache_note_miss(void);
/* Insert into the calling thread's table (plancache_insert; takes a reference). */
ACL_INTERNAL void opcache_insert(opcache_plan *plan);
#define opcache_plan_unref plancache_plan_unref
#define opcache_plan_ref plancache_plan_ref

/* Launch arguments of a hit: the tensors' first-element addresses, 0 (workspace), tiling. -1 if
 * a tensor cannot be passed as it is (misaligned, no data, view outside its storage). */
ACL_INTERNAL int opcache_launch_args(opcache_plan *plan, const void *const *inputs, uint32_t n_in,
                                     const aclTensor *const *outputs, uint32_t n_out, void **args);
ACL_INTERNAL uint32_t opcache_n_inputs(const opcache_op *op);
ACL_INTERNAL uint32_t opcache_n_outputs(const opcache_op *op);

typedef opbuild_aclnn_cache_counters opcache_stats;

#endif /* OPBUILD_OPCACHE_H */
