/*
 * stream.c: a C STREAM (after McCalpin's STREAM, written for warpt's
 * comparison) with the original's rules: three double arrays, OpenMP static
 * schedule with first-touch initialisation, the four kernels in order each
 * pass, each kernel timed across all threads, 16/16/24/24 bytes per element.
 * Build: gcc -O3 -march=native -fopenmp stream.c -o stream
 *
 * usage: stream ELEMENTS PASSES
 * prints one line per kernel: kernel=triad median_gbs=X best_gbs=Y
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ELEMENTS PASSES\n", argv[0]);
        return 2;
    }
    long n = atol(argv[1]);
    int passes = atoi(argv[2]);
    double *a = aligned_alloc(64, ((n * sizeof(double) + 63) / 64) * 64);
    double *b = aligned_alloc(64, ((n * sizeof(double) + 63) / 64) * 64);
    double *c = aligned_alloc(64, ((n * sizeof(double) + 63) / 64) * 64);
    double *t = malloc(sizeof(double) * 4 * passes);
    const double s = 3.0;
#pragma omp parallel for schedule(static)
    for (long j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }
    for (int k = 0; k < passes; k++) {
        double t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) c[j] = a[j];
        t[0 * passes + k] = omp_get_wtime() - t0;
        t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) b[j] = s * c[j];
        t[1 * passes + k] = omp_get_wtime() - t0;
        t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) c[j] = a[j] + b[j];
        t[2 * passes + k] = omp_get_wtime() - t0;
        t0 = omp_get_wtime();
#pragma omp parallel for schedule(static)
        for (long j = 0; j < n; j++) a[j] = b[j] + s * c[j];
        t[3 * passes + k] = omp_get_wtime() - t0;
    }
    /* Validation as STREAM does it: replay on scalars. */
    double ea = 1.0, eb = 2.0, ec = 0.0;
    for (int k = 0; k < passes; k++) {
        ec = ea;
        eb = s * ec;
        ec = ea + eb;
        ea = eb + s * ec;
    }
    double err = 0;
    for (long j = 0; j < n; j++) err += fabs(a[j] - ea) / ea;
    if (err / n > 1e-13) {
        fprintf(stderr, "validation failed: mean relative error %g\n", err / n);
        return 1;
    }
    const char *names[4] = {"copy", "scale", "add", "triad"};
    const double bytes[4] = {16, 16, 24, 24};
    for (int k = 0; k < 4; k++) {
        double *tk = t + k * passes + 1; /* STREAM skips the first pass */
        int m = passes - 1;
        qsort(tk, m, sizeof(double), cmp);
        double med = m % 2 ? tk[m / 2] : 0.5 * (tk[m / 2 - 1] + tk[m / 2]);
        printf("kernel=%s median_gbs=%.3f best_gbs=%.3f threads=%d\n", names[k], bytes[k] * n / med / 1e9,
               bytes[k] * n / tk[0] / 1e9, omp_get_max_threads());
    }
    free(a);
    free(b);
    free(c);
    free(t);
    return 0;
}
