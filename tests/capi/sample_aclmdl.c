/* An in-house model runner in the style of CANN's model samples: aclmdlLoadFromFile, the model
 * description, input/output datasets over device buffers, aclmdlExecute, and two error paths.
 *
 *   sample_aclmdl MODEL.om DIR [ROWS COLS]
 *   reads DIR/x.bin, DIR/y.bin (the model's two inputs), writes DIR/z.bin (its first output);
 *   ROWS COLS: a dynamic model's input shape, given as the input datasets' tensor descs (the
 *   buffers sized from it); the output's shape is then read from the output dataset's desc.
 *   prints "name: value" lines. Exit 0, or 1 with "error: <code> <message>". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl/acl.h"
#include "aclnn/opbuild_acl.h"

#define CHECK(call)                                                                                  \
    do {                                                                                             \
        aclError rc_ = (call);                                                                       \
        if (rc_ != ACL_SUCCESS) {                                                                    \
            const char *m_ = aclGetRecentErrMsg();                                                   \
            printf("error: %d %s\n", rc_, m_ ? m_ : "");                                             \
            return 1;                                                                                \
        }                                                                                            \
    } while (0)

static int read_file(const char *dir, const char *name, void *buf, size_t size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t n = fread(buf, 1, size, f);
    fclose(f);
    return n == size ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc != 3 && argc != 5) {
        printf("usage: %s MODEL.om DIR [ROWS COLS]\n", argv[0]);
        return 2;
    }
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    uint32_t id = 0;
    CHECK(aclmdlLoadFromFile(argv[1], &id));
    aclmdlDesc *desc = aclmdlCreateDesc();
    CHECK(aclmdlGetDesc(desc, id));
    size_t ni = aclmdlGetNumInputs(desc), no = aclmdlGetNumOutputs(desc);
    printf("inputs: %zu\noutputs: %zu\n", ni, no);
    for (size_t i = 0; i < ni + no; i++) {
        int out = i >= ni;
        size_t k = out ? i - ni : i;
        aclmdlIODims dims;
        CHECK(out ? aclmdlGetOutputDims(desc, k, &dims) : aclmdlGetInputDims(desc, k, &dims));
        printf("%s%zu: %s %d %d %zu [", out ? "output" : "input", k,
               out ? aclmdlGetOutputNameByIndex(desc, k) : aclmdlGetInputNameByIndex(desc, k),
               (int)(out ? aclmdlGetOutputDataType(desc, k) : aclmdlGetInputDataType(desc, k)),
               (int)(out ? aclmdlGetOutputFormat(desc, k) : aclmdlGetInputFormat(desc, k)),
               out ? aclmdlGetOutputSizeByIndex(desc, k) : aclmdlGetInputSizeByIndex(desc, k));
        for (size_t d = 0; d < dims.dimCount; d++) printf("%s%lld", d ? " " : "", (long long)dims.dims[d]);
        printf("] %s\n", dims.name);
    }
    aclmdlIODims bad;
    printf("bad index: %d\n", (int)aclmdlGetInputDims(desc, 99, &bad));
    printf("bad index name: %s\n", aclmdlGetInputNameByIndex(desc, 99) == NULL ? "null" : "set");

    aclmdlDataset *in = aclmdlCreateDataset(), *outs = aclmdlCreateDataset();
    void *host[3], *dev[3];
    size_t sizes[3] = {aclmdlGetInputSizeByIndex(desc, 0), aclmdlGetInputSizeByIndex(desc, 1),
                       aclmdlGetOutputSizeByIndex(desc, 0)};
    int64_t shape[2] = {argc == 5 ? atoll(argv[3]) : 0, argc == 5 ? atoll(argv[4]) : 0};
    aclTensorDesc *inDesc[2] = {NULL, NULL};
    if (argc == 5) { /* a dynamic model: the sizes come from the shape */
        for (int i = 0; i < 3; i++)
            sizes[i] = (size_t)(shape[0] * shape[1]) * aclDataTypeSize(aclmdlGetInputDataType(desc, 0));
        for (int i = 0; i < 2; i++)
            inDesc[i] = aclCreateTensorDesc(aclmdlGetInputDataType(desc, i), 2, shape, ACL_FORMAT_ND);
    }
    for (int i = 0; i < 3; i++) {
        CHECK(aclrtMallocHost(&host[i], sizes[i]));
        CHECK(aclrtMalloc(&dev[i], sizes[i], ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclmdlAddDatasetBuffer(i < 2 ? in : outs, aclCreateDataBuffer(dev[i], sizes[i])));
        if (i < 2 && inDesc[i] != NULL) CHECK(aclmdlSetDatasetTensorDesc(in, inDesc[i], (size_t)i));
    }
    printf("output desc before: %s\n", aclmdlGetDatasetTensorDesc(outs, 0) == NULL ? "null" : "set");
    if (read_file(argv[2], "x.bin", host[0], sizes[0]) || read_file(argv[2], "y.bin", host[1], sizes[1])) {
        printf("error: cannot read the inputs\n");
        return 2;
    }
    for (int i = 0; i < 2; i++) CHECK(aclrtMemcpy(dev[i], sizes[i], host[i], sizes[i], ACL_MEMCPY_HOST_TO_DEVICE));
    printf("dataset buffers: %zu %zu\n", aclmdlGetDatasetNumBuffers(in), aclmdlGetDatasetNumBuffers(outs));
    CHECK(aclmdlExecute(id, in, outs));
    aclTensorDesc *result = aclmdlGetDatasetTensorDesc(outs, 0);
    printf("output desc: %d [%lld %lld]\n", (int)aclGetTensorDescType(result),
           (long long)aclGetTensorDescDim(result, 0), (long long)aclGetTensorDescDim(result, 1));
    printf("bad model id: %d\n", (int)aclmdlExecute(id + 1000, in, outs));
    CHECK(aclrtMemcpy(host[2], sizes[2], dev[2], sizes[2], ACL_MEMCPY_DEVICE_TO_HOST));
    char path[4096];
    snprintf(path, sizeof path, "%s/z.bin", argv[2]);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(host[2], 1, sizes[2], f) != sizes[2]) return 2;
    fclose(f);

    for (size_t i = 0; i < 2; i++) CHECK(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(in, i)));
    CHECK(aclDestroyDataBuffer(aclmdlGetDatasetBuffer(outs, 0)));
    CHECK(aclmdlDestroyDataset(in));
    CHECK(aclmdlDestroyDataset(outs)); /* destroys the output desc it made */
    for (int i = 0; i < 2; i++) aclDestroyTensorDesc(inDesc[i]);
    for (int i = 0; i < 3; i++) {
        CHECK(aclrtFree(dev[i]));
        CHECK(aclrtFreeHost(host[i]));
    }
    CHECK(aclmdlDestroyDesc(desc));
    CHECK(aclmdlUnload(id));
    printf("unload again: %d\n", (int)aclmdlUnload(id));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("live objects: %lld\n", (long long)opbuild_acl_live_objects(-1));
    printf("ok\n");
    return 0;
}
