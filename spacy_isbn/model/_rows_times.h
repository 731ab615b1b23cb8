/* The compiled row products of the search and the forced scoring (see
   _kernels.pyx, which declares them): BLIS's arithmetic without its
   packing of W on every call. */
#ifndef ISBN_ROWS_TIMES_H
#define ISBN_ROWS_TIMES_H
#include <immintrin.h>
#define ISBN_PREFETCH(p) __builtin_prefetch((const void*)(p), 0, 1)

/* out = h @ W (W: K x N, row-major), each entry one chain of fused
   multiply-adds over k in order from zero: the arithmetic of BLIS's
   sgemm micro-kernels, without their packing of W on every call. */
static inline __attribute__((always_inline)) void isbn_row_times(
        const float* h, const float* W, long K, long N, float* out) {
    long c = 0;
    for (; c + 64 <= N; c += 64) {
        float acc[64];
        for (int j = 0; j < 64; j++) acc[j] = 0.0f;
        for (long k = 0; k < K; k++) {
            const float hk = h[k];
            const float* w = W + k * N + c;
            for (int j = 0; j < 64; j++) acc[j] = __builtin_fmaf(hk, w[j], acc[j]);
        }
        for (int j = 0; j < 64; j++) out[c + j] = acc[j];
    }
    for (; c < N; c++) {
        float a = 0.0f;
        for (long k = 0; k < K; k++) a = __builtin_fmaf(h[k], W[k * N + c], a);
        out[c] = a;
    }
}
/* columns [c0, N) of out = h @ W by the same chains */
static inline __attribute__((always_inline)) void isbn_row_tail(
        const float* h, const float* W, long K, long N, long c0, float* out) {
    for (long c = c0; c < N; c++) {
        float a = 0.0f;
        for (long k = 0; k < K; k++) a = __builtin_fmaf(h[k], W[k * N + c], a);
        out[c] = a;
    }
}
/* six rows at once, 16 columns at a time (12 accumulators in registers,
   each W load used six times, as BLIS's micro-kernel blocks): columns
   [0, N - N % 16); still one chain per entry, so the same bits */
__attribute__((target("avx2,fma"))) static void isbn_six_rows(
        const float* const* hs, const float* W, long K, long N, float* const* outs) {
    for (long c = 0; c + 16 <= N; c += 16) {
        __m256 a[6][2];
        for (int j = 0; j < 6; j++) a[j][0] = a[j][1] = _mm256_setzero_ps();
        for (long k = 0; k < K; k++) {
            const __m256 w0 = _mm256_loadu_ps(W + k * N + c);
            const __m256 w1 = _mm256_loadu_ps(W + k * N + c + 8);
            for (int j = 0; j < 6; j++) {
                const __m256 b = _mm256_broadcast_ss(hs[j] + k);
                a[j][0] = _mm256_fmadd_ps(b, w0, a[j][0]);
                a[j][1] = _mm256_fmadd_ps(b, w1, a[j][1]);
            }
        }
        for (int j = 0; j < 6; j++) {
            _mm256_storeu_ps(outs[j] + c, a[j][0]);
            _mm256_storeu_ps(outs[j] + c + 8, a[j][1]);
        }
    }
}
/* compiled for FMA units, chosen at run time; else libm's exact fmaf */
__attribute__((target("avx2,fma"))) static void isbn_row_times_fma(
        const float* h, const float* W, long K, long N, float* out) {
    isbn_row_times(h, W, K, N, out);
}
__attribute__((target("avx2,fma"))) static void isbn_row_tail_fma(
        const float* h, const float* W, long K, long N, long c0, float* out) {
    isbn_row_tail(h, W, K, N, c0, out);
}
static int isbn_has_fma(void) {
    return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
}
/* outs[i] = hs[i] @ W for n rows */
static void isbn_rows_times(const float* const* hs, long n, const float* W, long K, long N,
                            float* const* outs) {
    long i = 0;
    if (isbn_has_fma()) {
        for (; i + 6 <= n; i += 6) {
            isbn_six_rows(hs + i, W, K, N, outs + i);
            if (N % 16)
                for (int j = 0; j < 6; j++)
                    isbn_row_tail_fma(hs[i + j], W, K, N, N - N % 16, outs[i + j]);
        }
        for (; i < n; i++) isbn_row_times_fma(hs[i], W, K, N, outs[i]);
    } else {
        for (; i < n; i++) isbn_row_times(hs[i], W, K, N, outs[i]);
    }
}
#endif
