/* platform/platform_infos_def.h: fe::PlatFormInfos, what TilingContext::GetPlatformInfo() returns
 * and platform_ascendc::PlatformAscendC reads: the SoC (opbuild's short name, `ascend910b`), the
 * vector core count and the UB bytes of opbuild's TilingContext (core_num, ub_size, soc_version). */
#ifndef OPBUILD_ASCENDC_PLATFORM_INFOS_DEF_H
#define OPBUILD_ASCENDC_PLATFORM_INFOS_DEF_H

#include <cstdint>
#include <string>

namespace fe {

class PlatFormInfos {
public:
    PlatFormInfos() = default;
    PlatFormInfos(const char *soc, uint32_t core_num, uint64_t ub_size)
        : soc_(soc ? soc : ""), core_num_(core_num), ub_size_(ub_size) {}
    uint32_t GetCoreNum() const { return core_num_; }
    uint64_t OpbuildUbSize() const { return ub_size_; }
    const std::string &OpbuildSoc() const { return soc_; }

private:
    std::string soc_;
    uint32_t core_num_ = 0;
    uint64_t ub_size_ = 0;
};

}  // namespace fe

#endif
