/* register/device_op_impl_registry.h: DEVICE_IMPL_OP_OPTILING(OpType).Tiling(func), CANN's
 * registration of a tiling function that also runs on the device ("tiling sink"). opbuild runs
 * tiling on the host only, through the OpDef's AICore().SetTiling(func); this registration is
 * accepted and recorded nowhere (opbuild's clean-room host headers). */
#ifndef OPBUILD_ASCENDC_REGISTER_DEVICE_OP_IMPL_REGISTRY_H
#define OPBUILD_ASCENDC_REGISTER_DEVICE_OP_IMPL_REGISTRY_H

#include "exe_graph/runtime/tiling_context.h"
#include "register/op_def.h"

namespace opbuild_ascendc {

class DeviceOpImplRegistrar {
public:
    explicit DeviceOpImplRegistrar(const char *op_type) : op_type_(op_type) {}
    DeviceOpImplRegistrar &Tiling(ops::TilingFunc func) {
        tiling_ = func;
        return *this;
    }

private:
    const char *op_type_;
    ops::TilingFunc tiling_ = nullptr;
};

}  // namespace opbuild_ascendc

#define OPBUILD_DEV_CAT_(a, b) a##b
#define OPBUILD_DEV_CAT(a, b) OPBUILD_DEV_CAT_(a, b)
#define DEVICE_IMPL_OP_OPTILING(op_type)                                                          \
    [[maybe_unused]] static ::opbuild_ascendc::DeviceOpImplRegistrar OPBUILD_DEV_CAT(             \
        g_opbuild_device_impl_##op_type##_, __COUNTER__) = ::opbuild_ascendc::DeviceOpImplRegistrar(#op_type)

#endif
