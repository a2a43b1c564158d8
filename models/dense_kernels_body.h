#pragma once
// Internal to models/dense_kernels.cpp (and its test): the bodies of the dense kernels, always
// inlined into each instruction-set version. A test compiles them for the baseline instruction
// set and compares them bit for bit with the version this CPU runs.

#include <Eigen/Core>
#include <algorithm>
#include <array>
#include <cstring>

namespace stragglersim::models::internal::body {

// Four doubles: one AVX register, or two SSE2 registers in the baseline version. The operations
// below are lane-wise IEEE operations without fused multiply-add, so both give the same bytes.
// Vectors are passed by reference only (by value, their calling convention differs with and
// without AVX).
using Vec4 = double __attribute__((vector_size(32)));
inline constexpr Eigen::Index kLanes = 4;
inline constexpr Eigen::Index kStep = 2 * kLanes;  // two running vectors: eight sums

[[gnu::always_inline]] inline void load(Vec4& v, const double* at) {
  std::memcpy(&v, at, sizeof v);
}

[[gnu::always_inline]] inline void store(double* at, const Vec4& v) {
  std::memcpy(at, &v, sizeof v);
}

[[gnu::always_inline]] inline double dot(const double* row, Eigen::Index p, const double* x) {
  Vec4 low = {0.0, 0.0, 0.0, 0.0};
  Vec4 high = low;
  Vec4 a;
  Vec4 b;
  const Eigen::Index body = p - p % kStep;
  for (Eigen::Index j = 0; j < body; j += kStep) {
    load(a, row + j);
    load(b, x + j);
    low += a * b;
    load(a, row + j + kLanes);
    load(b, x + j + kLanes);
    high += a * b;
  }
  // ((s₀ + s₄) + (s₁ + s₅)) + ((s₂ + s₆) + (s₃ + s₇)), s₀..s₃ in `low` and s₄..s₇ in `high`.
  const Vec4 pair = low + high;
  double sum = (pair[0] + pair[1]) + (pair[2] + pair[3]);
  for (Eigen::Index j = body; j < p; ++j) {
    sum += row[j] * x[j];
  }
  return sum;
}

[[gnu::always_inline]] inline void update4(const double* rows,
                                           Eigen::Index p,
                                           const double* w,
                                           double* sum) {
  const double* a0 = rows;
  const double* a1 = rows + p;
  const double* a2 = rows + 2 * p;
  const double* a3 = rows + 3 * p;
  const Vec4 w0 = {w[0], w[0], w[0], w[0]};
  const Vec4 w1 = {w[1], w[1], w[1], w[1]};
  const Vec4 w2 = {w[2], w[2], w[2], w[2]};
  const Vec4 w3 = {w[3], w[3], w[3], w[3]};
  Vec4 r0;
  Vec4 r1;
  Vec4 r2;
  Vec4 r3;
  Vec4 s;
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    load(r0, a0 + j);
    load(r1, a1 + j);
    load(r2, a2 + j);
    load(r3, a3 + j);
    load(s, sum + j);
    s += ((w0 * r0 + w1 * r1) + w2 * r2) + w3 * r3;
    store(sum + j, s);
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += ((w[0] * a0[j] + w[1] * a1[j]) + w[2] * a2[j]) + w[3] * a3[j];
  }
}

[[gnu::always_inline]] inline void update(const double* row,
                                          Eigen::Index p,
                                          double w,
                                          double* sum) {
  const Vec4 weight = {w, w, w, w};
  Vec4 a;
  Vec4 s;
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j = 0; j < body; j += kLanes) {
    load(a, row + j);
    load(s, sum + j);
    s += weight * a;
    store(sum + j, s);
  }
  for (Eigen::Index j = body; j < p; ++j) {
    sum[j] += w * row[j];
  }
}

/// Columns one tile of dot4_many / update4_many serves per read of the rows: two where the CPU
/// has 16 vector registers (baseline, AVX), four with AVX-512's 32 (still 256-bit vectors). The
/// bytes do not depend on it.
inline constexpr Eigen::Index kManyColumns = 2;
inline constexpr Eigen::Index kManyColumnsAvx512 = 4;

/// Keeps v in a vector register where kPin (the AVX versions: one register holds a Vec4), so
/// that the compiler loads a row chunk once rather than folding it into every product (the
/// dot's loads then limit it less: 4 + kColumns loads per 4·kColumns products). Changes no
/// arithmetic.
template <bool kPin>
[[gnu::always_inline]] inline void pin(Vec4& v) {
#ifdef __clang__
  // Clang checks the operand against the unit's baseline target (no 32-byte registers) and keeps
  // the chunks in registers by itself: nothing to pin.
  (void)v;
#else
  if constexpr (kPin) {
    asm("" : "+v"(v));
  }
#endif
}

/// Doubles of each row one step of dot4_many and update4_many takes (a multiple of kStep): the
/// four rows' 4 KB and a group's 16 columns of x, 16 KB, stay in L1 cache while every tile of
/// columns uses them.
inline constexpr Eigen::Index kManyChunk = 128;
/// Columns dot4_many takes at once (their running sums wait in memory between chunks).
inline constexpr Eigen::Index kManyGroup = 16;

/// Entries [j0, j1) (multiples of kStep) of the dot products of the four rows with the kColumns
/// columns of x, added to their running sums: acc[8c + 4h + r] holds s₀ … s₃ (h = 0) or
/// s₄ … s₇ (h = 1) of row r and column c, as dot keeps them in `low` and `high`. The sums of
/// one half stay in registers while it walks the chunk; each row chunk is loaded once for every
/// column of the tile.
template <Eigen::Index kColumns, bool kPin>
[[gnu::always_inline]] inline void dot4_range(const double* rows,
                                              Eigen::Index p,
                                              const double* x,
                                              Eigen::Index ldx,
                                              Eigen::Index j0,
                                              Eigen::Index j1,
                                              Vec4* acc) {
  constexpr auto kTile = static_cast<std::size_t>(4 * kColumns);
  for (Eigen::Index half = 0; half < 2; ++half) {
    std::array<Vec4, kTile> sums;
    for (std::size_t k = 0; k < kTile; ++k)
      sums[k] = acc[8 * (k / 4) + 4 * static_cast<std::size_t>(half) + k % 4];
    // The four rows in named vectors (a loop over an array of them is copied through memory).
    Vec4 a0;
    Vec4 a1;
    Vec4 a2;
    Vec4 a3;
    Vec4 b;
    for (Eigen::Index j = j0 + half * kLanes; j < j1; j += kStep) {
      load(a0, rows + j);
      load(a1, rows + p + j);
      load(a2, rows + 2 * p + j);
      load(a3, rows + 3 * p + j);
      pin<kPin>(a0);
      pin<kPin>(a1);
      pin<kPin>(a2);
      pin<kPin>(a3);
#pragma GCC unroll 16
      for (Eigen::Index c = 0; c < kColumns; ++c) {
        load(b, x + c * ldx + j);
        const auto k = static_cast<std::size_t>(4 * c);
        sums[k] += a0 * b;
        sums[k + 1] += a1 * b;
        sums[k + 2] += a2 * b;
        sums[k + 3] += a3 * b;
      }
    }
    for (std::size_t k = 0; k < kTile; ++k)
      acc[8 * (k / 4) + 4 * static_cast<std::size_t>(half) + k % 4] = sums[k];
  }
}

/// z[r + 4c] = dot(rows + r·p, p, x + c·ldx) for the four rows r and the `columns` columns c:
/// each entry the same operations in the same order as dot (each running sum takes its entries
/// in order, the chunks and tiles only interleave different sums). Groups of kManyGroup columns,
/// each walked in chunks of kManyChunk entries, each chunk by tiles of kWide columns.
template <Eigen::Index kWide, bool kPin = false>
[[gnu::always_inline]] inline void dot4_many(const double* rows,
                                             Eigen::Index p,
                                             const double* x,
                                             Eigen::Index ldx,
                                             Eigen::Index columns,
                                             double* z) {
  const Eigen::Index body = p - p % kStep;
  std::array<Vec4, static_cast<std::size_t>(8 * kManyGroup)> acc;
  for (Eigen::Index g0 = 0; g0 < columns; g0 += kManyGroup) {
    const Eigen::Index g1 = std::min(columns, g0 + kManyGroup);
    for (Eigen::Index k = 0; k < 8 * (g1 - g0); ++k) {
      acc[static_cast<std::size_t>(k)] = Vec4{0.0, 0.0, 0.0, 0.0};
    }
    for (Eigen::Index j0 = 0; j0 < body; j0 += kManyChunk) {
      const Eigen::Index j1 = std::min(body, j0 + kManyChunk);
      Eigen::Index c = g0;
      for (; c + kWide <= g1; c += kWide) {
        dot4_range<kWide, kPin>(rows, p, x + c * ldx, ldx, j0, j1, acc.data() + 8 * (c - g0));
      }
      for (; c < g1; ++c) {
        dot4_range<1, kPin>(rows, p, x + c * ldx, ldx, j0, j1, acc.data() + 8 * (c - g0));
      }
    }
    for (Eigen::Index c = g0; c < g1; ++c) {
      for (Eigen::Index r = 0; r < 4; ++r) {
        // ((s₀ + s₄) + (s₁ + s₅)) + ((s₂ + s₆) + (s₃ + s₇)), then the tail, as in dot.
        const auto k = static_cast<std::size_t>(8 * (c - g0) + r);
        const Vec4 pair = acc[k] + acc[k + 4];
        double sum = (pair[0] + pair[1]) + (pair[2] + pair[3]);
        const double* row = rows + r * p;
        const double* column = x + c * ldx;
        for (Eigen::Index j = body; j < p; ++j) {
          sum += row[j] * column[j];
        }
        z[4 * c + r] = sum;
      }
    }
  }
}

/// Entries [j0, j1) (multiples of kLanes) of update4(rows, p, w + 4c, sum + c·lds) for the
/// kColumns columns c: each chunk of the four rows loaded once for every column of the tile.
template <Eigen::Index kColumns>
[[gnu::always_inline]] inline void update4_range(const double* rows,
                                                 Eigen::Index p,
                                                 const double* w,
                                                 double* sum,
                                                 Eigen::Index lds,
                                                 Eigen::Index j0,
                                                 Eigen::Index j1) {
  constexpr auto kTile = static_cast<std::size_t>(4 * kColumns);
  std::array<Vec4, kTile> weight;
  for (std::size_t k = 0; k < kTile; ++k) weight[k] = Vec4{w[k], w[k], w[k], w[k]};
  Vec4 a0;
  Vec4 a1;
  Vec4 a2;
  Vec4 a3;
  Vec4 s;
  for (Eigen::Index j = j0; j < j1; j += kLanes) {
    load(a0, rows + j);
    load(a1, rows + p + j);
    load(a2, rows + 2 * p + j);
    load(a3, rows + 3 * p + j);
#pragma GCC unroll 16
    for (Eigen::Index c = 0; c < kColumns; ++c) {
      const auto k = static_cast<std::size_t>(4 * c);
      load(s, sum + c * lds + j);
      s += ((weight[k] * a0 + weight[k + 1] * a1) + weight[k + 2] * a2) + weight[k + 3] * a3;
      store(sum + c * lds + j, s);
    }
  }
}

/// update4(rows, p, w + 4c, sum + c·lds) for the `columns` columns c, each the same bytes as
/// update4's: chunks of kManyChunk entries, each by tiles of kWide columns, then the last
/// p mod 4 entries one by one.
template <Eigen::Index kWide>
[[gnu::always_inline]] inline void update4_many(const double* rows,
                                                Eigen::Index p,
                                                const double* w,
                                                Eigen::Index columns,
                                                double* sum,
                                                Eigen::Index lds) {
  const Eigen::Index body = p - p % kLanes;
  for (Eigen::Index j0 = 0; j0 < body; j0 += kManyChunk) {
    const Eigen::Index j1 = std::min(body, j0 + kManyChunk);
    Eigen::Index c = 0;
    for (; c + kWide <= columns; c += kWide) {
      update4_range<kWide>(rows, p, w + 4 * c, sum + c * lds, lds, j0, j1);
    }
    for (; c < columns; ++c) {
      update4_range<1>(rows, p, w + 4 * c, sum + c * lds, lds, j0, j1);
    }
  }
  for (Eigen::Index j = body; j < p; ++j) {
    for (Eigen::Index c = 0; c < columns; ++c) {
      const double* v = w + 4 * c;
      sum[c * lds + j] +=
          ((v[0] * rows[j] + v[1] * rows[p + j]) + v[2] * rows[2 * p + j]) + v[3] * rows[3 * p + j];
    }
  }
}

/// Columns of H one gram_columns call fills: two vectors.
inline constexpr Eigen::Index kGramColumns = 2 * kLanes;
/// Rows of H one tile of gram_columns keeps in registers while it walks down s.
inline constexpr Eigen::Index kGramRows = 4;

/// Rows [first, last) of s added to the tile H(i … i + 3, j0 … j0 + 7): each entry gets
/// + s(r, i)·s(r, j) for r = first, first + 1, … in order, one product and one addition each.
/// s is packed in column blocks of four (see gram_columns): the tile reads three blocks front
/// to back.
[[gnu::always_inline]] inline void gram_tile(const double* packed,
                                             Eigen::Index m,
                                             Eigen::Index ld,
                                             Eigen::Index first,
                                             Eigen::Index last,
                                             Eigen::Index i,
                                             Eigen::Index j0,
                                             double* h) {
  constexpr auto kTile = static_cast<std::size_t>(kGramRows);
  std::array<Vec4, 2 * kTile> acc;  // row i + k: acc[2k] (columns j0 … j0 + 3), acc[2k + 1]
  double* const tile = h + i * ld + j0;
  for (std::size_t k = 0; k < kTile; ++k) {
    load(acc[2 * k], tile + static_cast<Eigen::Index>(k) * ld);
    load(acc[2 * k + 1], tile + static_cast<Eigen::Index>(k) * ld + kLanes);
  }
  const double* rows_i = packed + i * m;
  const double* low_j = packed + j0 * m;
  const double* high_j = low_j + kLanes * m;
  Vec4 low;
  Vec4 high;
  for (Eigen::Index r = first; r < last; ++r) {
    load(low, low_j + r * kLanes);
    load(high, high_j + r * kLanes);
    const double* row = rows_i + r * kLanes;
    for (std::size_t k = 0; k < kTile; ++k) {
      const double v = row[k];
      const Vec4 broadcast = {v, v, v, v};
      acc[2 * k] += broadcast * low;
      acc[2 * k + 1] += broadcast * high;
    }
  }
  for (std::size_t k = 0; k < kTile; ++k) {
    store(tile + static_cast<Eigen::Index>(k) * ld, acc[2 * k]);
    store(tile + static_cast<Eigen::Index>(k) * ld + kLanes, acc[2 * k + 1]);
  }
}

/// H(i, j) = Σ_r s(r, i)·s(r, j) for the columns j in [j_first, j_last) and the rows i ≥ j of
/// their blocks of eight (row-major H, ld × ld, filled with zeros by the caller); s is m × ld
/// packed in column blocks of four: s(r, c) at packed[(c − c mod 4)·m + 4r + c mod 4]. ld,
/// j_first and j_last are multiples of 8. The rows are taken in chunks of about 256 KB of s,
/// each used by every block of columns while it is in L2 cache; each entry is summed over
/// r = 0 … m − 1 in order whatever the chunk size and the column range.
[[gnu::always_inline]] inline void gram_columns(const double* packed,
                                                Eigen::Index m,
                                                Eigen::Index ld,
                                                Eigen::Index j_first,
                                                Eigen::Index j_last,
                                                double* h) {
  constexpr Eigen::Index kChunkDoubles = 32768;  // 256 KB of s per chunk of rows
  const Eigen::Index chunk = std::clamp<Eigen::Index>(kChunkDoubles / ld, 16, 1024);
  for (Eigen::Index first = 0; first < m; first += chunk) {
    const Eigen::Index last = std::min(m, first + chunk);
    for (Eigen::Index j0 = j_first; j0 < j_last; j0 += kGramColumns) {
      for (Eigen::Index i = j0; i < ld; i += kGramRows) {
        gram_tile(packed, m, ld, first, last, i, j0, h);
      }
    }
  }
}

}  // namespace stragglersim::models::internal::body
