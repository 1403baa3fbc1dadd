// sym_numeric.h (internal): arithmetic helpers of the symbolic evaluator.
//
// Exact values use 128-bit intermediates and are checked back into 64 bits
// (fit), so a result either is Python's exact answer or an overflow error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pt2f/symexpr.h"

namespace pt2f {
namespace detail {

using Kind = SymValue::Kind;
using i128 = __int128;

/// Exact rational in 128 bits, reduced, d > 0.
struct Q {
  i128 n, d;
};

[[noreturn]] void fail(const std::string &msg);
const char *op_name(pt2format::SymOp op);
/// v as int64, or an overflow error naming `what`.
[[noreturn]] void fail_overflow(const std::string &what);
int64_t fit(i128 v, const char *what);
i128 gcd128(i128 a, i128 b);
Q make_q(i128 n, i128 d);
SymValue from_q(const Q &q, const char *what);
/// n / d correctly rounded, as Python's int / int.
double ratio_to_double(int64_t n, int64_t d);
bool is_exact(const SymValue &v);
Q to_q(const SymValue &v);
double to_double(const SymValue &v);
void need_number(const SymValue &v, const char *what);
int64_t need_int(const SymValue &v, const char *what);
bool need_bool(const SymValue &v, const char *what);
void arity(const std::vector<SymValue> &a, size_t lo, size_t hi, const char *what);
/// CPython's float divmod: floor quotient and modulus with the divisor's sign.
void py_float_divmod(double vx, double wx, double *floordiv, double *mod_out);
/// floor(a / b) for exact a, b.
i128 floor_div_q(const Q &a, const Q &b, const char *what);
/// Three-way comparison with Python's exact int/float semantics; *ordered is
/// false when a NaN is involved.
int compare(const SymValue &x, const SymValue &y, bool *ordered);
/// base ** e exactly (a rational for e < 0).
SymValue power_exact(const Q &base, int64_t e, const char *what);
/// The exact integer q-th root of v >= 0, or -1.
int64_t exact_root(int64_t v, int64_t q);
double checked_float(double v, const char *what);
int64_t float_to_int(double v, const char *what);
double round_half_even(double x);
/// Python's round(x, n) for floats.
double round_decimal(double x, int64_t n);

}  // namespace detail
}  // namespace pt2f
