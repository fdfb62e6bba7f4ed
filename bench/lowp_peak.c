/*
 * lowp_peak.c: the C reference for warpt's low-precision cpu_flops series.
 *
 * The same work as warpt's kernels, in the best instruction the compiler
 * targets (build with gcc -O3 -march=native -fopenmp):
 *   bf16: ACC chains of vdpbf16ps (AVX512_BF16), every input 1.0;
 *   fp16: ACC chains of x = x * -1 + 1 in vfmadd...ph (AVX512_FP16);
 *   int8: ACC chains of vpdpbusd (AVX512_VNNI, else AVX-VNNI), or on AVX2
 *         alone the pre-VNNI vpmaddubsw + vpmaddwd + vpaddd sequence in
 *         inline assembly (in intrinsics gcc hoists the products, which do
 *         not depend on the accumulator, out of the loop).
 * One thread or one per CPU, each sample timed from a common start to the
 * last thread's finish. Operations: 2 per multiply-add, as warpt counts.
 *
 * usage: lowp_peak bf16|fp16|int8 THREADS ITERS SAMPLES
 * prints: precision=int8 threads=N median_gops=X best_gops=Y isa=... ok=1
 *   (ok=0 when a lane is not its closed form)
 */
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int ok = 1;

#if defined(__AVX512BF16__)
#define HAVE_BF16 1
__attribute__((noipa)) static double bf16(long iters, float one) {
    __m512 v = _mm512_set1_ps(one);
    __m512bh a = _mm512_cvtne2ps_pbh(v, v), b = a;
    __m512 acc[16];
    for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_ps();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 16; j++) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
    float out[16];
    for (int j = 0; j < 16; j++) {
        _mm512_storeu_ps(out, acc[j]);
        for (int l = 0; l < 16; l++)
            if (out[l] != 2.0f * (float)iters) ok = 0;
    }
    return 16.0 * 16 * 4 * iters;
}
#endif

#if defined(__AVX512FP16__)
#define HAVE_FP16 1
__attribute__((noipa)) static double fp16(long iters, _Float16 one) {
    __m512h m = _mm512_set1_ph(-one), a = _mm512_set1_ph(one), acc[16];
    for (int j = 0; j < 16; j++) acc[j] = _mm512_set1_ph(one);
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 16; j++) acc[j] = _mm512_fmadd_ph(acc[j], m, a);
    _Float16 out[32];
    for (int j = 0; j < 16; j++) {
        _mm512_storeu_ph(out, acc[j]);
        for (int l = 0; l < 32; l++)
            if (out[l] != (iters % 2 ? 0 : 1)) ok = 0;
    }
    return 16.0 * 32 * 2 * iters;
}
#endif

#if defined(__AVX512VNNI__)
#define INT8_ISA "avx512_vnni_vpdpbusd_zmm"
__attribute__((noipa)) static double int8(long iters, char one) {
    __m512i a = _mm512_set1_epi8(one), b = _mm512_set1_epi8(1), acc[16];
    for (int j = 0; j < 16; j++) acc[j] = _mm512_setzero_si512();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 16; j++) acc[j] = _mm512_dpbusd_epi32(acc[j], a, b);
    int32_t out[16];
    for (int j = 0; j < 16; j++) {
        _mm512_storeu_si512(out, acc[j]);
        for (int l = 0; l < 16; l++)
            if (out[l] != 4 * iters) ok = 0;
    }
    return 16.0 * 16 * 8 * iters;
}
#elif defined(__AVXVNNI__)
#define INT8_ISA "avx_vnni_vpdpbusd_ymm"
__attribute__((noipa)) static double int8(long iters, char one) {
    __m256i a = _mm256_set1_epi8(one), b = _mm256_set1_epi8(1), acc[12];
    for (int j = 0; j < 12; j++) acc[j] = _mm256_setzero_si256();
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++) acc[j] = _mm256_dpbusd_avx_epi32(acc[j], a, b);
    int32_t out[8];
    for (int j = 0; j < 12; j++) {
        _mm256_storeu_si256((__m256i *)out, acc[j]);
        for (int l = 0; l < 8; l++)
            if (out[l] != 4 * iters) ok = 0;
    }
    return 12.0 * 8 * 8 * iters;
}
#elif defined(__AVX2__)
#define INT8_ISA "avx2_vpmaddubsw+vpmaddwd+vpaddd_ymm"
__attribute__((noipa)) static double int8(long iters, char one) {
    __m256i a = _mm256_set1_epi8(one), b = _mm256_set1_epi8(1), ones = _mm256_set1_epi16(1);
    __m256i c0 = _mm256_setzero_si256(), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, t0, t1, t2, t3, t4, t5;
    for (long i = 0; i < iters; i++)
        __asm__ volatile(
            "vpmaddubsw %[b], %[a], %[t0]\n\tvpmaddubsw %[b], %[a], %[t1]\n\t"
            "vpmaddubsw %[b], %[a], %[t2]\n\tvpmaddubsw %[b], %[a], %[t3]\n\t"
            "vpmaddubsw %[b], %[a], %[t4]\n\tvpmaddubsw %[b], %[a], %[t5]\n\t"
            "vpmaddwd %[o], %[t0], %[t0]\n\tvpmaddwd %[o], %[t1], %[t1]\n\t"
            "vpmaddwd %[o], %[t2], %[t2]\n\tvpmaddwd %[o], %[t3], %[t3]\n\t"
            "vpmaddwd %[o], %[t4], %[t4]\n\tvpmaddwd %[o], %[t5], %[t5]\n\t"
            "vpaddd %[t0], %[c0], %[c0]\n\tvpaddd %[t1], %[c1], %[c1]\n\t"
            "vpaddd %[t2], %[c2], %[c2]\n\tvpaddd %[t3], %[c3], %[c3]\n\t"
            "vpaddd %[t4], %[c4], %[c4]\n\tvpaddd %[t5], %[c5], %[c5]"
            : [c0] "+x"(c0), [c1] "+x"(c1), [c2] "+x"(c2), [c3] "+x"(c3), [c4] "+x"(c4), [c5] "+x"(c5),
              [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3), [t4] "=&x"(t4), [t5] "=&x"(t5)
            : [a] "x"(a), [b] "x"(b), [o] "x"(ones));
    __m256i acc[6] = {c0, c1, c2, c3, c4, c5};
    int32_t out[8];
    for (int j = 0; j < 6; j++) {
        _mm256_storeu_si256((__m256i *)out, acc[j]);
        for (int l = 0; l < 8; l++)
            if (out[l] != 4 * iters) ok = 0;
    }
    return 6.0 * 8 * 8 * iters;
}
#endif

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s bf16|fp16|int8 THREADS ITERS SAMPLES\n", argv[0]);
        return 2;
    }
    const char *prec = argv[1];
    const char *isa = NULL;
    volatile int vone = 1; /* opaque to the optimiser */
#ifdef HAVE_BF16
    if (!strcmp(prec, "bf16")) isa = "avx512_bf16_vdpbf16ps_zmm";
#endif
#ifdef HAVE_FP16
    if (!strcmp(prec, "fp16")) isa = "avx512_fp16_vfmadd231ph_zmm";
#endif
#ifdef INT8_ISA
    if (!strcmp(prec, "int8")) isa = INT8_ISA;
#endif
    if (!isa) {
        printf("precision=%s unavailable=1\n", prec);
        return 0;
    }
    int threads = atoi(argv[2]);
    long iters = atol(argv[3]);
    int samples = atoi(argv[4]);
    double *secs = malloc(sizeof(double) * samples);
    double ops = 0;
    omp_set_num_threads(threads);
#pragma omp parallel reduction(max : ops)
    {
        for (int s = -1; s < samples; s++) { /* s = -1: warm-up */
            double t0 = 0;
#pragma omp barrier
#pragma omp master
            t0 = omp_get_wtime();
#ifdef HAVE_BF16
            if (!strcmp(prec, "bf16")) ops = bf16(iters, (float)vone);
#endif
#ifdef HAVE_FP16
            if (!strcmp(prec, "fp16")) ops = fp16(iters, (_Float16)vone);
#endif
#ifdef INT8_ISA
            if (!strcmp(prec, "int8")) ops = int8(iters, (char)vone);
#endif
#pragma omp barrier
#pragma omp master
            if (s >= 0) secs[s] = omp_get_wtime() - t0;
        }
    }
    double total = (double)threads * ops;
    qsort(secs, samples, sizeof(double), cmp);
    double med = samples % 2 ? secs[samples / 2] : 0.5 * (secs[samples / 2 - 1] + secs[samples / 2]);
    printf("precision=%s threads=%d median_gops=%.3f best_gops=%.3f isa=%s ok=%d\n", prec, threads,
           total / med / 1e9, total / secs[0] / 1e9, isa, ok);
    free(secs);
    return 0;
}
