/* exe_graph/runtime/storage_format.h: gert::StorageFormat, a tensor's origin and storage formats. */
#ifndef OPBUILD_ASCENDC_EXE_GRAPH_STORAGE_FORMAT_H
#define OPBUILD_ASCENDC_EXE_GRAPH_STORAGE_FORMAT_H

#include "graph/types.h"

namespace gert {

class StorageFormat {
public:
    StorageFormat() = default;
    StorageFormat(ge::Format origin, ge::Format storage) : origin_(origin), storage_(storage) {}
    ge::Format GetOriginFormat() const { return origin_; }
    ge::Format GetStorageFormat() const { return storage_; }
    void SetOriginFormat(ge::Format f) { origin_ = f; }
    void SetStorageFormat(ge::Format f) { storage_ = f; }

private:
    ge::Format origin_ = ge::FORMAT_ND;
    ge::Format storage_ = ge::FORMAT_ND;
};

}  // namespace gert

#endif
