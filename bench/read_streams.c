/*
 * read_streams.c: how fast this machine reads a decode step's weights.
 *
 * A decode step at batch 1 streams every weight once (llm_infer's small
 * preset in f32: 86 M values, 344 MB) and does little else, so its time is
 * bounded by this read. Each thread sums its contiguous share of the array
 * with AVX-512 loads, as S streams a thread (S equal parts of its share,
 * read side by side): one stream is how warpt's tiles and llama.cpp's rows
 * read the weights; more streams keep more of a core's misses in flight.
 *
 * build: gcc -O3 -march=native -fopenmp bench/read_streams.c -o read_streams
 * usage: read_streams STREAMS [VALUES] [REPS] [BLOCK]   (STREAMS 1..8;
 *        VALUES 86000000, the small preset's weights; REPS 20; BLOCK: read
 *        each thread's share as runs of STREAMS adjacent blocks of BLOCK
 *        values, side by side, as the GEMM engine's pairs read adjacent
 *        packed panels (18432: fp32's 48-row panels 384 deep); without it,
 *        its S equal parts side by side)
 * prints: streams=S block=B values=N best_ms=T gbs=R sum=X (threads: OMP_NUM_THREADS,
 *   else one per CPU; sum: every value is read, checked against the closed
 *   form, ok=0 otherwise)
 */
#include <immintrin.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int streams = argc > 1 ? atoi(argv[1]) : 1;
    size_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 86000000;
    int reps = argc > 3 ? atoi(argv[3]) : 20;
    size_t block = argc > 4 ? strtoull(argv[4], NULL, 10) / 16 * 16 : 0;
    if (streams < 1 || streams > 8 || n < 16 || reps < 1 || (argc > 4 && block == 0)) {
        fprintf(stderr,
                "usage: read_streams STREAMS(1..8) [VALUES>=16] [REPS>=1] [BLOCK>=16]\n");
        return 2;
    }
    float *a = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    if (!a) {
        fprintf(stderr, "read_streams: cannot allocate %zu values\n", n);
        return 1;
    }
#pragma omp parallel for
    for (size_t i = 0; i < n; i++) a[i] = 1.0f;
    double best = 1e30, read = 0, sum = 0;
    for (int r = 0; r < reps; r++) {
        double total = 0, count = 0;
        double t0 = now();
#pragma omp parallel reduction(+ : total, count)
        {
            int threads = omp_get_num_threads(), t = omp_get_thread_num();
            /* Each thread's share and each stream a whole number of
             * vectors, so every load is aligned (`a` is). */
            size_t share = n / threads / 16 * 16;
            const float *base = a + (size_t)t * share;
            __m512 acc[8];
            for (int s = 0; s < 8; s++) acc[s] = _mm512_setzero_ps();
            if (block) {
                /* Runs of `streams` adjacent blocks, read side by side. */
                size_t run = block * streams, runs = share / run;
                for (size_t r = 0; r < runs; r++) {
                    const float *at = base + r * run;
                    for (size_t i = 0; i < block; i += 16)
                        for (int s = 0; s < streams; s++)
                            acc[s] = _mm512_add_ps(acc[s], _mm512_load_ps(at + s * block + i));
                }
                count += (double)runs * run;
            } else {
                size_t per = share / streams / 16 * 16;
                for (size_t i = 0; i < per; i += 16)
                    for (int s = 0; s < streams; s++)
                        acc[s] = _mm512_add_ps(acc[s], _mm512_load_ps(base + s * per + i));
                count += (double)per * streams;
            }
            for (int s = 0; s < streams; s++) total += _mm512_reduce_add_ps(acc[s]);
        }
        double dt = now() - t0;
        if (dt < best) best = dt;
        read = count;
        sum = total;
    }
    /* Every value is 1: the sum is the count read, exact while no lane of
     * an accumulator passes 2^24 (VALUES up to 268 M on one thread). */
    printf("streams=%d block=%zu values=%.0f best_ms=%.2f gbs=%.1f sum=%.0f ok=%d\n", streams,
           block, read, best * 1e3, read * sizeof(float) / best / 1e9, sum, sum == read);
    free(a);
    return sum == read ? 0 : 1;
}
