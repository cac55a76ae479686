// AddAscendc kernel: z = x + y, each block's share tile by tile through UB (queues of depth 2).
#include "kernel_operator.h"

namespace {
constexpr int32_t kBuffers = 2;

template <typename T>
class AddTiles {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength, uint32_t tileLength)
    {
        share_ = totalLength / AscendC::GetBlockNum();
        tileLength_ = tileLength;
        tiles_ = share_ / tileLength;
        const uint64_t start = static_cast<uint64_t>(share_) * AscendC::GetBlockIdx();
        x_.SetGlobalBuffer((__gm__ T *)x + start, share_);
        y_.SetGlobalBuffer((__gm__ T *)y + start, share_);
        z_.SetGlobalBuffer((__gm__ T *)z + start, share_);
        pipe_.InitBuffer(inX_, kBuffers, tileLength_ * sizeof(T));
        pipe_.InitBuffer(inY_, kBuffers, tileLength_ * sizeof(T));
        pipe_.InitBuffer(outZ_, kBuffers, tileLength_ * sizeof(T));
    }

    __aicore__ inline void Process()
    {
        for (uint32_t t = 0; t < tiles_; ++t) {
            AscendC::LocalTensor<T> xs = inX_.AllocTensor<T>();
            AscendC::LocalTensor<T> ys = inY_.AllocTensor<T>();
            AscendC::DataCopy(xs, x_[t * tileLength_], tileLength_);
            AscendC::DataCopy(ys, y_[t * tileLength_], tileLength_);
            inX_.EnQue(xs);
            inY_.EnQue(ys);

            AscendC::LocalTensor<T> xv = inX_.DeQue<T>();
            AscendC::LocalTensor<T> yv = inY_.DeQue<T>();
            AscendC::LocalTensor<T> zv = outZ_.AllocTensor<T>();
            AscendC::Add(zv, xv, yv, tileLength_);
            outZ_.EnQue<T>(zv);
            inX_.FreeTensor(xv);
            inY_.FreeTensor(yv);

            AscendC::LocalTensor<T> zo = outZ_.DeQue<T>();
            AscendC::DataCopy(z_[t * tileLength_], zo, tileLength_);
            outZ_.FreeTensor(zo);
        }
    }

private:
    AscendC::TPipe pipe_;
    AscendC::TQue<AscendC::TPosition::VECIN, kBuffers> inX_, inY_;
    AscendC::TQue<AscendC::TPosition::VECOUT, kBuffers> outZ_;
    AscendC::GlobalTensor<T> x_, y_, z_;
    uint32_t share_ = 0, tiles_ = 0, tileLength_ = 0;
};
}  // namespace

extern "C" __global__ __aicore__ void add_ascendc(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(td, tiling);
    AddTiles<DTYPE_X> op;
    op.Init(x, y, z, td.totalLength, td.tileLength);
    op.Process();
}
