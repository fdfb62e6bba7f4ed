/*
 * fma_peak.c: the C reference for warpt's cpu_flops.
 *
 * The same work as warpt's kernel: ACC independent chains of
 * x = x * mul + add in the widest vector FMA the compiler targets
 * (build with gcc -O3 -march=native -fopenmp), one thread or one per CPU,
 * each sample timed from a common start to the last thread's finish.
 *
 * usage: fma_peak fp64|fp32 THREADS ITERS SAMPLES
 * prints: precision=fp64 threads=N median_gflops=X best_gflops=Y isa=...
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__)
#define ISA "avx512f"
#define ACC 16
typedef __m512d vd;
typedef __m512 vs;
#define SET1D _mm512_set1_pd
#define SET1S _mm512_set1_ps
#define FMAD _mm512_fmadd_pd
#define FMAS _mm512_fmadd_ps
#define LANES_D 8
#define LANES_S 16
#elif defined(__AVX2__) && defined(__FMA__)
#define ISA "avx2+fma"
#define ACC 12
typedef __m256d vd;
typedef __m256 vs;
#define SET1D _mm256_set1_pd
#define SET1S _mm256_set1_ps
#define FMAD _mm256_fmadd_pd
#define FMAS _mm256_fmadd_ps
#define LANES_D 4
#define LANES_S 8
#else
#error "fma_peak needs AVX2+FMA or AVX-512F (build with -march=native on such a CPU)"
#endif

/* noipa: the kernels are pure, and gcc would otherwise compute one call for
 * the whole sample loop instead of one per sample. */
__attribute__((noipa)) static double kernel_d(long iters, double mul, double add) {
    vd m = SET1D(mul), a = SET1D(add), acc[ACC];
    for (int j = 0; j < ACC; j++) acc[j] = SET1D(1.0);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < ACC; j++) acc[j] = FMAD(acc[j], m, a);
    double out[LANES_D], s = 0;
    for (int j = 0; j < ACC; j++) {
        memcpy(out, &acc[j], sizeof out);
        for (int l = 0; l < LANES_D; l++) s += out[l];
    }
    return s;
}

__attribute__((noipa)) static double kernel_s(long iters, float mul, float add) {
    vs m = SET1S(mul), a = SET1S(add), acc[ACC];
    for (int j = 0; j < ACC; j++) acc[j] = SET1S(1.0f);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < ACC; j++) acc[j] = FMAS(acc[j], m, a);
    float out[LANES_S];
    double s = 0;
    for (int j = 0; j < ACC; j++) {
        memcpy(out, &acc[j], sizeof out);
        for (int l = 0; l < LANES_S; l++) s += out[l];
    }
    return s;
}

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s fp64|fp32 THREADS ITERS SAMPLES\n", argv[0]);
        return 2;
    }
    int fp64 = strcmp(argv[1], "fp64") == 0;
    int threads = atoi(argv[2]);
    long iters = atol(argv[3]);
    int samples = atoi(argv[4]);
    volatile double vmul = 1.0, vadd = 0.5; /* opaque to the optimiser */
    double mul = vmul, add = vadd;
    double *secs = malloc(sizeof(double) * samples);
    double sink = 0;
    omp_set_num_threads(threads);
#pragma omp parallel reduction(+ : sink)
    {
        for (int s = -1; s < samples; s++) { /* s = -1: warm-up */
            double t0 = 0;
#pragma omp barrier
#pragma omp master
            t0 = omp_get_wtime();
            sink += fp64 ? kernel_d(iters, mul, add) : kernel_s(iters, (float)mul, (float)add);
#pragma omp barrier
#pragma omp master
            if (s >= 0) secs[s] = omp_get_wtime() - t0;
        }
    }
    double lanes = fp64 ? LANES_D : LANES_S;
    double flops = (double)threads * iters * ACC * lanes * 2.0;
    qsort(secs, samples, sizeof(double), cmp);
    double med = samples % 2 ? secs[samples / 2] : 0.5 * (secs[samples / 2 - 1] + secs[samples / 2]);
    printf("precision=%s threads=%d median_gflops=%.3f best_gflops=%.3f isa=%s sink=%g\n", argv[1], threads,
           flops / med / 1e9, flops / secs[0] / 1e9, ISA, sink);
    free(secs);
    return 0;
}
