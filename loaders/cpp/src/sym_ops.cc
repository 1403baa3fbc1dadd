// SymValue and apply_sym_op: the semantics of every SymOp (Python/sympy rules).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "pt2f/symexpr.h"
#include "sym_numeric.h"

namespace pt2f {

using namespace detail;

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
      // Every operand must be a boolean (SPEC §11.4), so no short cut: OR(true, 6) is an error.
      size_t n_true = 0;
      for (const auto &v : a) n_true += need_bool(v, w) ? 1 : 0;
      return SymValue::boolean(op == O::AND ? n_true == a.size() : n_true > 0);
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
      // A float even for an integer operand: torch's RoundDecimal is round(float(x), n).
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
    case O::LOG2:
    case O::SQRT:
    case O::EXP:
    case O::LOG:
    case O::SIN:
    case O::COS:
    case O::TAN:
    case O::ASIN:
    case O::ACOS:
    case O::ATAN:
    case O::SINH:
    case O::COSH:
    case O::TANH:
    case O::ASINH: {
      // Python's math module on float(a): a domain error raises, as does an
      // overflow of exp/sinh/cosh (math range error).
      arity(a, 1, 1, w);
      need_number(a[0], w);
      const double x = to_double(a[0]);
      const std::string dom = std::string(w) + ": math domain error";
      double r = 0;
      switch (op) {
        case O::LOG2: if (x <= 0) fail(dom); r = std::log2(x); break;
        case O::LOG: if (x <= 0) fail(dom); r = std::log(x); break;
        case O::SQRT: if (x < 0) fail(dom); r = std::sqrt(x); break;
        case O::EXP: r = std::exp(x); break;
        case O::SIN: if (std::isinf(x)) fail(dom); r = std::sin(x); break;
        case O::COS: if (std::isinf(x)) fail(dom); r = std::cos(x); break;
        case O::TAN: if (std::isinf(x)) fail(dom); r = std::tan(x); break;
        case O::ASIN: if (x < -1 || x > 1) fail(dom); r = std::asin(x); break;
        case O::ACOS: if (x < -1 || x > 1) fail(dom); r = std::acos(x); break;
        case O::ATAN: r = std::atan(x); break;
        case O::SINH: r = std::sinh(x); break;
        case O::COSH: r = std::cosh(x); break;
        case O::TANH: r = std::tanh(x); break;
        default: r = std::asinh(x); break;
      }
      // An overflow of exp/sinh/cosh is +-inf: torch falls back to sympy there.
      return SymValue::real(r);
    }
    case O::WHERE:
      arity(a, 3, 3, w);
      return need_bool(a[0], w) ? a[1] : a[2];
    case O::MODULAR_INDEXING: {
      arity(a, 3, 3, w);
      const int64_t x = need_int(a[0], w), d = need_int(a[1], w), m = need_int(a[2], w);
      if (d == 0 || m == 0) fail(std::string(w) + ": division by zero");
      const i128 q = floor_div_q(Q{x, 1}, Q{d, 1}, w);
      i128 r = q % m;
      if (r != 0 && ((r < 0) != (m < 0))) r += m;
      return SymValue::integer(fit(r, w));
    }
    case O::IS_NON_OVERLAPPING_AND_DENSE: {
      if (a.empty() || a.size() % 2) fail(std::string(w) + ": needs sizes and strides of equal length");
      const size_t n = a.size() / 2;
      std::vector<std::pair<int64_t, int64_t>> ss;  // (stride, size), stable by stride as torch sorts
      for (size_t i = 0; i < n; ++i) ss.push_back({need_int(a[n + i], w), need_int(a[i], w)});
      if (n == 1) return SymValue::integer(ss[0].first == 1 || ss[0].second < 2);
      std::stable_sort(ss.begin(), ss.end(), [](const auto &x, const auto &y) { return x.first < y.first; });
      i128 expected = 1;
      for (const auto &p : ss) {
        if (p.second == 1) continue;
        if (p.first != expected) return SymValue::integer(0);
        expected = fit(expected * p.second, w);
      }
      return SymValue::integer(1);
    }
    case O::PIECEWISE: {
      if (a.empty() || a.size() % 2) fail(std::string(w) + ": arguments must be (value, condition) pairs");
      for (size_t i = 0; i < a.size(); i += 2)
        if (need_bool(a[i + 1], w)) return a[i];
      fail(std::string(w) + ": no condition holds");
    }
    case O::IS_MULTIPLE:
      fail(std::string(w) + ": reserved, never written");
    default:
      break;
  }
  fail("operation " + std::to_string(int(op)) + " is unspecified or unknown to this reader");
}

}  // namespace pt2f
