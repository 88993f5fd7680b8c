// The inner loops of the CPU int8 block quantisation (quant_cpu.cpp drives them over blocks, tensors and threads).
//
// Two implementations of every loop, bit-identical to each other and to the definition in quant.h:
//   scalar: portable C++ (any CPU, float64 data, and the tails of the vector loops);
//   avx2:   x86-64 AVX2 + F16C intrinsics in functions compiled for that target only, chosen at run time
//           when the CPU has both (the rest of the library stays baseline x86-64).
// Every AVX2 function clears the upper register halves (vzeroupper) before its scalar tail, which may be
// an out-of-line call into baseline SSE code (mixing the two without it costs a transition penalty).
// Both use the same IEEE float32 operations in the same order (division, min/max clamp, round half to
// even, one multiply and one add per term: no FMA, see -ffp-contract=off in setup.py), so the choice
// never changes a result; tests run both (atb_ops._C._quant_cpu_isa).
// Included by quant_cpu.cpp only.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <type_traits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define ATB_QUANT_X86 1
#include <immintrin.h>
#endif

namespace atb_ops::quant::kernels {

// (v + kRoundMagic) - kRoundMagic rounds any |v| < 2^22 to the nearest integer, ties to even, in the
// default rounding mode (1.5 * 2^23 leaves no fraction bits).
constexpr float kRoundMagic = 12582912.0f;

inline float toFloat(float v) {
  return v;
}
inline float toFloat(double v) {
  return static_cast<float>(v);
}
inline float toFloat(c10::Half v) {
  return static_cast<float>(v);
}
inline float toFloat(c10::BFloat16 v) {
  return static_cast<float>(v);
}

// ---- scalar ----------------------------------------------------------------------------------------
namespace scalar {

// x / s clamped to [-127, 127], rounded half to even.
inline int8_t code(float v, float s) {
  v = v / s;
  v = v < -127.0f ? -127.0f : v;
  v = v > 127.0f ? 127.0f : v;
  v = (v + kRoundMagic) - kRoundMagic;
  return static_cast<int8_t>(static_cast<int32_t>(v));
}

// absmax of x[begin, len) (0 for an empty range); *bad set when a NaN or an infinity is seen.
template <typename T>
float absmax(const T* x, int64_t begin, int64_t len, float start, bool* bad) {
  float m = start;
  for (int64_t i = begin; i < len; ++i) {
    const float a = std::fabs(toFloat(x[i]));
    m = a > m ? a : m;
    *bad |= !(a <= FLT_MAX);  // NaN compares false, inf is above FLT_MAX
  }
  return m;
}

template <typename T>
void codes(const T* x, int64_t begin, int64_t len, float s, int8_t* q) {
  for (int64_t i = begin; i < len; ++i) q[i] = code(toFloat(x[i]), s);
}

// acc[i] (= or +=) float(q[i]) * s[0], or * s[i] when kPerElement.
template <bool kFirst, bool kPerElement>
void accumulate(float* acc, const int8_t* q, const float* s, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < n; ++i) {
    const float term = static_cast<float>(q[i]) * (kPerElement ? s[i] : s[0]);
    acc[i] = kFirst ? term : acc[i] + term;
  }
}

// acc[i] (= or +=) x[i]: a term that never crossed the wire (float32, exact).
template <bool kFirst>
void addExact(float* acc, const float* x, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < n; ++i) acc[i] = kFirst ? x[i] : acc[i] + x[i];
}

template <typename OutT>
void store(const float* acc, OutT* out, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < n; ++i) out[i] = static_cast<OutT>(acc[i]);
}

template <typename OutT>
void dequantize(const int8_t* q, float s, OutT* out, int64_t begin, int64_t n) {
  for (int64_t i = begin; i < n; ++i) out[i] = static_cast<OutT>(static_cast<float>(q[i]) * s);
}

}  // namespace scalar

// ---- avx2 + f16c ----------------------------------------------------------------------------------
#ifdef ATB_QUANT_X86
#define ATB_AVX2 __attribute__((target("avx2,f16c")))
namespace avx2 {

// Eight elements as float32 (exact conversions).
ATB_AVX2 inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
ATB_AVX2 inline __m256 load8(const c10::Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
ATB_AVX2 inline __m256 load8(const c10::BFloat16* p) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}
ATB_AVX2 inline __m256 load8(const int8_t* q) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))));
}

// Eight float32 to OutT, round to nearest even (as c10's conversions).
ATB_AVX2 inline void store8(float* p, __m256 v) {
  _mm256_storeu_ps(p, v);
}
ATB_AVX2 inline void store8(c10::Half* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}
ATB_AVX2 inline void store8(c10::BFloat16* p, __m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
  const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), packed);
}

template <typename T>
ATB_AVX2 float absmax(const T* x, int64_t len, bool* bad) {
  const __m256 signMask = _mm256_set1_ps(-0.0f);
  const __m256 fltMax = _mm256_set1_ps(FLT_MAX);
  __m256 m = _mm256_setzero_ps();
  __m256 nonFinite = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    const __m256 a = _mm256_andnot_ps(signMask, load8(x + i));
    m = _mm256_max_ps(m, a);
    nonFinite = _mm256_or_ps(nonFinite, _mm256_cmp_ps(a, fltMax, _CMP_NLE_UQ));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float result = 0.0f;
  for (float lane : lanes) result = lane > result ? lane : result;
  *bad |= _mm256_movemask_ps(nonFinite) != 0;
  _mm256_zeroupper();  // before any non-VEX code: the scalar tail may be an out-of-line call
  return scalar::absmax(x, i, len, result, bad);
}

template <typename T>
ATB_AVX2 void codes(const T* x, int64_t len, float s, int8_t* q) {
  const __m256 sv = _mm256_set1_ps(s);
  const __m256 lo = _mm256_set1_ps(-127.0f);
  const __m256 hi = _mm256_set1_ps(127.0f);
  int64_t i = 0;
  for (; i + 8 <= len; i += 8) {
    __m256 v = _mm256_div_ps(load8(x + i), sv);
    v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
    v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256i w = _mm256_cvtps_epi32(v);
    const __m128i p16 = _mm_packs_epi32(_mm256_castsi256_si128(w), _mm256_extracti128_si256(w, 1));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(q + i), _mm_packs_epi16(p16, p16));
  }
  _mm256_zeroupper();
  scalar::codes(x, i, len, s, q);
}

template <bool kFirst, bool kPerElement>
ATB_AVX2 void accumulate(float* acc, const int8_t* q, const float* s, int64_t n) {
  const __m256 s0 = _mm256_set1_ps(s[0]);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 term = _mm256_mul_ps(load8(q + i), kPerElement ? _mm256_loadu_ps(s + i) : s0);
    _mm256_storeu_ps(acc + i, kFirst ? term : _mm256_add_ps(_mm256_loadu_ps(acc + i), term));
  }
  _mm256_zeroupper();
  scalar::accumulate<kFirst, kPerElement>(acc, q, s, i, n);
}

template <bool kFirst>
ATB_AVX2 void addExact(float* acc, const float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    _mm256_storeu_ps(acc + i, kFirst ? v : _mm256_add_ps(_mm256_loadu_ps(acc + i), v));
  }
  _mm256_zeroupper();
  scalar::addExact<kFirst>(acc, x, i, n);
}

template <typename OutT>
ATB_AVX2 void store(const float* acc, OutT* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(out + i, _mm256_loadu_ps(acc + i));
  _mm256_zeroupper();
  scalar::store(acc, out, i, n);
}

template <typename OutT>
ATB_AVX2 void dequantize(const int8_t* q, float s, OutT* out, int64_t n) {
  const __m256 sv = _mm256_set1_ps(s);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(out + i, _mm256_mul_ps(load8(q + i), sv));
  _mm256_zeroupper();
  scalar::dequantize(q, s, out, i, n);
}

}  // namespace avx2
#endif  // ATB_QUANT_X86

// ---- dispatch -------------------------------------------------------------------------------------

enum class Isa { kScalar, kAvx2 };

template <typename T>
constexpr bool kVectorType = !std::is_same_v<T, double>;

template <typename T>
float blockAbsmax(Isa isa, const T* x, int64_t len, bool* bad) {
#ifdef ATB_QUANT_X86
  if constexpr (kVectorType<T>) {
    if (isa == Isa::kAvx2) return avx2::absmax(x, len, bad);
  }
#endif
  return scalar::absmax(x, 0, len, 0.0f, bad);
}

template <typename T>
void blockCodes(Isa isa, const T* x, int64_t len, float s, int8_t* q) {
#ifdef ATB_QUANT_X86
  if constexpr (kVectorType<T>) {
    if (isa == Isa::kAvx2) return avx2::codes(x, len, s, q);
  }
#endif
  scalar::codes(x, 0, len, s, q);
}

template <bool kFirst, bool kPerElement>
void accumulateRun(Isa isa, float* acc, const int8_t* q, const float* s, int64_t n) {
#ifdef ATB_QUANT_X86
  if (isa == Isa::kAvx2) return avx2::accumulate<kFirst, kPerElement>(acc, q, s, n);
#endif
  scalar::accumulate<kFirst, kPerElement>(acc, q, s, 0, n);
}

template <bool kFirst>
void addExactRun(Isa isa, float* acc, const float* x, int64_t n) {
#ifdef ATB_QUANT_X86
  if (isa == Isa::kAvx2) return avx2::addExact<kFirst>(acc, x, n);
#endif
  scalar::addExact<kFirst>(acc, x, 0, n);
}

template <typename OutT>
void storeRun(Isa isa, const float* acc, OutT* out, int64_t n) {
#ifdef ATB_QUANT_X86
  if constexpr (kVectorType<OutT>) {
    if (isa == Isa::kAvx2) return avx2::store(acc, out, n);
  }
#endif
  scalar::store(acc, out, 0, n);
}

template <typename OutT>
void dequantizeRun(Isa isa, const int8_t* q, float s, OutT* out, int64_t n) {
#ifdef ATB_QUANT_X86
  if constexpr (kVectorType<OutT>) {
    if (isa == Isa::kAvx2) return avx2::dequantize(q, s, out, n);
  }
#endif
  scalar::dequantize(q, s, out, 0, n);
}

}  // namespace atb_ops::quant::kernels
