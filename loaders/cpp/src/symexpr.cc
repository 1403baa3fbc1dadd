// SymEvaluator: iterative, memoised evaluation of a program's sym_exprs pool.
#include <algorithm>
#include <cmath>
#include <limits>

#include "pt2f/symexpr.h"
#include "sym_numeric.h"

namespace pt2f {

using namespace detail;

// ---------------------------------------------------------------------------
// SymEvaluator

SymEvaluator::SymEvaluator(const pt2format::Program *program) : program_(program) {
  n_ = program->sym_exprs() ? program->sym_exprs()->size() : 0;
  const uint32_t ns = program->symbols() ? program->symbols()->size() : 0;
  symbols_.resize(ns);
  bound_.assign(ns, false);
  slots_.resize(n_);
  check_limits();
}

// Structural limits of SPEC.md ("Bounds"), checked once over the whole pool
// before anything is evaluated: the evaluation budget (1 + operand count per
// node), the expanded size and the degree of every expression. All are LimitErrors.
void SymEvaluator::check_limits() {
  const auto *pool = program_->sym_exprs();
  std::vector<uint64_t> degree(n_, 0);
  std::vector<uint64_t> size(n_, 1);  // expanded size; each entry <= kMaxSymExpandedSize, so sums cannot overflow
  uint64_t steps = 0;
  using K = pt2format::SymExprKind;
  using O = pt2format::SymOp;
  for (uint32_t i = 0; i < n_; ++i) {
    const auto *e = pool->Get(i);
    const auto *args = e->args();
    const uint32_t na = args ? args->size() : 0;
    steps += 1 + uint64_t(na);
    if (steps > kMaxSymEvalSteps)
      throw Error(ErrorKind::Limit, "sym_exprs[" + std::to_string(i) + "]: symbolic evaluation budget exhausted",
                  {"", "", {}, "sym_exprs", "<= " + std::to_string(kMaxSymEvalSteps) + " steps", std::to_string(steps)});
    if (e->kind() == K::SYMBOL) {
      degree[i] = 1;
      continue;
    }
    if (e->kind() != K::APPLY) continue;
    bool ok = true;
    for (uint32_t k = 0; k < na; ++k) ok = ok && args->Get(k) < i;
    if (!ok) continue;  // evaluation reports it
    uint64_t t = 1;
    for (uint32_t k = 0; k < na; ++k) t += size[args->Get(k)];
    if (t > kMaxSymExpandedSize)
      throw Error(ErrorKind::Limit, "symbolic expression expanded size is too large",
                  {"", "", {}, "sym_exprs[" + std::to_string(i) + "]", "<= " + std::to_string(kMaxSymExpandedSize),
                   "> " + std::to_string(kMaxSymExpandedSize)});
    size[i] = t;
    uint64_t d = 0;
    const O op = e->op();
    if (op == O::MUL) {
      for (uint32_t k = 0; k < na; ++k) d += degree[args->Get(k)];
    } else if ((op == O::POW || op == O::POW_BY_NATURAL) && na == 2) {
      const uint64_t base = degree[args->Get(0)];
      const auto *ex = pool->Get(args->Get(1));
      if (ex->kind() == K::INTEGER || (ex->kind() == K::RATIONAL && ex->denominator() > 0)) {
        // |p| (or ceil(|p|/q)) in 128 bits: no overflow for any int64 p
        const __int128 p = ex->int_value() < 0 ? -__int128(ex->int_value()) : __int128(ex->int_value());
        const __int128 q = ex->kind() == K::INTEGER ? 1 : ex->denominator();
        const __int128 m = (p + q - 1) / q;
        d = base == 0 ? 0 : (m > __int128(kMaxSymDegree) ? kMaxSymDegree + 1 : uint64_t(m) * base);
      } else {
        d = base + degree[args->Get(1)];
      }
    } else {
      for (uint32_t k = 0; k < na; ++k) d = std::max(d, degree[args->Get(k)]);
    }
    if (d > kMaxSymDegree) d = kMaxSymDegree + 1;  // saturate; reported below
    degree[i] = d;
    if (d > kMaxSymDegree)
      throw Error(ErrorKind::Limit, "sym_exprs[" + std::to_string(i) + "]: symbolic expression degree is too high",
                  {"", "", {}, "sym_exprs", "<= " + std::to_string(kMaxSymDegree), "> " + std::to_string(kMaxSymDegree)});
  }
}

void SymEvaluator::set(uint32_t i, const SymValue &v) {
  if (i >= symbols_.size())
    throw Error(ErrorKind::Evaluation, "no such symbol",
                {"", "", {}, "symbols", "< " + std::to_string(symbols_.size()), std::to_string(i)});
  symbols_[i] = v;
  bound_[i] = true;
  if (computed_) slots_.assign(n_, Slot{});  // values may depend on the symbol
  computed_ = false;
}

void SymEvaluator::unset(uint32_t i) {
  if (i >= symbols_.size() || !bound_[i]) return;
  bound_[i] = false;
  if (computed_) slots_.assign(n_, Slot{});
  computed_ = false;
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
    if (syms->Get(i)->has_hint())
      set(i, syms->Get(i)->kind() == pt2format::SymbolKind::FLOAT ? SymValue::real(syms->Get(i)->float_hint())
                                                                  : SymValue::integer(syms->Get(i)->hint()));
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
        case K::POSITIVE_INFINITY: slot.value = SymValue::real(std::numeric_limits<double>::infinity()); break;
        case K::NEGATIVE_INFINITY: slot.value = SymValue::real(-std::numeric_limits<double>::infinity()); break;
        case K::INT_POSITIVE_INFINITY:
        case K::INT_NEGATIVE_INFINITY: fail("integer infinity is a bound, not a number");
        case K::APPLY: {
          const auto *args = e->args();
          const uint32_t na = args ? args->size() : 0;
          for (uint32_t k = 0; k < na; ++k)
            if (args->Get(k) >= i)
              fail("argument " + std::to_string(k) + " refers to node " + std::to_string(args->Get(k)) +
                   ", not an earlier one");
          std::vector<SymValue> vals;
          vals.reserve(na);
          if (e->op() == pt2format::SymOp::WHERE && na == 3) {
            // Lazy, as sympy is: the branch not taken may fail.
            const Slot &cond = slots_[args->Get(0)];
            if (cond.state == Slot::Failed) rethrow(cond);
            if (cond.value.kind != SymValue::Kind::Bool) fail("WHERE: boolean operand expected");
            const Slot &val = slots_[args->Get(cond.value.b ? 1 : 2)];
            if (val.state == Slot::Failed) rethrow(val);
            slot.value = val.value;
            break;
          }
          if (e->op() == pt2format::SymOp::PIECEWISE) {
            // Lazy: only the conditions up to the first true one and its value must evaluate.
            if (na == 0 || na % 2) fail("PIECEWISE: arguments must be (value, condition) pairs");
            bool found = false;
            for (uint32_t k = 0; k < na && !found; k += 2) {
              const Slot &cond = slots_[args->Get(k + 1)];
              if (cond.state == Slot::Failed) rethrow(cond);
              if (cond.value.kind != SymValue::Kind::Bool) fail("PIECEWISE: boolean operand expected");
              if (cond.value.b) {
                const Slot &val = slots_[args->Get(k)];
                if (val.state == Slot::Failed) rethrow(val);
                slot.value = val.value;
                found = true;
              }
            }
            if (!found) fail("PIECEWISE: no condition holds");
            break;
          }
          for (uint32_t k = 0; k < na; ++k) {
            const Slot &s = slots_[args->Get(k)];
            if (s.state == Slot::Failed) rethrow(s);
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
      slot.kind = err.kind();
      // Keep the innermost location: a propagated failure already names its node.
      slot.error = err.detail().rfind("sym_exprs[", 0) == 0 ? err.detail()
                                                             : "sym_exprs[" + std::to_string(i) + "]: " + err.detail();
    }
  }
}

void SymEvaluator::rethrow(const Slot &failed) { throw Error(failed.kind, failed.error); }

SymValue SymEvaluator::evaluate(uint32_t index) {
  if (index >= n_)
    throw Error(ErrorKind::Evaluation, "expression index out of range",
                {"", "", {}, "sym_exprs", "< " + std::to_string(n_), std::to_string(index)});
  if (slots_[index].state == Slot::Unknown) {
    computed_ = true;
    compute(index);
  }
  const Slot &s = slots_[index];
  if (s.state == Slot::Failed) throw Error(s.kind, s.error);
  return s.value;
}

bool SymEvaluator::guard_holds(uint32_t index) {
  SymValue v;
  bool failed = false;
  try {
    v = evaluate(index);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::Evaluation) throw;
    failed = true;
  }
  // compute() filled every node the guard reaches (children before parents); an overflow anywhere rejects.
  std::vector<uint32_t> stack{index};
  std::vector<bool> seen(n_, false);
  seen[index] = true;
  const auto *pool = program_->sym_exprs();
  while (!stack.empty()) {
    const uint32_t i = stack.back();
    stack.pop_back();
    if (slots_[i].state == Slot::Failed && slots_[i].kind == ErrorKind::Limit) rethrow(slots_[i]);
    const auto *args = pool->Get(i)->args();
    for (uint32_t k = 0; args && k < args->size(); ++k) {
      const uint32_t c = args->Get(k);
      if (c < i && !seen[c]) {
        seen[c] = true;
        stack.push_back(c);
      }
    }
  }
  return !failed && v.kind == SymValue::Kind::Bool && v.b;
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
