// AddnAscendc kernel: each block sums its half of every tensor of the list into z.
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"

extern "C" __global__ __aicore__ void addn_ascendc(GM_ADDR xList, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(td, tiling);
    AscendC::ListTensorDesc list((__gm__ void *)xList);
    const uint32_t share = td.totalLength / AscendC::GetBlockNum();
    const uint32_t start = share * AscendC::GetBlockIdx();
    AscendC::TPipe pipe;
    AscendC::TBuf<AscendC::TPosition::VECCALC> accBuf, inBuf;
    pipe.InitBuffer(accBuf, share * sizeof(half));
    pipe.InitBuffer(inBuf, share * sizeof(half));
    AscendC::LocalTensor<half> acc = accBuf.Get<half>();
    AscendC::LocalTensor<half> in = inBuf.Get<half>();
    AscendC::GlobalTensor<half> src, dst;
    src.SetGlobalBuffer(list.GetDataPtr<half>(0) + start, share);
    AscendC::DataCopy(acc, src, share);
    for (uint32_t i = 1; i < td.tensorCount; ++i) {
        src.SetGlobalBuffer(list.GetDataPtr<half>(i) + start, share);
        AscendC::DataCopy(in, src, share);
        AscendC::PipeBarrier<PIPE_V>();
        AscendC::Add(acc, acc, in, share);
    }
    dst.SetGlobalBuffer((__gm__ half *)z + start, share);
    AscendC::DataCopy(dst, acc, share);
}
