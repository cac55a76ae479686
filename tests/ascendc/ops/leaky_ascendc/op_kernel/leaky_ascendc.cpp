// LeakyAscendc kernel: y = max(x, 0) + slope * min(x, 0), tile by tile.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t kDepth = 2;

class LeakyTiles {
public:
    __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t totalLength, uint32_t tileNum, float slope)
    {
        slope_ = slope;
        const uint32_t share = totalLength / GetBlockNum();
        count_ = tileNum * kDepth;
        tile_ = share / count_;
        xg_.SetGlobalBuffer((__gm__ float *)x + share * GetBlockIdx(), share);
        yg_.SetGlobalBuffer((__gm__ float *)y + share * GetBlockIdx(), share);
        pipe_.InitBuffer(in_, kDepth, tile_ * sizeof(float));
        pipe_.InitBuffer(out_, kDepth, tile_ * sizeof(float));
        pipe_.InitBuffer(scratch_, tile_ * sizeof(float));
    }
    __aicore__ inline void Process()
    {
        for (uint32_t i = 0; i < count_; i++) {
            LocalTensor<float> a = in_.AllocTensor<float>();
            DataCopy(a, xg_[i * tile_], tile_);
            in_.EnQue(a);
            LocalTensor<float> xv = in_.DeQue<float>();
            LocalTensor<float> yv = out_.AllocTensor<float>();
            LocalTensor<float> neg = scratch_.Get<float>();
            Maxs(yv, xv, 0.0f, tile_);   // positive part
            Mins(neg, xv, 0.0f, tile_);  // negative part
            Muls(neg, neg, slope_, tile_);
            Add(yv, yv, neg, tile_);
            out_.EnQue<float>(yv);
            in_.FreeTensor(xv);
            LocalTensor<float> r = out_.DeQue<float>();
            DataCopy(yg_[i * tile_], r, tile_);
            out_.FreeTensor(r);
        }
    }

private:
    TPipe pipe_;
    TQue<TPosition::VECIN, kDepth> in_;
    TQue<TPosition::VECOUT, kDepth> out_;
    TBuf<TPosition::VECCALC> scratch_;
    GlobalTensor<float> xg_, yg_;
    uint32_t count_ = 0, tile_ = 0;
    float slope_ = 0.0f;
};

extern "C" __global__ __aicore__ void leaky_ascendc(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling)
{
    GET_TILING_DATA(td, tiling);
    LeakyTiles op;
    op.Init(x, y, td.totalLength, td.tileNum, td.slope);
    op.Process();
}
