/* staging_bench.c: what UB staging costs on this CPU, without opbuild (bench/ascendc_bench.py).
 *
 * z = x + y over N floats on T threads, blocks of B floats split into tiles of TILE floats, as the
 * AddAscendc lookalike's tiling gives (32 blocks, 8192-float tiles):
 *   direct  one pass over GM: z[i] = x[i] + y[i], non-temporal stores (the C-API op's loop);
 *   staged  the Ascend C kernel's work on the CPU twin, per tile: x and y copied into a
 *           per-thread UB buffer (DataCopy GM -> UB), added UB -> UB (Add), the sum streamed to GM
 *           (DataCopy UB -> GM, non-temporal); the copies in by one memcpy each ("memcpy"), or
 *           reading the four quarters of the tile side by side as the twin's DataCopy does
 *           (opbuild_ascendc/kernel_copy.h, copy_in: "4 streams").
 * Prints the best time of R runs of each (in turn) and staged/direct: the most an Ascend C kernel
 * that stages every tile that way can reach against the C-API op on this machine.
 *
 *     cc -O2 -pthread bench/staging_bench.c -o staging_bench && ./staging_bench [N] [R] [T]
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TILE = 8192, BLOCKS = 32 };

typedef struct {
    const float *x, *y;
    float *z;
    uint64_t n;
    int staged;
    int thread, threads;
} job;

__attribute__((optimize("O3"))) static void add_stream(const float *restrict x, const float *restrict y, float *restrict z,
                                                      uint64_t n) {
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_stream_ps(z + i, _mm_add_ps(_mm_loadu_ps(x + i), _mm_loadu_ps(y + i)));
    for (; i < n; ++i) z[i] = x[i] + y[i];
}

__attribute__((optimize("O3"))) static void add_plain(const float *restrict x, const float *restrict y, float *restrict z,
                                                     uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

static void copy_stream(float *restrict dst, const float *restrict src, uint64_t n) {
    uint64_t i = 0;
    for (; i + 4 <= n; i += 4) _mm_stream_ps(dst + i, _mm_loadu_ps(src + i));
    for (; i < n; ++i) dst[i] = src[i];
}

/* The twin's GM -> UB copy (kernel_copy.h, copy_in) for a tile of whole 32-byte blocks. */
static void copy_in4(void *dst, const void *src, size_t bytes) {
    char *d = dst;
    const char *s = src;
    size_t part = bytes / 4 / 32 * 32;
    for (size_t i = 0; i < part; i += 32)
        for (int k = 0; k < 4; ++k) {
            __m128i a = _mm_loadu_si128((const __m128i *)(s + k * part + i));
            __m128i b = _mm_loadu_si128((const __m128i *)(s + k * part + i + 16));
            _mm_storeu_si128((__m128i *)(d + k * part + i), a);
            _mm_storeu_si128((__m128i *)(d + k * part + i + 16), b);
        }
    memcpy(d + 4 * part, s + 4 * part, bytes - 4 * part);
}

static void *run(void *arg) {
    job *j = arg;
    static __thread float *ub;
    if (!ub && posix_memalign((void **)&ub, 64, 3 * TILE * sizeof(float)) != 0) abort();
    uint64_t per_block = j->n / BLOCKS;
    for (int b = j->thread; b < BLOCKS; b += j->threads) {
        uint64_t start = (uint64_t)b * per_block, end = b == BLOCKS - 1 ? j->n : start + per_block;
        for (uint64_t t = start; t < end; t += TILE) {
            uint64_t len = end - t < TILE ? end - t : TILE;
            if (!j->staged) {
                add_stream(j->x + t, j->y + t, j->z + t, len);
                continue;
            }
            float *ux = ub, *uy = ub + TILE, *uz = ub + 2 * TILE;
            if (j->staged == 1) {
                memcpy(ux, j->x + t, len * sizeof(float));
                memcpy(uy, j->y + t, len * sizeof(float));
            } else {
                copy_in4(ux, j->x + t, len * sizeof(float));
                copy_in4(uy, j->y + t, len * sizeof(float));
            }
            add_plain(ux, uy, uz, len);
            copy_stream(j->z + t, uz, len);
        }
    }
    _mm_sfence();
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double best(const float *x, const float *y, float *z, uint64_t n, int staged, int repeat, int threads) {
    double fastest = 1e30;
    pthread_t tid[64];
    job jobs[64];
    for (int r = 0; r < repeat; ++r) {
        double t0 = now();
        for (int k = 0; k < threads; ++k) {
            jobs[k] = (job){x, y, z, n, staged, k, threads};
            pthread_create(&tid[k], NULL, run, &jobs[k]);
        }
        for (int k = 0; k < threads; ++k) pthread_join(tid[k], NULL);
        double dt = now() - t0;
        if (dt < fastest) fastest = dt;
    }
    return fastest;
}

int main(int argc, char **argv) {
    uint64_t n = argc > 1 ? strtoull(argv[1], NULL, 0) : (16u << 20);
    int repeat = argc > 2 ? atoi(argv[2]) : 10, threads = argc > 3 ? atoi(argv[3]) : 2;
    if (threads < 1 || threads > 64) threads = 2;
    float *x, *y, *z;
    if (posix_memalign((void **)&x, 64, n * 4) || posix_memalign((void **)&y, 64, n * 4) ||
        posix_memalign((void **)&z, 64, n * 4))
        return 1;
    for (uint64_t i = 0; i < n; ++i) x[i] = (float)(i % 1000), y[i] = 0.5f, z[i] = 0;
    double t[3] = {1e30, 1e30, 1e30}; /* direct, memcpy, 4 streams: in turn, so a load change moves all */
    for (int r = 0; r < repeat; ++r)
        for (int mode = 0; mode < 3; ++mode) {
            double d = best(x, y, z, n, mode, 1, threads);
            if (d < t[mode]) t[mode] = d;
        }
    for (uint64_t i = 0; i < n; ++i)
        if (z[i] != x[i] + y[i]) return 2;
    printf("direct %.3f ms; staged, memcpy %.3f ms ratio %.2f; staged, 4 streams %.3f ms ratio %.2f\n", t[0] * 1e3,
           t[1] * 1e3, t[0] / t[1], t[2] * 1e3, t[0] / t[2]);
    return 0;
}
