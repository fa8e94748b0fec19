/*
 * Subject kernels: a bfloat16 matrix-vector product pair, out[r] = sum_k a[r, k] v[k]
 * (see gradcheck_abi.h). bfloat16 as uint16_t bit patterns, rounded by the same
 * round-to-nearest-even on the bits as kernels/rope_bf16.c.
 *
 *   gc_matvec_bf16_fast       accumulates in bfloat16: the running sum is rounded to
 *                             bfloat16 after every addition (8 significant bits), so once
 *                             the sum has grown each addition loses up to half an ulp of
 *                             the sum. A DELIBERATELY BROKEN kernel: the fast side is wrong.
 *   gc_matvec_bf16_reference  accumulates in float32 and rounds once at the end.
 *
 * The product of two bfloat16 values has at most 16 significant bits, so it is exact in
 * float32 in both kernels; they differ only in the accumulator.
 */
#include <string.h>
#include "gradcheck_abi.h"

static inline uint16_t bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float bf16_widen(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void gc_matvec_bf16_fast(const uint16_t *a, const uint16_t *v, int64_t rows, int64_t n,
                         uint16_t *out)
{
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t *ar = a + r * n;
        uint16_t acc = 0;  /* +0.0 */
        for (int64_t k = 0; k < n; ++k)
            acc = bf16_round(bf16_widen(acc) + bf16_widen(ar[k]) * bf16_widen(v[k]));
        out[r] = acc;
    }
}

void gc_matvec_bf16_reference(const uint16_t *a, const uint16_t *v, int64_t rows, int64_t n,
                              uint16_t *out)
{
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t *ar = a + r * n;
        float acc = 0.0f;
        for (int64_t k = 0; k < n; ++k)
            acc += bf16_widen(ar[k]) * bf16_widen(v[k]);
        out[r] = bf16_round(acc);
    }
}
