"""The CPU twin's checks (issue 22 item 5): each misuse fails its block with
"<API>: <numbers>", which the simulator reports as the launch's error after "block <i>: " (the
runtime turns it into AclnnError 361001 naming op and binary: tests/ascendc/test_ascendc_build.py). One kernel; the tiling key picks the misuse,
`bad` the only block that commits it."""

from __future__ import annotations

import numpy as np
import pytest

import ackit
from opbuild.runtime.device import DeviceError

MISUSE = r"""
#include <stdexcept>
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void misuse(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
    GET_TILING_DATA(td, tiling);
    GlobalTensor<float> gx, gy;
    gx.SetGlobalBuffer((__gm__ float *)x, 1024);
    gy.SetGlobalBuffer((__gm__ float *)y, 1024);
    TPipe pipe;
    TQue<TPosition::VECIN, 1> q1;
    TQue<TPosition::VECIN, 2> q2;
    TBuf<TPosition::VECCALC> buf;
    const bool bad = GetBlockIdx() == td.bad;
    if (TILING_KEY_IS(1)) {  // InitBuffer past the UB
        pipe.InitBuffer(q2, 2, 64 * 1024);
        pipe.InitBuffer(buf, bad ? 64 * 1024 + 32 : 64 * 1024);
    } else if (TILING_KEY_IS(2)) {  // DataCopy of 10 floats = 40 bytes
        pipe.InitBuffer(buf, 4096);
        LocalTensor<float> t = buf.Get<float>();
        DataCopy(t, gx, bad ? 10 : 16);
        DataCopy(gy, t, 16);
    } else if (TILING_KEY_IS(3)) {  // AllocTensor without a free buffer
        pipe.InitBuffer(q1, 1, 1024);
        LocalTensor<float> a = q1.AllocTensor<float>();
        if (bad) a = q1.AllocTensor<float>();
        q1.FreeTensor(a);
    } else if (TILING_KEY_IS(4)) {  // DeQue on an empty queue
        pipe.InitBuffer(q1, 1, 1024);
        LocalTensor<float> a = q1.AllocTensor<float>();
        if (!bad) q1.EnQue(a);
        a = q1.DeQue<float>();
        q1.FreeTensor(a);
    } else if (TILING_KEY_IS(5)) {  // EnQue past the depth (2 buffers, depth 1)
        pipe.InitBuffer(q1, 2, 1024);
        LocalTensor<float> a = q1.AllocTensor<float>(), b = q1.AllocTensor<float>();
        q1.EnQue(a);
        if (bad) q1.EnQue(b);
    } else if (TILING_KEY_IS(6)) {  // GetValue / SetValue / operator[] outside the buffer
        pipe.InitBuffer(buf, 256);
        LocalTensor<float> t = buf.Get<float>();
        t.SetValue(63, 1.0f);
        if (bad && td.n == 0) t.SetValue(64, 1.0f);
        if (bad && td.n == 1) (void)t.GetValue(100);
        if (bad && td.n == 2) (void)t[65];
    } else if (TILING_KEY_IS(7)) {  // vector ops whose span exceeds the buffer
        pipe.InitBuffer(q2, 2, 256);  // 64 floats each
        LocalTensor<float> a = q2.AllocTensor<float>(), b = q2.AllocTensor<float>();
        if (td.n == 0) Add(a, a, b, bad ? 65 : 64);
        if (td.n == 1) Adds(a[8], b, 1.0f, bad ? 57 : 56);
        if (td.n == 2) {  // level 0: 2 repeats of 64 lanes with a repeat stride of 8 blocks: 128 floats
            BinaryRepeatParams p;
            Add(a, a, b, 64, bad ? 2 : 1, p);
        }
        if (td.n == 3) DataCopy(a, gx, bad ? 72 : 64);
        q2.FreeTensor(a);
        q2.FreeTensor(b);
    } else if (TILING_KEY_IS(8)) {  // FreeTensor twice
        pipe.InitBuffer(q2, 2, 1024);
        LocalTensor<float> a = q2.AllocTensor<float>();
        q2.FreeTensor(a);
        if (bad) q2.FreeTensor(a);
    } else if (TILING_KEY_IS(9)) {  // ASSERT and a C++ exception
        ASSERT(!bad || td.n != 0);
        if (bad && td.n == 1) throw std::runtime_error("thrown by the kernel");
    } else if (TILING_KEY_IS(10)) {  // KERNEL_FAIL-style failures recorded in kernel.h's state
        if (bad) opbuild_kernel_fail("recorded failure %u", 7u);
    }
}
"""

CORES = 8


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    spec = ackit.KernelSpec("misuse_bin", MISUSE, "misuse", 4, [("uint32_t", "bad"), ("uint32_t", "n")],
                            core_num=CORES)
    return ackit.build(tmp_path_factory.mktemp("ascendc_checks"), [spec])["misuse_bin"]


def launch(kernel, key: int, bad: int, n: int = 0, blocks: int = 4):
    x = np.arange(1024, dtype=np.float32)
    return kernel.run([x], [np.zeros(1024, np.float32)], blocks, kernel.tiling(key, bad=bad, n=n))


@pytest.mark.parametrize("key", range(1, 11))
def test_clean_blocks_pass(kernel, key):
    launch(kernel, key, bad=99)


CASES = [
    (1, 0, r"InitBuffer: 1 x 65568 bytes at UB offset 131072 exceed the UB size of 196608 bytes"),
    (2, 0, r"DataCopy: 10 elements of 4 bytes = 40 bytes, not a multiple of 32"),
    (3, 0, r"AllocTensor: all 1 buffers of the queue are in use"),
    (4, 0, r"DeQue: the queue \(depth 1, 1 buffers\) is empty"),
    (5, 0, r"EnQue: the queue of depth 1 already holds 1 tensors"),
    (6, 0, r"LocalTensor::SetValue: index 64 is outside the LocalTensor of 64 elements \(UB offset 0\)"),
    (6, 1, r"LocalTensor::GetValue: index 100 is outside the LocalTensor of 64 elements"),
    (6, 2, r"LocalTensor::operator\[\]: offset 65 is past the end of the LocalTensor of 64 elements"),
    (7, 0, r"Add: dst: elements \[0, 65\) are outside the LocalTensor of 64 elements"),
    (7, 1, r"Adds: dst: elements \[0, 57\) are outside the LocalTensor of 56 elements"),
    (7, 2, r"Add: dst: repeat 1 lane 63 reaches element 127 of a LocalTensor of 64 elements"),
    (7, 3, r"DataCopy: UB bytes \[0, 288\) are outside the LocalTensor of 256 bytes \(UB offset 0\)"),
    (8, 0, r"FreeTensor: buffer 0 of 2 \(UB offset 0\) is free \(freed twice\?\)"),
    (9, 0, r"ASSERT: !bad \|\| td.n != 0 failed at .*misuse_bin.cpp:\d+"),
    (9, 1, r"kernel: C\+\+ exception: thrown by the kernel"),
    (10, 0, r"recorded failure 7"),
]


@pytest.mark.parametrize("key,n,message", CASES)
def test_misuse_fails_its_block(kernel, key, n, message):
    with pytest.raises(DeviceError, match=rf"^block 2: {message}"):
        launch(kernel, key, bad=2, n=n)
    launch(kernel, key, bad=99, n=n)  # the binary stays usable: the next launch starts afresh


def test_block_dim_above_the_cores(kernel):
    launch(kernel, 9, bad=99, blocks=CORES)
    with pytest.raises(DeviceError, match=rf"^block \d+: launch: block dim {CORES + 1} is more than "
                                          rf"the SoC's {CORES} cores"):
        launch(kernel, 9, bad=99, blocks=CORES + 1)
