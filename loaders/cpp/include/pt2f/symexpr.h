// pt2f/symexpr.h: evaluate the structured symbolic expressions of a program.
//
// Program.sym_exprs is a pool in which every APPLY node refers only to nodes
// before it. SymEvaluator evaluates one node (and the nodes it needs) given
// values for the program's symbols, iteratively (no recursion, so a hostile
// million-node chain cannot overflow the stack) and with memoisation.
// Integers follow Python semantics (floor division and modulus round toward
// minus infinity) in 64 bits: a result that does not fit is a Limit error
// rather than a wrong number, as SPEC.md requires of every reader. Rationals
// stay exact, as in sympy. The constructor checks the pool's structural
// limits (degree, evaluation budget) and throws a Limit error.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pt2f/error.h"
#include "pt2f/generated.h"
#include "pt2format_limits.h"

namespace pt2f {

/// Bounds of SPEC.md §11.6, from the schema's pt2f_limits (pt2format_limits.h), as every reader's.
constexpr uint64_t kMaxSymDegree = limits::kMaxSymDegree;
constexpr uint64_t kMaxSymEvalSteps = limits::kMaxSymEvalSteps;
// Largest expanded size of an expression: its node count as a tree, a shared operand counted at each use.
constexpr uint64_t kMaxSymExpandedSize = limits::kMaxSymExpandedSize;
// The file's budget on expanded size (SPEC.md §11.6): every pool node and every use of one (a SymInt, SymFloat or
// SymBool whose expr is not -1, a range constraint, an input guard) may be kSymFreeSize large for free; the excess,
// summed over the whole file, is at most kMaxSymFileExcess.
constexpr uint64_t kSymFreeSize = limits::kSymFreeSize;
constexpr uint64_t kMaxSymFileExcess = limits::kMaxSymFileExcess;

/// A value of a symbolic expression.
struct SymValue {
  enum class Kind { Int, Rational, Float, Bool };
  Kind kind = Kind::Int;
  int64_t num = 0;   // Int: the value; Rational: numerator
  int64_t den = 1;   // Rational: denominator > 1, reduced
  double f = 0.0;    // Float
  bool b = false;    // Bool

  static SymValue integer(int64_t v);
  /// n/d reduced; an Int when d divides n. Throws on d == 0.
  static SymValue rational(int64_t n, int64_t d);
  static SymValue real(double v);
  static SymValue boolean(bool v);

  bool operator==(const SymValue &o) const;
  /// "7", "-1/2", "2.5" (shortest round-trip), "True"/"False" (Python spelling).
  std::string to_string() const;
};

/// Evaluates nodes of one program's sym_exprs pool.
class SymEvaluator {
 public:
  explicit SymEvaluator(const pt2format::Program *program);

  /// Bind Program.symbols[index] (or the symbol called `name`) to a value.
  void set(uint32_t symbol_index, const SymValue &value);
  void set(const std::string &name, const SymValue &value);
  /// Forget Program.symbols[index]'s value: it is unknown again.
  void unset(uint32_t symbol_index);
  /// Bind every symbol that has a hint (the traced example value) to it.
  void bind_hints();

  /// Value of sym_exprs[index]. Throws pt2f::Error (kind Evaluation) naming
  /// the node, e.g. "sym_exprs[12]: FLOOR_DIV: division by zero".
  SymValue evaluate(uint32_t index);
  /// Whether input guard `index` holds (SPEC §11.7): its value is exactly true. Every node the guard
  /// reaches is evaluated, as the forward pass of §11.6 does, so a 64-bit overflow in any of them (even
  /// in a WHERE branch not taken) throws a Limit error, as in every reader; an evaluation error of the
  /// guard itself is false.
  bool guard_holds(uint32_t index);
  /// A SymInt: its concrete value, or its expression's value as an integer.
  int64_t evaluate(const pt2format::SymInt &v);

  size_t pool_size() const { return n_; }

 private:
  struct Slot {
    enum State : uint8_t { Unknown, Done, Failed } state = Unknown;
    SymValue value;
    std::string error;
    ErrorKind kind = ErrorKind::Evaluation;  // Limit for 64-bit overflow
  };
  void compute(uint32_t index);
  void check_limits();
  [[noreturn]] static void rethrow(const Slot &failed);

  const pt2format::Program *program_;
  uint32_t n_ = 0;
  std::vector<SymValue> symbols_;
  std::vector<bool> bound_;
  std::vector<Slot> slots_;
  bool computed_ = false;  // any slot filled since the last set()
};

/// Apply one operation to already evaluated operands (exposed for tests).
/// Throws pt2f::Error (kind Evaluation) with a short reason.
SymValue apply_sym_op(pt2format::SymOp op, const std::vector<SymValue> &args);

}  // namespace pt2f
