// Validator, the symbolic pool (SPEC.md §11): rows refer to earlier rows only (acyclic), a known op with
// its arity, finite float bounds; the pool evaluates within §11.6's bounds and the file's budget.
#include <cmath>
#include <string>

#include "pt2f/symexpr.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {

bool Validator::op_known(uint8_t op) {
  for (SymOp v : EnumValuesSymOp())
    if (uint8_t(v) == op) return op != 0;
  return false;
}

// (min, max, even) operand counts, as pt2format._symeval.OP_ARITY.
void Validator::arity(SymOp op, uint32_t *lo, uint32_t *hi, bool *even) {
  static const char *const two[] = {"POW", "FLOOR_DIV", "PYTHON_MOD", "MOD", "CLEAN_DIV", "EQ", "NE", "LT", "LE",
                                    "GT", "GE", "POW_BY_NATURAL", "FLOAT_POW", "INT_TRUE_DIV", "FLOAT_TRUE_DIV",
                                    "ROUND_DECIMAL", "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "IS_MULTIPLE",
                                    nullptr};
  static const char *const one[] = {"NOT", "TRUNC_TO_INT", "TRUNC_TO_FLOAT", "FLOOR_TO_INT", "CEIL_TO_INT",
                                    "ROUND_TO_INT", "TO_FLOAT", "IDENTITY", "ABS", "CEILING", "FLOOR", "LOG2",
                                    "SQRT", "EXP", "LOG", "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "SINH",
                                    "COSH", "TANH", "ASINH", nullptr};
  const std::string name = EnumNameSymOp(op);
  *lo = 1;
  *hi = UINT32_MAX;
  *even = false;
  for (const char *const *n = two; *n; ++n)
    if (name == *n) *lo = *hi = 2;
  for (const char *const *n = one; *n; ++n)
    if (name == *n) *lo = *hi = 1;
  if (name == "WHERE" || name == "MODULAR_INDEXING") *lo = *hi = 3;
  if (name == "PIECEWISE" || name == "IS_NON_OVERLAPPING_AND_DENSE") {
    *lo = 2;
    *even = true;
  }
}

// Symbol names unique: pt2f_keys, generated.
void Validator::check_symbols(const Program *p, const std::string &path) {
  for (uint32_t i = 0; i < n_exprs_; ++i) {
    const auto *e = p->sym_exprs()->Get(i);
    const std::string ep = path + ".sym_exprs[" + num(i) + "]";
    // kind declared and not UNSPECIFIED: pt2f_value, generated
    if (e->kind() == SymExprKind::SYMBOL) {
      if (e->symbol() >= n_symbols_)
        invalid("symbol index out of range", ep + ".symbol", "< " + num(n_symbols_), num(e->symbol()));
    } else if (e->kind() == SymExprKind::RATIONAL) {
      if (e->denominator() <= 1)
        invalid("rational denominator must be > 1", ep + ".denominator", "", snum(e->denominator()));
    } else if (e->kind() == SymExprKind::APPLY) {
      if (!op_known(uint8_t(e->op()))) invalid("APPLY needs a known op", ep + ".op", "", num(uint8_t(e->op())));
      const uint32_t n = len(e->args());
      if (n == 0) invalid("APPLY needs arguments", ep + ".args");
      for (uint32_t j = 0; j < n; ++j)
        if (e->args()->Get(j) >= i)
          invalid("argument must refer to an earlier expression (the pool is acyclic)",
                  ep + ".args[" + num(j) + "]", "< " + num(i), num(e->args()->Get(j)));
      if (e->op() == SymOp::IS_MULTIPLE) invalid("IS_MULTIPLE is reserved and never written", ep + ".op");
      uint32_t lo, hi;
      bool even;
      arity(e->op(), &lo, &hi, &even);
      if (n < lo || n > hi || (even && n % 2)) invalid("wrong number of operands", ep + ".args", "", num(n));
    }
  }
  // Float ranges and hints are finite (hint not NaN); then the pool evaluates within the bounds of §11.6.
  for (uint32_t i = 0; i < n_symbols_; ++i) {
    const auto *sym = p->symbols()->Get(i);
    if (sym->kind() != SymbolKind::FLOAT) continue;
    const std::string sp = path + ".symbols[" + num(i) + "]";
    if (const auto *r = sym->range()) {
      if (r->has_lower() && !std::isfinite(r->float_lower()))
        invalid("a present float bound must be finite", sp + ".range.float_lower");
      if (r->has_upper() && !std::isfinite(r->float_upper()))
        invalid("a present float bound must be finite", sp + ".range.float_upper");
    }
    if (sym->has_hint() && std::isnan(sym->float_hint())) invalid("float hint is NaN", sp + ".float_hint");
  }
  try {
    SymEvaluator ev(p);
    ev.bind_hints();
    for (uint32_t i = 0; i < n_exprs_; ++i) {
      try {
        ev.evaluate(i);
      } catch (const Error &e) {
        if (e.kind() == ErrorKind::Limit) throw;  // a domain error stays a value of the node (SPEC.md §11)
      }
    }
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::Limit) throw;
    throw e.with_context("", "program", path);
  }
  // The file's budget (SPEC.md §11.6): every node is charged, then every use (check_sym, use).
  const auto *pool = p->sym_exprs();
  sym_sizes_.assign(n_exprs_, 1);
  for (uint32_t i = 0; i < n_exprs_; ++i) {
    const auto *e = pool->Get(i);
    if (e->kind() == SymExprKind::APPLY && e->args()) {
      uint64_t t = 1;
      for (uint32_t k = 0; k < e->args()->size(); ++k) t += sym_sizes_[e->args()->Get(k)];  // each <= bound
      sym_sizes_[i] = t;
    }
    charge(sym_sizes_[i], path + ".sym_exprs[" + num(i) + "]");
  }
}

// Counts one pool node or use of expanded size `size` against the file's budget (SPEC.md §11.6).
void Validator::charge(uint64_t size, const std::string &path) {
  if (size <= kSymFreeSize) return;
  sym_spent_ += size - kSymFreeSize;
  if (sym_spent_ > kMaxSymFileExcess)
    fail(ErrorKind::Limit, "symbolic expressions of the file are too large in total", path,
         "<= " + num(kMaxSymFileExcess) + " of expanded size beyond " + num(kSymFreeSize) + " per pool node and use",
         "> " + num(kMaxSymFileExcess));
}

void Validator::use(uint32_t expr, const std::string &path) {
  if (expr < sym_sizes_.size() && sym_sizes_[expr] > kSymFreeSize) charge(sym_sizes_[expr], path);
}

// Charges a SymInt/SymFloat/SymBool use (its index already checked by the field rules) to the budget.
void Validator::check_sym(int32_t expr, const std::string &path) {
  if (expr >= 0) use(uint32_t(expr), path + ".expr");
}

}  // namespace validation
}  // namespace pt2f
