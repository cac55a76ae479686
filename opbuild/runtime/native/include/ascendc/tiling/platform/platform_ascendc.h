/* tiling/platform/platform_ascendc.h: platform_ascendc::PlatformAscendC, the SoC facts a tiling
 * function asks for (opbuild's clean-room host headers).
 *
 * The numbers come from opbuild's TilingContext (through fe::PlatFormInfos): GetCoreNum() and
 * GetCoreNumAiv() are its core_num (the vector cores a kernel tiles for), GetCoreMemSize(UB) its
 * ub_size, GetSocVersion() maps its soc_version (opbuild's short SoC name). GetCoreNumAic() is
 * half the vector cores on the 910B-class SoCs (two vector cores per cube core) and equal on the
 * others, as opbuild/abi/vocabulary.py's SOCS (tests/ascendc/test_host_headers.py holds them
 * equal). L1/L0 sizes are the documented sizes of those cores; the CPU simulator never checks
 * them. GetLibApiWorkSpaceSize() is the 16 MiB system workspace CANN reserves for its library
 * APIs on 910B-class SoCs (0 elsewhere); a tiling function adds it to its workspace sizes.
 */
#ifndef OPBUILD_ASCENDC_TILING_PLATFORM_PLATFORM_ASCENDC_H
#define OPBUILD_ASCENDC_TILING_PLATFORM_PLATFORM_ASCENDC_H

#include <cstdint>
#include <cstring>

#include "platform/platform_infos_def.h"

namespace platform_ascendc {

enum class CoreMemType { L0_A = 0, L0_B = 1, L0_C = 2, L1 = 3, L2 = 4, UB = 5, HBM = 6, RESERVED };

enum class SocVersion { ASCEND910 = 0, ASCEND910B, ASCEND910_93, ASCEND310P, ASCEND310B, ASCEND310, ASCEND610, RESERVED_VERSION = 99999 };

class PlatformAscendC {
public:
    PlatformAscendC() = delete;
    explicit PlatformAscendC(fe::PlatFormInfos *info) : info_(info) {}

    uint32_t GetCoreNum() const { return info_ ? info_->GetCoreNum() : 0; }
    uint32_t GetCoreNumAiv() const { return GetCoreNum(); }
    uint32_t GetCoreNumAic() const {
        uint32_t n = GetCoreNum();
        return SplitCores() ? n / 2 : n;
    }
    uint32_t GetCoreNumVector() const { return 0; }  /* no separate vector cores beside the AI cores */
    void GetCoreMemSize(CoreMemType type, uint64_t &size) const {
        bool split = SplitCores();
        switch (type) {
            case CoreMemType::UB: size = info_ ? info_->OpbuildUbSize() : 0; break;
            case CoreMemType::L1: size = split ? 524288 : 1048576; break;
            case CoreMemType::L0_A: case CoreMemType::L0_B: size = 65536; break;
            case CoreMemType::L0_C: size = split ? 131072 : 262144; break;
            case CoreMemType::L2: size = split ? 201326592 : 0; break;
            case CoreMemType::HBM: size = split ? (64ULL << 30) : (24ULL << 30); break;
            default: size = 0; break;
        }
    }
    void GetCoreMemBw(CoreMemType type, uint64_t &bw) const { (void)type; bw = 0; }
    SocVersion GetSocVersion() const {
        const char *s = info_ ? info_->OpbuildSoc().c_str() : "";
        if (std::strcmp(s, "ascend910b") == 0) return SocVersion::ASCEND910B;
        if (std::strcmp(s, "ascend910_93") == 0) return SocVersion::ASCEND910_93;
        if (std::strcmp(s, "ascend310p") == 0) return SocVersion::ASCEND310P;
        if (std::strcmp(s, "ascend310b") == 0) return SocVersion::ASCEND310B;
        if (std::strcmp(s, "ascend910") == 0) return SocVersion::ASCEND910;
        return SocVersion::RESERVED_VERSION;
    }
    uint32_t GetLibApiWorkSpaceSize() const { return SplitCores() ? 16U * 1024U * 1024U : 0U; }
    /* Blocks to launch for `slice_num` slices of work: a kernel of one core kind (aic or aiv 0, or
     * equal counts) launches one block per slice; a mixed kernel on a split SoC launches one block
     * per cube core and its ratio of vector cores, ceil(slice_num / (aiv / aic)). */
    uint32_t CalcTschBlockDim(uint32_t slice_num, uint32_t aic_core_num, uint32_t aiv_core_num) const {
        if (aic_core_num == 0 || aiv_core_num == 0 || aic_core_num >= aiv_core_num) return slice_num;
        uint32_t ratio = aiv_core_num / aic_core_num;
        return (slice_num + ratio - 1) / ratio;
    }

private:
    bool SplitCores() const {
        SocVersion v = GetSocVersion();
        return v == SocVersion::ASCEND910B || v == SocVersion::ASCEND910_93;
    }
    fe::PlatFormInfos *info_;
};

}  // namespace platform_ascendc

#endif
