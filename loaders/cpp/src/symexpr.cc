// Symbolic expression evaluation with Python/sympy integer semantics.
#include "pt2f/symexpr.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace pt2f {
namespace {

using Kind = SymValue::Kind;
using i128 = __int128;

[[noreturn]] void fail(const std::string &msg) { throw Error(ErrorKind::Evaluation, msg); }

const char *op_name(pt2format::SymOp op) {
  const char *n = pt2format::EnumNameSymOp(op);
  return (n && *n) ? n : "unknown op";
}

int64_t fit(i128 v, const char *what) {
  if (v > INT64_MAX || v < INT64_MIN)
    fail(std::string(what) + ": integer overflow (this reader evaluates integers in 64 bits)");
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

// Exact rational in 128 bits, reduced, den > 0.
struct Q {
  i128 n, d;
};

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
  const i128 lim = i128(1) << 100;
  auto check = [&](i128 v) {
    if (v > lim || v < -lim) fail(std::string(what) + ": integer overflow (this reader evaluates integers in 64 bits)");
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
    fail(std::string(what) + ": integer overflow (this reader evaluates integers in 64 bits)");
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

int64_t py_int_round(int64_t v, int64_t n, const char *what) {
  if (n >= 0) return v;
  if (n < -19) return 0;
  i128 p = 1;
  for (int64_t i = 0; i < -n; ++i) p *= 10;
  i128 q = v / p, r = v % p;
  if (r < 0) {
    r += p;
    q -= 1;
  }
  // v = q*p + r, 0 <= r < p: round half to even
  if (2 * r > p || (2 * r == p && (q & 1))) q += 1;
  return fit(q * p, what);
}

}  // namespace

// ---------------------------------------------------------------------------
// SymValue

SymValue SymValue::integer(int64_t v) {
  SymValue s;
  s.kind = Kind::Int;
  s.num = v;
  return s;
}

SymValue SymValue::rational(int64_t n, int64_t d) {
  Q q = make_q(n, d);
  SymValue s;
  s.num = fit(q.n, "rational");
  if (q.d == 1) return integer(s.num);
  s.kind = Kind::Rational;
  s.den = fit(q.d, "rational");
  return s;
}

SymValue SymValue::real(double v) {
  SymValue s;
  s.kind = Kind::Float;
  s.f = v;
  return s;
}

SymValue SymValue::boolean(bool v) {
  SymValue s;
  s.kind = Kind::Bool;
  s.b = v;
  return s;
}

bool SymValue::operator==(const SymValue &o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int: return num == o.num;
    case Kind::Rational: return num == o.num && den == o.den;
    case Kind::Float: return (std::isnan(f) && std::isnan(o.f)) || f == o.f;
    case Kind::Bool: return b == o.b;
  }
  return false;
}

std::string SymValue::to_string() const {
  switch (kind) {
    case Kind::Int: return std::to_string(num);
    case Kind::Rational: return std::to_string(num) + "/" + std::to_string(den);
    case Kind::Bool: return b ? "True" : "False";
    case Kind::Float: {
      if (std::isnan(f)) return "nan";
      if (std::isinf(f)) return f > 0 ? "inf" : "-inf";
      char buf[40];
      for (int p = 1; p <= 17; ++p) {
        std::snprintf(buf, sizeof buf, "%.*g", p, f);
        if (std::strtod(buf, nullptr) == f) break;
      }
      std::string out = buf;
      if (out.find_first_of(".e") == std::string::npos) out += ".0";  // 100.0, not 100
      return out;
    }
  }
  return "?";
}

// ---------------------------------------------------------------------------
// Operations

SymValue apply_sym_op(pt2format::SymOp op, const std::vector<SymValue> &a) {
  using O = pt2format::SymOp;
  const char *w = op_name(op);
  switch (op) {
    case O::ADD:
    case O::MUL: {
      arity(a, 1, SIZE_MAX, w);
      bool any_float = false, any_rat = false;
      for (const auto &v : a) {
        need_number(v, w);
        any_float |= v.kind == Kind::Float;
        any_rat |= v.kind == Kind::Rational;
      }
      if (any_float) {
        double r = op == O::ADD ? 0.0 : 1.0;
        bool first = true;
        for (const auto &v : a) {
          const double d = to_double(v);
          r = first ? d : op == O::ADD ? r + d : r * d;
          first = false;
        }
        return SymValue::real(r);
      }
      Q r = to_q(a[0]);
      for (size_t i = 1; i < a.size(); ++i) {
        Q q = to_q(a[i]);
        r = op == O::ADD ? make_q(r.n * q.d + q.n * r.d, r.d * q.d) : make_q(r.n * q.n, r.d * q.d);
        (void)from_q(r, w);  // keep every partial result within 64 bits
      }
      (void)any_rat;
      return from_q(r, w);
    }
    case O::POW: {
      arity(a, 2, 2, w);
      need_number(a[0], w);
      need_number(a[1], w);
      if (is_exact(a[0]) && a[1].kind == Kind::Int) return power_exact(to_q(a[0]), a[1].num, w);
      if (a[0].kind == Kind::Int && a[1].kind == Kind::Rational) {
        const int64_t root = exact_root(a[0].num, a[1].den);
        if (root >= 0) return power_exact(Q{root, 1}, a[1].num, w);
      }
      const double base = to_double(a[0]), ex = to_double(a[1]);
      if (base == 0.0 && ex < 0) fail(std::string(w) + ": zero to a negative power");
      return SymValue::real(checked_float(std::pow(base, ex), w));
    }
    case O::FLOOR_DIV:
    case O::CLEAN_DIV: {
      arity(a, 2, 2, w);
      need_number(a[0], w);
      need_number(a[1], w);
      if (is_exact(a[0]) && is_exact(a[1])) return SymValue::integer(fit(floor_div_q(to_q(a[0]), to_q(a[1]), w), w));
      double fd, md;
      py_float_divmod(to_double(a[0]), to_double(a[1]), &fd, &md);
      return SymValue::real(fd);
    }
    case O::PYTHON_MOD:
    case O::MOD: {
      arity(a, 2, 2, w);
      need_number(a[0], w);
      need_number(a[1], w);
      if (is_exact(a[0]) && is_exact(a[1])) {
        Q x = to_q(a[0]), y = to_q(a[1]);
        i128 q = floor_div_q(x, y, w);
        // x - q*y
        Q r = make_q(x.n * y.d - q * y.n * x.d, x.d * y.d);
        return from_q(r, w);
      }
      double fd, md;
      py_float_divmod(to_double(a[0]), to_double(a[1]), &fd, &md);
      return SymValue::real(md);
    }
    case O::MIN:
    case O::MAX: {
      arity(a, 1, SIZE_MAX, w);
      size_t best = 0;
      for (size_t i = 1; i < a.size(); ++i) {
        bool ordered;
        int c = compare(a[i], a[best], &ordered);
        if (ordered && (op == O::MIN ? c < 0 : c > 0)) best = i;
      }
      return a[best];
    }
    case O::EQ: case O::NE: case O::LT: case O::LE: case O::GT: case O::GE: {
      arity(a, 2, 2, w);
      bool ordered;
      int c = compare(a[0], a[1], &ordered);
      if (!ordered) return SymValue::boolean(op == O::NE);
      switch (op) {
        case O::EQ: return SymValue::boolean(c == 0);
        case O::NE: return SymValue::boolean(c != 0);
        case O::LT: return SymValue::boolean(c < 0);
        case O::LE: return SymValue::boolean(c <= 0);
        case O::GT: return SymValue::boolean(c > 0);
        default: return SymValue::boolean(c >= 0);
      }
    }
    case O::AND:
    case O::OR: {
      arity(a, 1, SIZE_MAX, w);
      bool r = op == O::AND;
      for (const auto &v : a) r = op == O::AND ? (r && need_bool(v, w)) : (r || need_bool(v, w));
      return SymValue::boolean(r);
    }
    case O::NOT:
      arity(a, 1, 1, w);
      return SymValue::boolean(!need_bool(a[0], w));
    case O::POW_BY_NATURAL: {
      arity(a, 2, 2, w);
      const int64_t b = need_int(a[0], w), e = need_int(a[1], w);
      if (e < 0) fail(std::string(w) + ": negative exponent");
      return power_exact(Q{b, 1}, e, w);
    }
    case O::FLOAT_POW: {
      arity(a, 2, 2, w);
      need_number(a[0], w);
      need_number(a[1], w);
      const double base = to_double(a[0]), ex = to_double(a[1]);
      if (base == 0.0 && ex < 0) fail(std::string(w) + ": zero to a negative power");
      if (base < 0 && std::isfinite(ex) && ex != std::floor(ex))
        fail(std::string(w) + ": negative number to a fractional power");
      return SymValue::real(std::pow(base, ex));
    }
    case O::INT_TRUE_DIV:
    case O::FLOAT_TRUE_DIV: {
      arity(a, 2, 2, w);
      if (op == O::INT_TRUE_DIV) {
        const int64_t x = need_int(a[0], w), y = need_int(a[1], w);
        if (y == 0) fail(std::string(w) + ": division by zero");
        return SymValue::real(ratio_to_double(x, y));
      }
      need_number(a[0], w);
      need_number(a[1], w);
      const double y = to_double(a[1]);
      if (y == 0.0) fail(std::string(w) + ": float division by zero");
      return SymValue::real(to_double(a[0]) / y);
    }
    case O::TRUNC_TO_INT:
    case O::FLOOR_TO_INT:
    case O::CEIL_TO_INT:
    case O::ROUND_TO_INT:
    case O::FLOOR:
    case O::CEILING: {
      arity(a, 1, 1, w);
      need_number(a[0], w);
      if (a[0].kind == Kind::Int) return a[0];
      const bool up = op == O::CEIL_TO_INT || op == O::CEILING;
      if (a[0].kind == Kind::Rational) {
        Q q = to_q(a[0]);
        i128 fl = floor_div_q(q, Q{1, 1}, w);
        if (op == O::TRUNC_TO_INT) return SymValue::integer(fit(q.n < 0 ? fl + 1 : fl, w));
        if (op == O::ROUND_TO_INT) {
          // fraction in (0,1): compare 2*(q - fl) with 1
          i128 twice = 2 * (q.n - fl * q.d);
          i128 r = twice > q.d || (twice == q.d && (fl & 1)) ? fl + 1 : fl;
          return SymValue::integer(fit(r, w));
        }
        return SymValue::integer(fit(up ? fl + 1 : fl, w));
      }
      const double x = a[0].f;
      double r = op == O::TRUNC_TO_INT ? std::trunc(x) : op == O::ROUND_TO_INT ? round_half_even(x)
                 : up ? std::ceil(x) : std::floor(x);
      return SymValue::integer(float_to_int(r, w));
    }
    case O::TRUNC_TO_FLOAT:
      arity(a, 1, 1, w);
      need_number(a[0], w);
      return SymValue::real(std::trunc(to_double(a[0])));
    case O::ROUND_DECIMAL: {
      arity(a, 2, 2, w);
      need_number(a[0], w);
      const int64_t n = need_int(a[1], w);
      if (a[0].kind == Kind::Int) return SymValue::integer(py_int_round(a[0].num, n, w));
      return SymValue::real(round_decimal(to_double(a[0]), n));
    }
    case O::TO_FLOAT:
      arity(a, 1, 1, w);
      need_number(a[0], w);
      return SymValue::real(to_double(a[0]));
    case O::IDENTITY:
      arity(a, 1, 1, w);
      return a[0];
    case O::ABS:
      arity(a, 1, 1, w);
      need_number(a[0], w);
      if (a[0].kind == Kind::Float) return SymValue::real(std::fabs(a[0].f));
      if (a[0].kind == Kind::Int) return SymValue::integer(fit(a[0].num < 0 ? -i128(a[0].num) : i128(a[0].num), w));
      return SymValue::rational(a[0].num < 0 ? -a[0].num : a[0].num, a[0].den);
    case O::BITWISE_AND:
    case O::BITWISE_OR:
    case O::BITWISE_XOR: {
      arity(a, 2, 2, w);
      if (a[0].kind == Kind::Bool && a[1].kind == Kind::Bool) {
        const bool x = a[0].b, y = a[1].b;
        return SymValue::boolean(op == O::BITWISE_AND ? (x && y) : op == O::BITWISE_OR ? (x || y) : (x != y));
      }
      auto as_int = [&](const SymValue &v) { return v.kind == Kind::Bool ? int64_t(v.b) : need_int(v, w); };
      const int64_t x = as_int(a[0]), y = as_int(a[1]);
      return SymValue::integer(op == O::BITWISE_AND ? (x & y) : op == O::BITWISE_OR ? (x | y) : (x ^ y));
    }
    case O::LOG2: {
      arity(a, 1, 1, w);
      const int64_t x = need_int(a[0], w);
      if (x <= 0) fail(std::string(w) + ": math domain error (argument must be positive)");
      return SymValue::integer(63 - __builtin_clzll(uint64_t(x)));
    }
    case O::SQRT:
    case O::EXP:
    case O::LOG: {
      arity(a, 1, 1, w);
      need_number(a[0], w);
      const double x = to_double(a[0]);
      if (op == O::SQRT) {
        if (x < 0) fail(std::string(w) + ": math domain error");
        return SymValue::real(std::sqrt(x));
      }
      if (op == O::LOG) {
        if (x <= 0) fail(std::string(w) + ": math domain error");
        return SymValue::real(std::log(x));
      }
      const double r = std::exp(x);
      if (std::isinf(r) && std::isfinite(x)) fail(std::string(w) + ": math range error");
      return SymValue::real(r);
    }
    case O::PIECEWISE: {
      if (a.empty() || a.size() % 2) fail(std::string(w) + ": arguments must be (value, condition) pairs");
      for (size_t i = 0; i < a.size(); i += 2)
        if (need_bool(a[i + 1], w)) return a[i];
      fail(std::string(w) + ": no condition holds");
    }
    case O::IS_MULTIPLE: {
      arity(a, 2, 2, w);
      const int64_t x = need_int(a[0], w), y = need_int(a[1], w);
      if (y == 0) return SymValue::boolean(x == 0);
      return SymValue::boolean(i128(x) % i128(y) == 0);
    }
    default:
      break;
  }
  fail("operation " + std::to_string(int(op)) + " is unspecified or unknown to this reader");
}

// ---------------------------------------------------------------------------
// SymEvaluator

SymEvaluator::SymEvaluator(const pt2format::Program *program) : program_(program) {
  n_ = program->sym_exprs() ? program->sym_exprs()->size() : 0;
  const uint32_t ns = program->symbols() ? program->symbols()->size() : 0;
  symbols_.resize(ns);
  bound_.assign(ns, false);
  slots_.resize(n_);
}

void SymEvaluator::set(uint32_t i, const SymValue &v) {
  if (i >= symbols_.size())
    throw Error(ErrorKind::Evaluation, "no such symbol",
                {"", "", {}, "symbols", "< " + std::to_string(symbols_.size()), std::to_string(i)});
  symbols_[i] = v;
  bound_[i] = true;
  slots_.assign(n_, Slot{});
}

void SymEvaluator::set(const std::string &name, const SymValue &v) {
  const auto *syms = program_->symbols();
  for (uint32_t i = 0; syms && i < syms->size(); ++i)
    if (syms->Get(i)->name() && syms->Get(i)->name()->str() == name) return set(i, v);
  throw Error(ErrorKind::Evaluation, "no symbol named '" + name + "'");
}

void SymEvaluator::bind_hints() {
  const auto *syms = program_->symbols();
  for (uint32_t i = 0; syms && i < syms->size(); ++i)
    if (syms->Get(i)->has_hint()) set(i, SymValue::integer(syms->Get(i)->hint()));
}

void SymEvaluator::compute(uint32_t index) {
  // Iterative post-order walk: children first, each node once.
  std::vector<std::pair<uint32_t, bool>> stack{{index, false}};
  const auto *pool = program_->sym_exprs();
  while (!stack.empty()) {
    auto [i, expanded] = stack.back();
    stack.pop_back();
    Slot &slot = slots_[i];
    if (slot.state != Slot::Unknown) continue;
    const auto *e = pool->Get(i);
    if (e->kind() == pt2format::SymExprKind::APPLY && !expanded) {
      stack.push_back({i, true});
      const auto *args = e->args();
      for (uint32_t k = 0; args && k < args->size(); ++k) {
        const uint32_t c = args->Get(k);
        if (c < i && slots_[c].state == Slot::Unknown) stack.push_back({c, false});
      }
      continue;
    }
    try {
      using K = pt2format::SymExprKind;
      switch (e->kind()) {
        case K::SYMBOL:
          if (e->symbol() >= symbols_.size())
            fail("symbol index " + std::to_string(e->symbol()) + " out of range (" +
                 std::to_string(symbols_.size()) + " symbols)");
          if (!bound_[e->symbol()]) {
            const auto *s = program_->symbols()->Get(e->symbol());
            fail("symbol '" + (s->name() ? s->name()->str() : std::string("?")) + "' has no value");
          }
          slot.value = symbols_[e->symbol()];
          break;
        case K::INTEGER: slot.value = SymValue::integer(e->int_value()); break;
        case K::RATIONAL:
          if (e->denominator() <= 1) fail("RATIONAL denominator must be greater than 1");
          slot.value = SymValue::rational(e->int_value(), e->denominator());
          break;
        case K::FLOAT: slot.value = SymValue::real(e->float_value()); break;
        case K::BOOLEAN: slot.value = SymValue::boolean(e->bool_value()); break;
#pragma push_macro("INFINITY")
#undef INFINITY
        case K::INFINITY: slot.value = SymValue::real(std::numeric_limits<double>::infinity()); break;
#pragma pop_macro("INFINITY")
        case K::NEGATIVE_INFINITY: slot.value = SymValue::real(-std::numeric_limits<double>::infinity()); break;
        case K::APPLY: {
          const auto *args = e->args();
          const uint32_t na = args ? args->size() : 0;
          for (uint32_t k = 0; k < na; ++k)
            if (args->Get(k) >= i)
              fail("argument " + std::to_string(k) + " refers to node " + std::to_string(args->Get(k)) +
                   ", not an earlier one");
          std::vector<SymValue> vals;
          vals.reserve(na);
          if (e->op() == pt2format::SymOp::PIECEWISE) {
            // Lazy: only the conditions up to the first true one and its value must evaluate.
            if (na == 0 || na % 2) fail("PIECEWISE: arguments must be (value, condition) pairs");
            bool found = false;
            for (uint32_t k = 0; k < na && !found; k += 2) {
              const Slot &cond = slots_[args->Get(k + 1)];
              if (cond.state == Slot::Failed) fail(cond.error);
              if (cond.value.kind != SymValue::Kind::Bool) fail("PIECEWISE: boolean operand expected");
              if (cond.value.b) {
                const Slot &val = slots_[args->Get(k)];
                if (val.state == Slot::Failed) fail(val.error);
                slot.value = val.value;
                found = true;
              }
            }
            if (!found) fail("PIECEWISE: no condition holds");
            break;
          }
          for (uint32_t k = 0; k < na; ++k) {
            const Slot &s = slots_[args->Get(k)];
            if (s.state == Slot::Failed) fail(s.error);
            vals.push_back(s.value);
          }
          slot.value = apply_sym_op(e->op(), vals);
          break;
        }
        default:
          fail("expression kind " + std::to_string(int(e->kind())) + " is unspecified or unknown to this reader");
      }
      slot.state = Slot::Done;
    } catch (const Error &err) {
      slot.state = Slot::Failed;
      // Keep the innermost location: a propagated failure already names its node.
      slot.error = err.detail().rfind("sym_exprs[", 0) == 0 ? err.detail()
                                                             : "sym_exprs[" + std::to_string(i) + "]: " + err.detail();
    }
  }
}

SymValue SymEvaluator::evaluate(uint32_t index) {
  if (index >= n_)
    throw Error(ErrorKind::Evaluation, "expression index out of range",
                {"", "", {}, "sym_exprs", "< " + std::to_string(n_), std::to_string(index)});
  if (slots_[index].state == Slot::Unknown) compute(index);
  const Slot &s = slots_[index];
  if (s.state == Slot::Failed) throw Error(ErrorKind::Evaluation, s.error);
  return s.value;
}

int64_t SymEvaluator::evaluate(const pt2format::SymInt &v) {
  if (v.expr() == -1) return v.value();
  if (v.expr() < 0)
    throw Error(ErrorKind::Evaluation, "SymInt.expr must be -1 or an index",
                {"", "", {}, "expr", ">= -1", std::to_string(v.expr())});
  const SymValue r = evaluate(uint32_t(v.expr()));
  if (r.kind != SymValue::Kind::Int)
    throw Error(ErrorKind::Evaluation, "sym_exprs[" + std::to_string(v.expr()) + "] is not an integer: " + r.to_string());
  return r.num;
}

}  // namespace pt2f
