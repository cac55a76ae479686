/* kernel_operator.h: opbuild's Ascend C kernel API for the CPU twin (C++17, g++).
 *
 * A clean-room implementation of the public Ascend C API reference (docs/ascendc.md lists each API
 * with the page it follows and where the CPU twin differs from the device). Ascend C kernel sources
 * compile unchanged against it; each block of a launch runs on a host thread through
 * opbuild::ascendc::run_block (opbuild_ascendc/launch.h, used by the launch shim).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_OPERATOR_H
#define OPBUILD_ASCENDC_KERNEL_OPERATOR_H

#ifndef OPBUILD_ASCENDC
#define OPBUILD_ASCENDC 1
#endif

#include "opbuild_ascendc/kernel_base.h"
#include "opbuild_ascendc/kernel_tensor.h"
#include "opbuild_ascendc/kernel_pipe.h"
#include "opbuild_ascendc/kernel_copy.h"
#include "opbuild_ascendc/kernel_mask.h"
#include "opbuild_ascendc/kernel_vec.h"
#include "opbuild_ascendc/kernel_reduce.h"
#include "opbuild_ascendc/kernel_cast.h"
#include "opbuild_ascendc/kernel_dump.h"
#include "opbuild_ascendc/kernel_tiling.h"

#endif /* OPBUILD_ASCENDC_KERNEL_OPERATOR_H */
