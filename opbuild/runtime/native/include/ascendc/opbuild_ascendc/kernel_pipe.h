/* opbuild_ascendc/kernel_pipe.h: TPipe, TQue/TQueBind and TBuf over the block's UB arena.
 *
 * TPipe::InitBuffer hands out consecutive 32-byte aligned pieces of the block's UB (its size is
 * the SoC's, OPBUILD_SOC_UB_SIZE); past the end is an error. A queue's buffers cycle through
 * free -> allocated (AllocTensor) -> queued (EnQue) -> allocated (DeQue) -> free (FreeTensor);
 * every other step is an error naming the queue's numbers. Queues run in program order (the
 * device's pipes overlap; SetFlag/WaitFlag are ordering no-ops here).
 */
#ifndef OPBUILD_ASCENDC_KERNEL_PIPE_H
#define OPBUILD_ASCENDC_KERNEL_PIPE_H

#include "opbuild_ascendc/kernel_tensor.h"

namespace opbuild {
namespace ascendc {

constexpr uint32_t kMaxQueueBuffers = 16;
constexpr uint8_t kUbPoison = 0xFF; /* what InitBuffer fills a fresh UB piece with (NaN for floats) */

/* The buffers of one queue and where each is in its cycle. */
class QueueCore {
public:
    enum class Slot : uint8_t { FREE, ALLOCATED, QUEUED };

    void init(uint8_t *base, uint32_t num, uint32_t len, uint32_t depth) {
        base_ = base;
        num_ = num;
        len_ = len;
        depth_ = depth;
        head_ = count_ = 0;
        for (uint32_t i = 0; i < kMaxQueueBuffers; ++i) slot_[i] = Slot::FREE;
    }
    uint8_t *alloc() {
        if (num_ == 0) fail("AllocTensor", "the queue has no buffers (TPipe::InitBuffer was not called for it)");
        for (uint32_t i = 0; i < num_; ++i) {
            uint32_t k = (next_ + i) % num_;
            if (slot_[k] == Slot::FREE) {
                slot_[k] = Slot::ALLOCATED;
                next_ = (k + 1) % num_;
                return base_ + (uint64_t)k * len_;
            }
        }
        fail("AllocTensor", "all %u buffers of the queue are in use (%u queued, the rest allocated and not freed)", num_,
             count_);
    }
    void enque(const void *addr) {
        uint32_t k = index("EnQue", addr);
        if (slot_[k] != Slot::ALLOCATED)
            fail("EnQue", "buffer %u of %u (UB offset %lld) is %s, not allocated", k, num_, ub_offset(addr), name(slot_[k]));
        if (count_ >= depth_) fail("EnQue", "the queue of depth %u already holds %u tensors", depth_, count_);
        fifo_[(head_ + count_) % kMaxQueueBuffers] = k;
        ++count_;
        slot_[k] = Slot::QUEUED;
    }
    uint8_t *deque() {
        if (count_ == 0) fail("DeQue", "the queue (depth %u, %u buffers) is empty", depth_, num_);
        uint32_t k = fifo_[head_];
        head_ = (head_ + 1) % kMaxQueueBuffers;
        --count_;
        slot_[k] = Slot::ALLOCATED;
        return base_ + (uint64_t)k * len_;
    }
    void free(const void *addr) {
        uint32_t k = index("FreeTensor", addr);
        if (slot_[k] != Slot::ALLOCATED)
            fail("FreeTensor", "buffer %u of %u (UB offset %lld) is %s (freed twice?)", k, num_, ub_offset(addr),
                 name(slot_[k]));
        slot_[k] = Slot::FREE;
    }
    uint32_t len() const { return len_; }
    uint32_t queued() const { return count_; }
    uint32_t vacant() const { return depth_ - count_; }

private:
    static const char *name(Slot s) { return s == Slot::FREE ? "free" : s == Slot::QUEUED ? "queued" : "allocated"; }
    uint32_t index(const char *api, const void *addr) const {
        const uint8_t *p = (const uint8_t *)addr;
        if (num_ == 0 || p < base_ || p >= base_ + (uint64_t)num_ * len_ || (uint64_t)(p - base_) % len_ != 0)
            fail(api, "the tensor at UB offset %lld is not a buffer of this queue", ub_offset(addr));
        return (uint32_t)((uint64_t)(p - base_) / len_);
    }
    uint8_t *base_ = nullptr;
    uint32_t num_ = 0, len_ = 0, depth_ = 0, next_ = 0;
    uint32_t head_ = 0, count_ = 0;
    Slot slot_[kMaxQueueBuffers] = {};
    uint32_t fifo_[kMaxQueueBuffers] = {};
};

}  // namespace ascendc
}  // namespace opbuild

namespace AscendC {

class TPipe;

template <TPosition src, TPosition dst, int32_t depth, auto mask = 0>
class TQueBind {
public:
    template <class T>
    LocalTensor<T> AllocTensor() {
        uint8_t *p = core_.alloc();
        return LocalTensor<T>(reinterpret_cast<T *>(p), core_.len() / (uint32_t)sizeof(T));
    }
    template <class T>
    bool EnQue(const LocalTensor<T> &t) {
        core_.enque(t.data());
        return true;
    }
    template <class T>
    LocalTensor<T> DeQue() {
        uint8_t *p = core_.deque();
        return LocalTensor<T>(reinterpret_cast<T *>(p), core_.len() / (uint32_t)sizeof(T));
    }
    template <class T>
    void FreeTensor(LocalTensor<T> &t) {
        core_.free(t.data());
    }
    bool HasTensorInQue() const { return core_.queued() > 0; }
    int32_t GetTensorCountInQue() const { return (int32_t)core_.queued(); }
    bool VacantInQue() const { return core_.vacant() > 0; }
    bool HasIdleBuffer() const { return true; }
    void FreeAllEvent() {}

private:
    friend class TPipe;
    ::opbuild::ascendc::QueueCore core_;
};

template <TPosition pos, int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

template <TPosition pos = TPosition::VECCALC>
class TBuf {
public:
    template <class T>
    LocalTensor<T> Get() const {
        if (base_ == nullptr) ::opbuild::ascendc::fail("TBuf::Get", "the TBuf has no buffer (TPipe::InitBuffer was not called for it)");
        return LocalTensor<T>(reinterpret_cast<T *>(base_), len_ / (uint32_t)sizeof(T));
    }
    template <class T>
    LocalTensor<T> Get(uint32_t count) const {
        LocalTensor<T> t = Get<T>();
        if (count > t.GetSize())
            ::opbuild::ascendc::fail("TBuf::Get", "%u elements of %u bytes do not fit in the TBuf of %u bytes", count,
                                     (uint32_t)sizeof(T), len_);
        return LocalTensor<T>(t.data(), count);
    }
    template <class T>
    LocalTensor<T> GetWithOffset(uint32_t count, uint32_t offsetBytes) const {
        LocalTensor<T> t = Get<T>();
        if ((uint64_t)offsetBytes + (uint64_t)count * sizeof(T) > len_)
            ::opbuild::ascendc::fail("TBuf::GetWithOffset", "%u elements of %u bytes at byte %u do not fit in the TBuf of %u bytes",
                                     count, (uint32_t)sizeof(T), offsetBytes, len_);
        return LocalTensor<T>(reinterpret_cast<T *>(base_ + offsetBytes), count);
    }

private:
    friend class TPipe;
    uint8_t *base_ = nullptr;
    uint32_t len_ = 0;
};

class TPipe {
public:
    TPipe() {
        ::opbuild::ascendc::block().ub_used = 0;
        ::opbuild::ascendc::block().pipe = this;
    }
    ~TPipe() {
        if (::opbuild::ascendc::block().pipe == this) ::opbuild::ascendc::block().pipe = nullptr;
    }
    TPipe(const TPipe &) = delete;
    TPipe &operator=(const TPipe &) = delete;
    /* `num` buffers of `len` bytes (each rounded up to 32 bytes) for a queue. */
    template <class Q>
    bool InitBuffer(Q &que, uint8_t num, uint32_t len) {
        if (num == 0 || num > ::opbuild::ascendc::kMaxQueueBuffers)
            ::opbuild::ascendc::fail("InitBuffer", "%u buffers for a queue: must be 1..%u", (unsigned)num,
                                     ::opbuild::ascendc::kMaxQueueBuffers);
        uint32_t aligned = AlignUp(len, ::opbuild::ascendc::kBlockBytes);
        uint8_t *p = take("InitBuffer", (uint64_t)num * aligned, num, len);
        que.core_.init(p, num, aligned, depth_of(que));
        return true;
    }
    template <TPosition pos>
    bool InitBuffer(TBuf<pos> &buf, uint32_t len) {
        uint32_t aligned = AlignUp(len, ::opbuild::ascendc::kBlockBytes);
        buf.base_ = take("InitBuffer", aligned, 1, len);
        buf.len_ = aligned;
        return true;
    }
    void Reset() { ::opbuild::ascendc::block().ub_used = 0; }
    void Destroy() { Reset(); }
    void Init() { Reset(); }
    template <HardEvent evt>
    event_t AllocEventID() {
        return 0;
    }
    template <HardEvent evt>
    void ReleaseEventID(event_t) {}
    template <HardEvent evt>
    event_t FetchEventID() {
        return 0;
    }
    event_t FetchEventID(HardEvent) { return 0; }
    event_t AllocEventID(HardEvent) { return 0; }
    void ReleaseEventID(HardEvent, event_t) {}

private:
    template <TPosition s, TPosition d, int32_t depth, auto m>
    static uint32_t depth_of(const TQueBind<s, d, depth, m> &) {
        return depth < 1 ? 1u : (uint32_t)depth;
    }
    static uint8_t *take(const char *api, uint64_t bytes, uint32_t num, uint32_t len) {
        ::opbuild::ascendc::BlockState &b = ::opbuild::ascendc::block();
        if (b.ub == nullptr) ::opbuild::ascendc::fail(api, "no UB arena: the kernel is not running under opbuild::ascendc::run_block");
        if (b.ub_used + bytes > b.ub_size)
            ::opbuild::ascendc::fail(api, "%u x %u bytes at UB offset %u exceed the UB size of %u bytes", num, len, b.ub_used,
                                     b.ub_size);
        uint8_t *p = b.ub + b.ub_used;
        std::memset(p, ::opbuild::ascendc::kUbPoison, bytes);
        b.ub_used += (uint32_t)bytes;
        return p;
    }
};

/* Pipe-to-pipe sync objects: ordering no-ops, as SetFlag/WaitFlag. */
template <pipe_t src, pipe_t dst>
class TQueSync {
public:
    void SetFlag(event_t) {}
    void WaitFlag(event_t) {}
};

/* The block's TPipe (the one constructed last and still alive). */
inline TPipe *GetTPipePtr() {
    void *p = ::opbuild::ascendc::block().pipe;
    if (p == nullptr) ::opbuild::ascendc::fail("GetTPipePtr", "the block has no TPipe");
    return static_cast<TPipe *>(p);
}

}  // namespace AscendC

#endif /* OPBUILD_ASCENDC_KERNEL_PIPE_H */
