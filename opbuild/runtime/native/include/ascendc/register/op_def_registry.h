/* register/op_def_registry.h: what an Ascend C op_host source includes to declare its op
 * (ops::OpDef, OP_ADD; register/op_def.h) and write its tiling and infer functions (the gert
 * contexts, ge types). opbuild's clean-room host headers. */
#ifndef OPBUILD_ASCENDC_REGISTER_OP_DEF_REGISTRY_H
#define OPBUILD_ASCENDC_REGISTER_OP_DEF_REGISTRY_H

#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/tiling_context.h"
#include "graph/ge_error_codes.h"
#include "graph/types.h"
#include "register/op_def.h"
#include "register/op_impl_registry.h"

#endif
