/*
 * amx_peak.c: the C reference for warpt's AMX cpu_flops series
 * (precision=bf16_amx and int8_amx).
 *
 * The same work as warpt's kernels, in gcc's AMX intrinsics (build with
 * gcc -O3 -march=native -mamx-tile -mamx-bf16 -mamx-int8 -fopenmp):
 * eight tiles of 16 rows x 64 bytes, accumulators C0..C3 from A0, A1 and
 * B0, B1 in the 2 x 2 blocking Intel's optimisation manual gives for peak,
 * every input element 1 (bf16 1.0 or int8 1):
 *   bf16_amx: tdpbf16ps, 16 x 16 x 32 multiply-adds per instruction, each
 *             fp32 accumulator element ends at 32 x ITERS;
 *   int8_amx: tdpbssd, 16 x 16 x 64, each int32 element at 64 x ITERS.
 * The tile data state is requested from Linux first
 * (arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)).
 * One thread or one per CPU, each sample timed from a common start to the
 * last thread's finish. Operations: 2 per multiply-add, as warpt counts.
 *
 * usage: amx_peak bf16_amx|int8_amx THREADS ITERS SAMPLES
 * prints: precision=bf16_amx threads=N median_gops=X best_gops=Y isa=... ok=1
 *   (ok=0 when an element is not its closed form), or
 *   precision=... unavailable=1 reason=... where the CPU or kernel has no AMX.
 */
#include <cpuid.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA 18

static int ok = 1;

struct tile_config {
    uint8_t palette;
    uint8_t start_row;
    uint8_t reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
};

static void configure(void) {
    struct tile_config cfg __attribute__((aligned(64)));
    memset(&cfg, 0, sizeof cfg);
    cfg.palette = 1;
    for (int t = 0; t < 8; t++) {
        cfg.colsb[t] = 64;
        cfg.rows[t] = 16;
    }
    _tile_loadconfig(&cfg);
}

/* Returns the operations of one call; checks every accumulator element. */
__attribute__((noipa)) static double amx(int int8, long iters, int one) {
    uint16_t in[16 * 32] __attribute__((aligned(64)));
    union {
        float f;
        uint32_t u;
    } v = {.f = (float)one};
    uint16_t element = int8 ? (uint16_t)((uint8_t)one | ((uint8_t)one << 8)) : (uint16_t)(v.u >> 16);
    for (int i = 0; i < 16 * 32; i++) in[i] = element;
    uint32_t out[4][256] __attribute__((aligned(64)));
    configure();
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
    _tile_loadd(4, in, 64);
    _tile_loadd(5, in, 64);
    _tile_loadd(6, in, 64);
    _tile_loadd(7, in, 64);
    if (int8) {
        for (long i = 0; i < iters; i++) {
            _tile_dpbssd(0, 4, 6);
            _tile_dpbssd(1, 4, 7);
            _tile_dpbssd(2, 5, 6);
            _tile_dpbssd(3, 5, 7);
        }
    } else {
        for (long i = 0; i < iters; i++) {
            _tile_dpbf16ps(0, 4, 6);
            _tile_dpbf16ps(1, 4, 7);
            _tile_dpbf16ps(2, 5, 6);
            _tile_dpbf16ps(3, 5, 7);
        }
    }
    _tile_stored(0, out[0], 64);
    _tile_stored(1, out[1], 64);
    _tile_stored(2, out[2], 64);
    _tile_stored(3, out[3], 64);
    _tile_release();
    long k = int8 ? 64 : 32;
    for (int t = 0; t < 4; t++)
        for (int e = 0; e < 256; e++) {
            union {
                uint32_t u;
                float f;
            } x = {.u = out[t][e]};
            double got = int8 ? (double)(int32_t)x.u : (double)x.f;
            if (got != (double)(k * iters)) ok = 0;
        }
    return 4.0 * 16 * 16 * k * 2 * iters;
}

/* NULL when this process may run AMX `int8` (or bf16), else why not. */
static const char *unavailable(int int8) {
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return "no_cpuid_leaf_7";
    if (!(d & (1u << 24))) return "no_AMX-TILE";
    if (!(d & (1u << (int8 ? 25 : 22)))) return int8 ? "no_AMX-INT8" : "no_AMX-BF16";
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)) return "arch_prctl_refused";
    return NULL;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc != 5 || (strcmp(argv[1], "bf16_amx") && strcmp(argv[1], "int8_amx"))) {
        fprintf(stderr, "usage: %s bf16_amx|int8_amx THREADS ITERS SAMPLES\n", argv[0]);
        return 2;
    }
    const char *prec = argv[1];
    int int8 = !strcmp(prec, "int8_amx");
    const char *why = unavailable(int8);
    if (why) {
        printf("precision=%s unavailable=1 reason=%s\n", prec, why);
        return 0;
    }
    int threads = atoi(argv[2]);
    long iters = atol(argv[3]);
    int samples = atoi(argv[4]);
    double *secs = malloc(sizeof(double) * samples);
    double ops = 0;
    volatile int vone = 1; /* opaque to the optimiser */
    omp_set_num_threads(threads);
#pragma omp parallel reduction(max : ops)
    {
        for (int s = -1; s < samples; s++) { /* s = -1: warm-up */
            double t0 = 0;
#pragma omp barrier
#pragma omp master
            t0 = omp_get_wtime();
            ops = amx(int8, iters, vone);
#pragma omp barrier
#pragma omp master
            if (s >= 0) secs[s] = omp_get_wtime() - t0;
        }
    }
    double total = (double)threads * ops;
    qsort(secs, samples, sizeof(double), cmp);
    double med = samples % 2 ? secs[samples / 2] : 0.5 * (secs[samples / 2 - 1] + secs[samples / 2]);
    printf("precision=%s threads=%d median_gops=%.3f best_gops=%.3f isa=%s ok=%d\n", prec, threads,
           total / med / 1e9, total / secs[0] / 1e9, int8 ? "amx_int8_tdpbssd" : "amx_bf16_tdpbf16ps", ok);
    free(secs);
    return 0;
}
