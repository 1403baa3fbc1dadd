// Exact and floating-point arithmetic behind the symbolic operations:
// Python's floor division and modulus, exact rationals in 128-bit
// intermediates, int/float comparison as Python does it, rounding.
#include "sym_numeric.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace pt2f {
namespace detail {

void fail(const std::string &msg) { throw Error(ErrorKind::Evaluation, msg); }

// Integers are 64-bit by specification (SPEC.md, "Symbolic expressions"):
// leaving that range is a LimitError in every reader, not a domain error.
void fail_overflow(const std::string &what) {
  throw Error(ErrorKind::Limit, what + ": integer overflow (integers are 64-bit)");
}

const char *op_name(pt2format::SymOp op) {
  const char *n = pt2format::EnumNameSymOp(op);
  return (n && *n) ? n : "unknown op";
}

int64_t fit(i128 v, const char *what) {
  if (v > INT64_MAX || v < INT64_MIN)
    fail_overflow(what);
  return int64_t(v);
}

i128 gcd128(i128 a, i128 b) {
  if (a < 0) a = -a;
  if (b < 0) b = -b;
  while (b) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

Q make_q(i128 n, i128 d) {
  if (d == 0) fail("division by zero");
  if (d < 0) {
    n = -n;
    d = -d;
  }
  i128 g = gcd128(n, d);
  if (g > 1) {
    n /= g;
    d /= g;
  }
  return {n, d};
}

SymValue from_q(const Q &q, const char *what) {
  return SymValue::rational(fit(q.n, what), fit(q.d, what));
}

// n / d correctly rounded to the nearest double, as Python's int / int.
// Quad precision (113-bit significand) makes the double rounding harmless.
double ratio_to_double(int64_t n, int64_t d) {
  const int64_t lim = int64_t(1) << 53;
  if (n > -lim && n < lim && d > -lim && d < lim) return double(n) / double(d);
#if LDBL_MANT_DIG >= 113
  return double((long double)n / (long double)d);
#elif defined(__SIZEOF_FLOAT128__)
  return double((__float128)n / (__float128)d);
#else
  return double((long double)n / (long double)d);  // may differ from Python in the last bit
#endif
}

bool is_exact(const SymValue &v) { return v.kind == Kind::Int || v.kind == Kind::Rational; }

Q to_q(const SymValue &v) { return {v.num, v.kind == Kind::Rational ? v.den : 1}; }

double to_double(const SymValue &v) {
  switch (v.kind) {
    case Kind::Int: return double(v.num);
    case Kind::Rational: return ratio_to_double(v.num, v.den);
    case Kind::Float: return v.f;
    case Kind::Bool: return v.b ? 1.0 : 0.0;
  }
  return 0.0;
}

void need_number(const SymValue &v, const char *what) {
  if (v.kind == Kind::Bool) fail(std::string(what) + ": boolean operand where a number is needed");
}

int64_t need_int(const SymValue &v, const char *what) {
  if (v.kind != Kind::Int) fail(std::string(what) + ": integer operand expected");
  return v.num;
}

bool need_bool(const SymValue &v, const char *what) {
  if (v.kind != Kind::Bool) fail(std::string(what) + ": boolean operand expected");
  return v.b;
}

void arity(const std::vector<SymValue> &a, size_t lo, size_t hi, const char *what) {
  if (a.size() < lo || a.size() > hi)
    fail(std::string(what) + ": wrong number of arguments (" + std::to_string(a.size()) + ")");
}

// Python's float floor division / modulus (CPython float_divmod).
void py_float_divmod(double vx, double wx, double *floordiv, double *mod_out) {
  if (wx == 0.0) fail("float division by zero");
  double mod = std::fmod(vx, wx);
  double div = (vx - mod) / wx;
  if (mod != 0.0) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  double fd;
  if (div != 0.0) {
    fd = std::floor(div);
    if (div - fd > 0.5) fd += 1.0;
  } else {
    fd = std::copysign(0.0, vx / wx);
  }
  *floordiv = fd;
  *mod_out = mod;
}

i128 floor_div_q(const Q &a, const Q &b, const char *what) {
  // floor((a.n/a.d) / (b.n/b.d)) = floor(a.n*b.d / (a.d*b.n))
  if (b.n == 0) fail(std::string(what) + ": division by zero");
  i128 num = a.n * b.d, den = a.d * b.n;
  if (den < 0) {
    num = -num;
    den = -den;
  }
  i128 q = num / den;
  if ((num % den != 0) && (num < 0)) q -= 1;
  return q;
}

// Three-way compare of two non-bool-or-bool values with Python's exact
// int/float comparison. Returns false in *ordered when a NaN is involved.
int compare(const SymValue &x, const SymValue &y, bool *ordered) {
  *ordered = true;
  SymValue a = x, b = y;
  if (a.kind == Kind::Bool) a = SymValue::integer(a.b);
  if (b.kind == Kind::Bool) b = SymValue::integer(b.b);
  if (is_exact(a) && is_exact(b)) {
    Q p = to_q(a), q = to_q(b);
    i128 l = p.n * q.d, r = q.n * p.d;  // |values| < 2^126
    return l < r ? -1 : l > r ? 1 : 0;
  }
  if (a.kind == Kind::Float && b.kind == Kind::Float) {
    if (std::isnan(a.f) || std::isnan(b.f)) {
      *ordered = false;
      return 0;
    }
    return a.f < b.f ? -1 : a.f > b.f ? 1 : 0;
  }
  // exact vs float: compare exactly, as Python does for int vs float.
  bool swapped = a.kind == Kind::Float;
  const SymValue &e = swapped ? b : a;
  double d = swapped ? a.f : b.f;
  int r;
  if (std::isnan(d)) {
    *ordered = false;
    return 0;
  }
  if (std::isinf(d)) {
    r = d > 0 ? -1 : 1;
  } else {
    // e = n/den; compare n with d*den using floor(d) and its fractional part.
    Q q = to_q(e);
    double fl = std::floor(d);
    if (std::fabs(fl) >= 1e30) {
      r = fl > 0 ? -1 : 1;
    } else {
      i128 fi = i128(fl);  // exact: |fl| < 1e30 < 2^100
      double frac = d - fl;  // in [0, 1), exact
      // compare q.n/q.d with fi + frac  <=>  q.n - fi*q.d  vs  frac*q.d
      i128 lhs = q.n - fi * q.d;
      if (lhs < 0) r = -1;
      else if (frac == 0.0) r = lhs > 0 ? 1 : 0;
      else if (lhs >= q.d) r = 1;
      else {
        // both sides in [0, q.d): compare lhs/q.d with frac in long double
        long double lq = (long double)lhs / (long double)q.d;
        r = lq < frac ? -1 : lq > frac ? 1 : 0;
      }
    }
  }
  return swapped ? -r : r;
}

SymValue power_exact(const Q &base, int64_t e, const char *what) {
  if (e < 0 && base.n == 0) fail(std::string(what) + ": zero to a negative power");
  uint64_t k = e < 0 ? uint64_t(-(e + 1)) + 1 : uint64_t(e);
  i128 rn = 1, rd = 1, bn = base.n, bd = base.d;
  // Base powers are coprime, so no partial product ever shrinks: one beyond
  // 2^63 means the result overflows. Keeping every factor within 2^63 keeps
  // each product within 2^126, so the 128-bit arithmetic itself never wraps.
  const i128 lim = i128(1) << 63;
  auto check = [&](i128 v) {
    if (v > lim || v < -lim) fail_overflow(what);
  };
  while (k) {
    if (k & 1) {
      rn *= bn;
      rd *= bd;
      check(rn);
      check(rd);
    }
    k >>= 1;
    if (k) {
      if (bn != 0 && bn != 1 && bn != -1) check(bn *= bn); else bn *= bn;
      if (bd != 1) check(bd *= bd);
    }
  }
  Q r = e < 0 ? make_q(rd, rn) : make_q(rn, rd);
  return from_q(r, what);
}

// Exact integer q-th root of v >= 0, or -1 when v is not a perfect power.
int64_t exact_root(int64_t v, int64_t q) {
  if (v < 0 || q <= 0) return -1;
  if (v < 2 || q == 1) return v;
  if (q > 63) return -1;  // c^q >= 2^64 > v for every c >= 2; the loop below would run q times for c <= 1
  int64_t r = int64_t(std::llround(std::pow(double(v), 1.0 / double(q))));
  for (int64_t c = std::max<int64_t>(0, r - 1); c <= r + 1; ++c) {
    i128 p = 1;
    for (int64_t i = 0; i < q && p <= v; ++i) p *= c;
    if (p == v) return c;
  }
  return -1;
}

double checked_float(double v, const char *what) {
  if (std::isnan(v)) fail(std::string(what) + ": math domain error");
  return v;
}

int64_t float_to_int(double v, const char *what) {
  if (!std::isfinite(v)) fail(std::string(what) + ": cannot convert infinity or NaN to an integer");
  if (v >= 9223372036854775808.0 || v < -9223372036854775808.0)
    fail_overflow(what);
  return int64_t(v);
}

double round_half_even(double x) {
  double r = std::floor(x);
  double diff = x - r;
  if (diff > 0.5 || (diff == 0.5 && std::fmod(r, 2.0) != 0.0)) r += 1.0;
  return r;
}

// Python's round(x, n) for floats: correctly rounded, ties to even.
double round_decimal(double x, int64_t n) {
  if (!std::isfinite(x) || x == 0.0) return x;
  if (n > 323) return x;
  if (n < -308) return 0.0 * x;
  char buf[512];
  if (n >= 0) {
    std::snprintf(buf, sizeof buf, "%.*f", int(n), x);
    return std::copysign(std::strtod(buf, nullptr), x);
  }
  std::snprintf(buf, sizeof buf, "%.0e", x);
  int e10 = std::atoi(std::strchr(buf, 'e') + 1);  // decimal exponent of x (after rounding to 1 digit)
  // Exponent of x itself: %.0e may round 9.7e2 up to 1e3; recompute from %.17e.
  std::snprintf(buf, sizeof buf, "%.17e", x);
  e10 = std::atoi(std::strchr(buf, 'e') + 1);
  const int64_t sig = e10 + 1 + n;  // significant digits kept
  if (sig > 0) {
    std::snprintf(buf, sizeof buf, "%.*e", int(sig - 1), x);
    return std::strtod(buf, nullptr);
  }
  if (sig == 0) {
    // |x| in [10^(-n-1), 10^(-n)): rounds to 0 or 10^(-n); a tie goes to 0 (even).
    char half[64];
    std::snprintf(half, sizeof half, "5e%d", int(-n - 1));
    const double h = std::strtod(half, nullptr);
    if (std::fabs(x) > h) {
      std::snprintf(half, sizeof half, "1e%d", int(-n));
      return std::copysign(std::strtod(half, nullptr), x);
    }
  }
  return 0.0 * x;
}



}  // namespace detail
}  // namespace pt2f
