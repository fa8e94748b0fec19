/*
 * Subject kernels: a bfloat16 rotary position embedding (RoPE) pair (see gradcheck_abi.h).
 *
 * bfloat16 is carried as uint16_t bit patterns (the upper half of a float32). The only
 * conversion into bfloat16 is bf16_from_f32 below: round-to-nearest-even on the bits, NaN
 * kept quiet, overflow to inf through the carry, float32 subnormals to bfloat16 subnormals
 * (both formats share the exponent range, so the same bit rounding covers them). Widening
 * back (bf16_to_f32) is exact.
 *
 * Both kernels rotate the half-split pairs (x[i], x[i + dim/2]) of each row by the angle
 * positions[row] * inv_freq[i], inv_freq[i] = base^(-2i/dim), and round each output once.
 * They differ in one thing only:
 *   gc_rope_bf16_fast       the angle is computed in float32 from the integer position and
 *                           goes straight into cosf/sinf;
 *   gc_rope_bf16_reference  the angle is rounded to bfloat16 before cosf/sinf, as a fallback
 *                           path that keeps its position/angle tensor in bfloat16 does. At
 *                           position 4000 the spacing of bfloat16 is 16, so the angle can be
 *                           off by 8 radians: the "reference" is the broken side.
 */
#include <math.h>
#include <string.h>
#include "gradcheck_abi.h"

static inline uint16_t bf16_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep the sign, force quiet */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);              /* nearest, ties to even */
    return (uint16_t)(u >> 16);
}

static inline float bf16_to_f32(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void rope_impl(const uint16_t *x, const int64_t *positions, int64_t rows, int64_t dim,
                      float base, uint16_t *out, int angle_in_bf16)
{
    int64_t half = dim / 2;
    for (int64_t r = 0; r < rows; ++r) {
        const uint16_t *xr = x + r * dim;
        uint16_t *yr = out + r * dim;
        float pos = (float)positions[r];
        for (int64_t i = 0; i < half; ++i) {
            float inv_freq = powf(base, -(float)(2 * i) / (float)dim);
            float angle = pos * inv_freq;
            if (angle_in_bf16)
                angle = bf16_to_f32(bf16_from_f32(angle));
            float c = cosf(angle), s = sinf(angle);
            float x1 = bf16_to_f32(xr[i]), x2 = bf16_to_f32(xr[i + half]);
            yr[i] = bf16_from_f32(x1 * c - x2 * s);
            yr[i + half] = bf16_from_f32(x2 * c + x1 * s);
        }
    }
}

void gc_rope_bf16_fast(const uint16_t *x, const int64_t *positions, int64_t rows, int64_t dim,
                       float base, uint16_t *out)
{
    rope_impl(x, positions, rows, dim, base, out, 0);
}

void gc_rope_bf16_reference(const uint16_t *x, const int64_t *positions, int64_t rows,
                            int64_t dim, float base, uint16_t *out)
{
    rope_impl(x, positions, rows, dim, base, out, 1);
}

void gc_bf16_from_f32(const float *x, int64_t n, uint16_t *out)
{
    for (int64_t i = 0; i < n; ++i) out[i] = bf16_from_f32(x[i]);
}
