// AVX2/FMA building blocks of the rollout engine's float32 CPU kernels (paged attention, sampler).
// Every function carries the target attribute itself, so only these bodies use AVX2 and the rest of
// the library stays baseline x86-64; callers check cpu_has_avx2_fma() at run time first.
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define VERL_HAVE_AVX2_KERNELS 1
#include <immintrin.h>

#include <cstdint>

namespace verl::kernels::cpu::simd {

inline bool cpu_has_avx2_fma() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return has;
}

// exp(x) lane-wise (Cephes' expf: x = n ln2 + r, degree-5 polynomial on r; relative error
// < 2e-7 on [-87, 88]); inputs below -87.3 give 0, as expf underflows there.
__attribute__((target("avx2,fma"))) inline __m256 exp_ps(__m256 x) {
  const __m256 underflow = _mm256_cmp_ps(x, _mm256_set1_ps(-87.3365447f), _CMP_LT_OQ);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3762626647949f));
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3365447f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  y = _mm256_mul_ps(y, _mm256_castsi256_ps(pow2n));
  return _mm256_andnot_ps(underflow, y);
}

// Sum of the 8 lanes.
__attribute__((target("avx2,fma"))) inline float hsum_ps(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  x = _mm_add_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// Maximum of the 8 lanes.
__attribute__((target("avx2,fma"))) inline float hmax_ps(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  x = _mm_max_ss(x, _mm_shuffle_ps(x, x, 1));
  return _mm_cvtss_f32(x);
}

// Maximum of x[0, n), n >= 1.
__attribute__((target("avx2,fma"))) inline float max_ps(const float* x, int64_t n) {
  __m256 mv = _mm256_set1_ps(-__builtin_inff());
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + j));
  float mx = hmax_ps(mv);
  for (; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
  return mx;
}

// out[0, n) = exp(x[0, n) - shift) for a tail of n < 8 elements, through one padded vector so that
// every value comes from the same exp_ps as the full vectors before it. out may equal x.
__attribute__((target("avx2,fma"))) inline void exp_shifted_tail_ps(const float* x, int64_t n, float shift, float* out) {
  alignas(32) float tail[8];
  for (int64_t l = 0; l < 8; ++l) tail[l] = l < n ? x[l] - shift : -__builtin_inff();
  _mm256_store_ps(tail, exp_ps(_mm256_load_ps(tail)));
  for (int64_t l = 0; l < n; ++l) out[l] = tail[l];
}

// Lane i of the result = sum of the lanes of v[i] (8 dot products finished at once).
__attribute__((target("avx2,fma"))) inline __m256 hsum8_ps(const __m256* v) {
  const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
  const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
  return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

}  // namespace verl::kernels::cpu::simd

#endif
