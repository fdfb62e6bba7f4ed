/*
 * gemm_peer.c: OpenBLAS's GEMM, the peer of warpt's micro/gemm.
 *
 * C = A B for square n x n row-major matrices with entries uniform in
 * [-0.5, 0.5): cblas_dgemm (fp64), cblas_sgemm (fp32), cblas_sbgemm (bf16
 * in, fp32 accumulate and out) where the library was built with bfloat16
 * (Debian's 0.3.21 is not: then bf16 is cblas_sgemm on the bf16 values
 * widened to fp32 beforehand, the widening untimed, and peer= says so).
 * Threads: OPENBLAS_NUM_THREADS. Each sample is REPS products; 2 n^3 flops
 * per product, as warpt counts. Prototypes are declared here so only the
 * runtime library is needed (link with -l:libopenblas.so.0 -ldl).
 *
 * usage: gemm_peer fp64|fp32|bf16 N REPS SAMPLES
 * prints: precision=fp64 n=N median_gflops=X best_gflops=Y
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>
#include <math.h>

enum { RowMajor = 101, NoTrans = 111 };
void cblas_dgemm(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
                 double *, int);
void cblas_sgemm(int, int, int, int, int, int, float, const float *, int, const float *, int, float, float *,
                 int);
typedef void (*sbgemm_fn)(int, int, int, int, int, int, float, const uint16_t *, int, const uint16_t *, int,
                          float, float *, int);
char *openblas_get_config(void);
char *openblas_get_corename(void);

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static uint16_t to_bf16(float x) {
    uint32_t bits;
    memcpy(&bits, &x, 4);
    return (uint16_t)((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s fp64|fp32|bf16 N REPS SAMPLES\n", argv[0]);
        return 2;
    }
    const char *prec = argv[1];
    int n = atoi(argv[2]), reps = atoi(argv[3]), samples = atoi(argv[4]);
    size_t nn = (size_t)n * n;
    double *secs = malloc(sizeof(double) * samples);
    srand(7);
    double *ad = malloc(nn * 8), *bd = malloc(nn * 8), *cd = malloc(nn * 8);
    float *as = malloc(nn * 4), *bs = malloc(nn * 4), *cs = malloc(nn * 4);
    uint16_t *ah = malloc(nn * 2), *bh = malloc(nn * 2);
    sbgemm_fn sbgemm = (sbgemm_fn)dlsym(RTLD_DEFAULT, "cblas_sbgemm");
    int bf16 = !strcmp(prec, "bf16");
    for (size_t i = 0; i < nn; i++) {
        ad[i] = rand() / (double)RAND_MAX - 0.5;
        bd[i] = rand() / (double)RAND_MAX - 0.5;
        ah[i] = to_bf16((float)ad[i]);
        bh[i] = to_bf16((float)bd[i]);
        if (bf16) { /* the values bf16 stands for, exactly */
            uint32_t x = (uint32_t)ah[i] << 16, y = (uint32_t)bh[i] << 16;
            float fx, fy;
            memcpy(&fx, &x, 4);
            memcpy(&fy, &y, 4);
            ad[i] = fx;
            bd[i] = fy;
        }
        as[i] = (float)ad[i];
        bs[i] = (float)bd[i];
    }
    for (int s = -1; s < samples; s++) { /* s = -1: warm-up */
        double t0 = now();
        for (int r = 0; r < reps; r++) {
            if (!strcmp(prec, "fp64"))
                cblas_dgemm(RowMajor, NoTrans, NoTrans, n, n, n, 1.0, ad, n, bd, n, 0.0, cd, n);
            else if (bf16 && sbgemm)
                sbgemm(RowMajor, NoTrans, NoTrans, n, n, n, 1.0f, ah, n, bh, n, 0.0f, cs, n);
            else
                cblas_sgemm(RowMajor, NoTrans, NoTrans, n, n, n, 1.0f, as, n, bs, n, 0.0f, cs, n);
        }
        if (s >= 0) secs[s] = now() - t0;
    }
    /* A product entry against a direct dot product (fp64), as a sanity check. */
    double want = 0;
    for (int k = 0; k < n; k++) want += ad[k] * bd[(size_t)k * n];
    double got = !strcmp(prec, "fp64") ? cd[0] : cs[0];
    double tol = 1e-3 * (1 + fabs(want));
    qsort(secs, samples, sizeof(double), cmp);
    double med = samples % 2 ? secs[samples / 2] : 0.5 * (secs[samples / 2 - 1] + secs[samples / 2]);
    double work = 2.0 * n * (double)n * n * reps;
    const char *peer = !strcmp(prec, "fp64") ? "cblas_dgemm"
                       : !bf16                 ? "cblas_sgemm"
                       : sbgemm                ? "cblas_sbgemm"
                                               : "cblas_sgemm-on-widened-bf16";
    printf("precision=%s n=%d median_gflops=%.3f best_gflops=%.3f peer=%s core=%s ok=%d\n", prec, n,
           work / med / 1e9, work / secs[0] / 1e9, peer, openblas_get_corename(), fabs(got - want) <= tol);
    return 0;
}
