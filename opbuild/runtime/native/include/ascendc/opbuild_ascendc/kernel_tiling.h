/* opbuild_ascendc/kernel_tiling.h: the kernel side of the tiling data.
 *
 * The build force-includes the op's generated <op>_ascendc_tiling.h, which declares the kernel-side
 * tiling structs (the host tiling classes' fields, CANN's layout) and
 *     #define OPBUILD_ASCENDC_TILING_TYPE <the default struct>
 * GET_TILING_DATA copies the launch's tiling bytes into a local of that type, or of the type a
 * REGISTER_TILING_DEFAULT before it in the function names (all zero when the launch has no tiling
 * data). TILING_KEY_IS(k) is opbuild/kernel.h's (the key the launch set).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_TILING_H
#define OPBUILD_ASCENDC_KERNEL_TILING_H

#include "opbuild_ascendc/kernel_base.h"

namespace opbuild {
namespace ascendc {
inline void copy_tiling(void *dst, const void *tiling, size_t n) {
    if (tiling == nullptr)
        std::memset(dst, 0, n);
    else
        std::memcpy(dst, tiling, n);
}
}  // namespace ascendc
}  // namespace opbuild

/* The type GET_TILING_DATA copies into: the generated header's default struct, or in a kernel
 * function after REGISTER_TILING_DEFAULT(T), T (a local alias hides this global one). */
#ifdef OPBUILD_ASCENDC_TILING_TYPE
using opbuild_ascendc_tiling_type_ = OPBUILD_ASCENDC_TILING_TYPE;
#else
struct opbuild_ascendc_no_tiling_header_was_force_included_and_no_REGISTER_TILING_DEFAULT;
using opbuild_ascendc_tiling_type_ = opbuild_ascendc_no_tiling_header_was_force_included_and_no_REGISTER_TILING_DEFAULT;
#endif

#define GET_TILING_DATA_WITH_STRUCT(Type, var, tiling) \
    Type var;                                          \
    ::opbuild::ascendc::copy_tiling(&(var), (tiling), sizeof(var))

#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT(opbuild_ascendc_tiling_type_, var, tiling)

#define GET_TILING_DATA_MEMBER(Type, member, var, tiling)                                     \
    decltype(Type::member) var;                                                              \
    ::opbuild::ascendc::copy_tiling(&(var),                                                  \
                                    (tiling) == nullptr ? nullptr : (const uint8_t *)(tiling) + offsetof(Type, member), \
                                    sizeof(var))

#define GET_TILING_DATA_PTR_WITH_STRUCT(Type, var, tiling) const Type *var = reinterpret_cast<const Type *>(tiling)

/* REGISTER_TILING_DEFAULT(T): GET_TILING_DATA in this function copies a T (kernels whose tiling is a
 * plain struct of their own). REGISTER_TILING_FOR_TILINGKEY: nothing (such kernels name the struct
 * with GET_TILING_DATA_WITH_STRUCT in the key's branch). */
#define REGISTER_TILING_DEFAULT(Type) using opbuild_ascendc_tiling_type_ = Type
#define REGISTER_TILING_FOR_TILINGKEY(expr, Type)

#endif /* OPBUILD_ASCENDC_KERNEL_TILING_H */
