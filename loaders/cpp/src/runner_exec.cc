// Interpret a compiled plan: operators called boxed through the dispatcher, Python builtins on scalars with
// Python's semantics, and the higher-order operators cond, while_loop, map_impl, scan, invoke_subgraph,
// wrap_with_set_grad_enabled and wrap_with_autocast, each as torch's own dense implementation runs it.
#include <ATen/EmptyTensor.h>
#include <ATen/autocast_mode.h>
#include <c10/core/GradMode.h>

#include <cmath>
#include <limits>

#include "runner_plan.h"

namespace pt2format {
namespace detail {
namespace {

c10::IValue eval(const ArgPlan &a, const std::vector<c10::IValue> &env) {
  switch (a.op) {
    case ArgPlan::kConst: return a.constant;
    case ArgPlan::kSlot: return a.wrap_scalar ? wrapped_number(env[a.slot]) : env[a.slot];
    case ArgPlan::kTensorList: {
      c10::List<at::Tensor> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(env[s].toTensor());
      return l;
    }
    case ArgPlan::kOptTensorList: {
      c10::List<std::optional<at::Tensor>> l;
      l.reserve(a.slots.size());
      for (int s : a.slots) l.push_back(s < 0 || env[s].isNone() ? std::optional<at::Tensor>() : env[s].toTensor());
      return l;
    }
    case ArgPlan::kIntList: {
      c10::List<int64_t> l;
      l.reserve(a.slots.size());
      for (size_t i = 0; i < a.slots.size(); ++i) l.push_back(a.slots[i] < 0 ? a.consts[i].toInt() : env[a.slots[i]].toInt());
      return l;
    }
    case ArgPlan::kDoubleList: {
      c10::List<double> l;
      for (size_t i = 0; i < a.slots.size(); ++i) {
        const c10::IValue &v = a.slots[i] < 0 ? a.consts[i] : env[a.slots[i]];
        l.push_back(v.isInt() ? double(v.toInt()) : v.toDouble());
      }
      return l;
    }
    case ArgPlan::kBoolList: {
      c10::List<bool> l;
      for (size_t i = 0; i < a.slots.size(); ++i) l.push_back(a.slots[i] < 0 ? a.consts[i].toBool() : env[a.slots[i]].toBool());
      return l;
    }
    case ArgPlan::kMixed: {
      std::vector<c10::IValue> items;
      for (const ArgPlan &i : a.items) items.push_back(eval(i, env));
      return c10::ivalue::Tuple::create(std::move(items));
    }
    case ArgPlan::kGraph: return c10::IValue(int64_t(a.graph));
  }
  return c10::IValue();
}

/// Append the leaves of a (possibly nested) list or tuple to `out`.
void flatten(const c10::IValue &v, std::vector<c10::IValue> &out) {
  if (v.isTuple()) {
    for (const auto &e : v.toTupleRef().elements()) flatten(e, out);
  } else if (v.isList()) {
    for (const auto &e : v.toListRef()) flatten(e, out);
  } else {
    out.push_back(v);
  }
}

void store(const OutBind &b, c10::IValue v, std::vector<c10::IValue> &env, const std::string &where) {
  switch (b.op) {
    case OutBind::kIgnore: return;
    case OutBind::kSlot: env[b.slot] = std::move(v); return;
    case OutBind::kList: {
      std::vector<c10::IValue> items;
      flatten(v, items);
      if (items.size() != b.slots.size())
        fail(RunnerErrorKind::Execution, where + ": returned " + std::to_string(items.size()) + " values, the graph names " +
                                             std::to_string(b.slots.size()));
      for (size_t i = 0; i < items.size(); ++i)
        if (b.slots[i] >= 0) env[b.slots[i]] = std::move(items[i]);
      return;
    }
  }
}

/// Bind the values a higher-order operator or builtin returned to the node's outputs.
void store_all(const Step &s, std::vector<c10::IValue> results, std::vector<c10::IValue> &env) {
  if (s.outs.size() == 1 && s.outs[0].op == OutBind::kList) {
    std::vector<c10::IValue> flat;
    for (auto &r : results) flatten(r, flat);
    OutBind b = s.outs[0];
    if (flat.size() != b.slots.size())
      fail(RunnerErrorKind::Execution, s.where + ": returned " + std::to_string(flat.size()) + " values, the graph names " +
                                           std::to_string(b.slots.size()));
    for (size_t i = 0; i < flat.size(); ++i)
      if (b.slots[i] >= 0) env[b.slots[i]] = std::move(flat[i]);
    return;
  }
  if (results.size() < s.outs.size())
    fail(RunnerErrorKind::Execution, s.where + ": returned " + std::to_string(results.size()) + " values, the graph names " +
                                         std::to_string(s.outs.size()));
  for (size_t i = 0; i < s.outs.size(); ++i) store(s.outs[i], std::move(results[i]), env, s.where);
}

// ---------------------------------------------------------------------------
// Builtins, with Python's semantics on int, float and bool

struct Num {
  bool is_int;
  int64_t i;
  double d;
  double f() const { return is_int ? double(i) : d; }
};

Num num(const c10::IValue &v, const std::string &where) {
  if (v.isInt()) return {true, v.toInt(), 0};
  if (v.isBool()) return {true, v.toBool() ? 1 : 0, 0};
  if (v.isDouble()) return {false, 0, v.toDouble()};
  if (v.isTensor() && v.toTensor().dim() == 0) {
    // A 0-dim tensor in a builtin: Python would call the tensor's operator; not done here.
  }
  fail(RunnerErrorKind::UnsupportedNode, where + ": a builtin on a " + v.tagKind() + " value (only int, float, bool)");
}

// `overflow` must be computed before the call: argument evaluation order is unspecified, so
// `checked(__builtin_add_overflow(x, y, &r), r, w)` may read `r` before the add writes it.
int64_t checked(bool overflow, int64_t v, const std::string &where) {
  if (overflow) fail(RunnerErrorKind::Execution, where + ": integer result does not fit in 64 bits");
  return v;
}

int64_t py_floordiv(int64_t a, int64_t b, const std::string &where) {
  if (b == 0) fail(RunnerErrorKind::Execution, where + ": integer division or modulo by zero");
  if (a == std::numeric_limits<int64_t>::min() && b == -1) fail(RunnerErrorKind::Execution, where + ": integer overflow");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

int64_t py_mod(int64_t a, int64_t b, const std::string &where) {
  if (b == 0) fail(RunnerErrorKind::Execution, where + ": integer division or modulo by zero");
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// CPython's float_divmod.
void py_fdivmod(double vx, double wx, double &div, double &mod, const std::string &where) {
  if (wx == 0.0) fail(RunnerErrorKind::Execution, where + ": float division by zero");
  mod = std::fmod(vx, wx);
  div = (vx - mod) / wx;
  if (mod) {
    if ((wx < 0) != (mod < 0)) {
      mod += wx;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, wx);
  }
  if (div) {
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    div = floordiv;
  } else {
    div = std::copysign(0.0, vx / wx);
  }
}

bool truthy(const c10::IValue &v, const std::string &where) {
  if (v.isBool()) return v.toBool();
  if (v.isInt()) return v.toInt() != 0;
  if (v.isDouble()) return v.toDouble() != 0.0;
  if (v.isTensor()) return v.toTensor().item<bool>();
  fail(RunnerErrorKind::UnsupportedNode, where + ": truth value of a " + v.tagKind() + " value");
}

c10::IValue builtin(const Step &s, const std::vector<c10::IValue> &a) {
  const std::string &w = s.where;
  auto need = [&](size_t n) {
    if (a.size() != n)
      fail(RunnerErrorKind::UnsupportedNode, w + ": takes " + std::to_string(n) + " arguments, the node passes " + std::to_string(a.size()));
  };
  auto arith = [&](auto iop, auto fop) -> c10::IValue {
    need(2);
    Num x = num(a[0], w), y = num(a[1], w);
    if (x.is_int && y.is_int) return c10::IValue(iop(x.i, y.i));
    return c10::IValue(fop(x.f(), y.f()));
  };
  auto compare = [&](auto op) -> c10::IValue {
    need(2);
    Num x = num(a[0], w), y = num(a[1], w);
    if (x.is_int && y.is_int) return c10::IValue(bool(op(x.i, y.i)));
    return c10::IValue(bool(op(x.f(), y.f())));
  };
  switch (s.builtin) {
    case Builtin::Getitem: {
      need(2);
      int64_t i = a[1].toInt();
      std::vector<c10::IValue> items;
      if (a[0].isTuple()) {
        for (const auto &e : a[0].toTupleRef().elements()) items.push_back(e);
      } else if (a[0].isList()) {
        for (const auto &e : a[0].toListRef()) items.push_back(e);
      } else {
        fail(RunnerErrorKind::UnsupportedNode, w + ": getitem on a " + a[0].tagKind() + " value");
      }
      int64_t n = int64_t(items.size());
      if (i < 0) i += n;
      if (i < 0 || i >= n) fail(RunnerErrorKind::Execution, w + ": index out of range");
      return items[size_t(i)];
    }
    case Builtin::Add:
      return arith([&](int64_t x, int64_t y) { int64_t r; const bool o = __builtin_add_overflow(x, y, &r); return checked(o, r, w); },
                   [](double x, double y) { return x + y; });
    case Builtin::Sub:
      return arith([&](int64_t x, int64_t y) { int64_t r; const bool o = __builtin_sub_overflow(x, y, &r); return checked(o, r, w); },
                   [](double x, double y) { return x - y; });
    case Builtin::Mul:
      return arith([&](int64_t x, int64_t y) { int64_t r; const bool o = __builtin_mul_overflow(x, y, &r); return checked(o, r, w); },
                   [](double x, double y) { return x * y; });
    case Builtin::TrueDiv: {
      need(2);
      Num x = num(a[0], w), y = num(a[1], w);
      if (y.f() == 0.0) fail(RunnerErrorKind::Execution, w + ": division by zero");
      return c10::IValue(x.f() / y.f());
    }
    case Builtin::FloorDiv:
      return arith([&](int64_t x, int64_t y) { return py_floordiv(x, y, w); },
                   [&](double x, double y) { double d, m; py_fdivmod(x, y, d, m, w); return d; });
    case Builtin::Mod:
      return arith([&](int64_t x, int64_t y) { return py_mod(x, y, w); },
                   [&](double x, double y) { double d, m; py_fdivmod(x, y, d, m, w); return m; });
    case Builtin::Pow: {
      need(2);
      Num x = num(a[0], w), y = num(a[1], w);
      if (x.is_int && y.is_int && y.i >= 0) {
        // by squaring: a count of y multiplications would spin on 1 ** (2 ** 62). A square that
        // overflows while exponent bits remain means the result overflows too (|base| >= 2).
        int64_t r = 1, base = x.i, e = y.i;
        while (e > 0) {
          if (e & 1) {
            const bool o = __builtin_mul_overflow(r, base, &r);
            checked(o, r, w);
          }
          e >>= 1;
          if (e > 0) {
            const bool o = __builtin_mul_overflow(base, base, &base);
            checked(o, base, w);
          }
        }
        return c10::IValue(r);
      }
      return c10::IValue(std::pow(x.f(), y.f()));
    }
    case Builtin::Neg: {
      need(1);
      Num x = num(a[0], w);
      return x.is_int ? c10::IValue(-checked(x.i == std::numeric_limits<int64_t>::min(), x.i, w)) : c10::IValue(-x.d);
    }
    case Builtin::Pos: {
      need(1);
      Num x = num(a[0], w);
      return x.is_int ? c10::IValue(x.i) : c10::IValue(x.d);
    }
    case Builtin::Abs: {
      need(1);
      Num x = num(a[0], w);
      return x.is_int ? c10::IValue(std::abs(checked(x.i == std::numeric_limits<int64_t>::min(), x.i, w)))
                      : c10::IValue(std::fabs(x.d));
    }
    case Builtin::Eq: return compare([](auto x, auto y) { return x == y; });
    case Builtin::Ne: return compare([](auto x, auto y) { return x != y; });
    case Builtin::Lt: return compare([](auto x, auto y) { return x < y; });
    case Builtin::Le: return compare([](auto x, auto y) { return x <= y; });
    case Builtin::Gt: return compare([](auto x, auto y) { return x > y; });
    case Builtin::Ge: return compare([](auto x, auto y) { return x >= y; });
    case Builtin::And:
    case Builtin::Or: {
      need(2);
      if (a[0].isBool() && a[1].isBool())
        return c10::IValue(s.builtin == Builtin::And ? (a[0].toBool() && a[1].toBool()) : (a[0].toBool() || a[1].toBool()));
      Num x = num(a[0], w), y = num(a[1], w);
      if (!x.is_int || !y.is_int) fail(RunnerErrorKind::Execution, w + ": & and | need ints or bools");
      return c10::IValue(s.builtin == Builtin::And ? (x.i & y.i) : (x.i | y.i));
    }
    case Builtin::Not:
    case Builtin::SymNot: need(1); return c10::IValue(!truthy(a[0], w));
    case Builtin::SymSum: {  // Python's sum() of the list: an int until a float joins
      need(1);
      if (!a[0].isList()) fail(RunnerErrorKind::UnsupportedNode, w + ": sym_sum of a " + a[0].tagKind() + " value");
      Num acc{true, 0, 0};
      for (const auto &v : a[0].toListRef()) {
        Num x = num(v, w);
        if (acc.is_int && x.is_int) {
          const bool o = __builtin_add_overflow(acc.i, x.i, &acc.i);
          checked(o, acc.i, w);
        } else {
          acc = Num{false, 0, acc.f() + x.f()};
        }
      }
      return acc.is_int ? c10::IValue(acc.i) : c10::IValue(acc.d);
    }
    case Builtin::SymMax:
    case Builtin::SymMin: {
      need(2);
      Num x = num(a[0], w), y = num(a[1], w);
      bool first = s.builtin == Builtin::SymMax ? !(y.f() > x.f()) : !(y.f() < x.f());
      if (x.is_int && y.is_int) return c10::IValue(first ? x.i : y.i);
      return c10::IValue(first ? x.f() : y.f());  // torch.sym_max of an int and a float is a float
    }
    case Builtin::SymInt: {
      need(1);
      Num x = num(a[0], w);
      return c10::IValue(x.is_int ? x.i : int64_t(std::trunc(x.d)));
    }
    case Builtin::SymFloat: need(1); return c10::IValue(num(a[0], w).f());
    case Builtin::SymIte: need(3); return truthy(a[0], w) ? a[1] : a[2];
    case Builtin::Floor:
    case Builtin::Ceil:
    case Builtin::Trunc: {
      need(1);
      Num x = num(a[0], w);
      if (x.is_int) return c10::IValue(x.i);
      double r = s.builtin == Builtin::Floor ? std::floor(x.d) : s.builtin == Builtin::Ceil ? std::ceil(x.d) : std::trunc(x.d);
      if (!(std::fabs(r) < 9.2e18)) fail(RunnerErrorKind::Execution, w + ": cannot convert " + std::to_string(x.d) + " to an integer");
      return c10::IValue(int64_t(r));
    }
    case Builtin::Sqrt: {
      need(1);
      double x = num(a[0], w).f();
      if (x < 0) fail(RunnerErrorKind::Execution, w + ": math domain error");
      return c10::IValue(std::sqrt(x));
    }
    case Builtin::SetGradEnabled: need(1); c10::GradMode::set_enabled(truthy(a[0], w)); return c10::IValue();
  }
  fail(RunnerErrorKind::UnsupportedNode, w + ": unknown builtin");
}

// ---------------------------------------------------------------------------
// Higher-order operators

int graph_of(const c10::IValue &v, const std::string &where) {
  // kGraph arguments evaluate to their plan index (an int); anything else is not a subgraph.
  if (!v.isInt()) fail(RunnerErrorKind::UnsupportedNode, where + ": expected a subgraph argument");
  return int(v.toInt());
}

c10::OperatorHandle op_handle(const char *name, const char *overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

std::vector<c10::IValue> call_op(const c10::OperatorHandle &op, std::vector<c10::IValue> stack) {
  op.callBoxed(stack);
  return stack;
}

// torch.autocast's __enter__ and __exit__ (torch/amp/autocast_mode.py), as one scope: the thread's
// autocast state for the device is set for the region and restored after it, even when it throws.
class AutocastRegion {
 public:
  AutocastRegion(at::DeviceType device, at::ScalarType dtype, bool enabled, bool cache_enabled)
      : device_(device),
        prev_cache_(at::autocast::is_autocast_cache_enabled()),
        prev_enabled_(at::autocast::is_autocast_enabled(device)),
        prev_dtype_(at::autocast::get_autocast_dtype(device)) {
    at::autocast::set_autocast_enabled(device, enabled);
    at::autocast::set_autocast_dtype(device, dtype);
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled);
  }
  ~AutocastRegion() {
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, prev_enabled_);
    at::autocast::set_autocast_dtype(device_, prev_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }
  AutocastRegion(const AutocastRegion &) = delete;
  AutocastRegion &operator=(const AutocastRegion &) = delete;

 private:
  at::DeviceType device_;
  bool prev_cache_, prev_enabled_;
  at::ScalarType prev_dtype_;
};

std::vector<c10::IValue> hop(const Program &p, const Step &s, const std::vector<c10::IValue> &a) {
  const std::string &w = s.where;
  auto need_at_least = [&](size_t n) {
    if (a.size() < n) fail(RunnerErrorKind::UnsupportedNode, w + ": too few arguments");
  };
  auto operands = [&](size_t from) {
    std::vector<c10::IValue> out;
    for (size_t i = from; i < a.size(); ++i) flatten(a[i], out);
    return out;
  };
  switch (s.hop) {
    case Hop::Cond: {  // cond(pred, true_fn, false_fn, operands)
      need_at_least(4);
      bool pred = truthy(a[0], w);
      return execute(p, graph_of(pred ? a[1] : a[2], w), operands(3));
    }
    case Hop::InvokeSubgraph: {  // invoke_subgraph(subgraph, identifier, *operands)
      need_at_least(2);
      return execute(p, graph_of(a[0], w), operands(2));
    }
    case Hop::SetGradEnabled: {  // wrap_with_set_grad_enabled(enable, fn, *args)
      need_at_least(2);
      c10::AutoGradMode mode(truthy(a[0], w));
      return execute(p, graph_of(a[1], w), operands(2));
    }
    case Hop::Autocast: {  // wrap_with_autocast(device_type, dtype, enabled, cache_enabled, fn, *args)
      need_at_least(5);
      if (!a[0].isString()) fail(RunnerErrorKind::UnsupportedNode, w + ": device_type must be a string");
      const at::DeviceType device = c10::Device(a[0].toStringRef()).type();
      AutocastRegion region(device, a[1].isNone() ? at::autocast::get_autocast_dtype(device) : a[1].toScalarType(),
                            truthy(a[2], w), a[3].isNone() ? at::autocast::is_autocast_cache_enabled() : truthy(a[3], w));
      return execute(p, graph_of(a[4], w), operands(5));
    }
    case Hop::WhileLoop: {  // while_loop(cond_fn, body_fn, carried_inputs, additional_inputs)
      need_at_least(4);
      int cond = graph_of(a[0], w), body = graph_of(a[1], w);
      std::vector<c10::IValue> carried, extra;
      flatten(a[2], carried);
      flatten(a[3], extra);
      auto with_extra = [&](std::vector<c10::IValue> v) {
        v.insert(v.end(), extra.begin(), extra.end());
        return v;
      };
      while (true) {
        auto r = execute(p, cond, with_extra(carried));
        if (r.size() != 1) fail(RunnerErrorKind::Execution, w + ": cond_fn must return one value");
        if (!truthy(r[0], w)) break;
        carried = execute(p, body, with_extra(carried));
      }
      return carried;
    }
    case Hop::Map: {  // map_impl(f, xs, pos_args): f on each slice of xs along dim 0, results stacked
      need_at_least(3);
      int f = graph_of(a[0], w);
      std::vector<c10::IValue> xs, pos;
      flatten(a[1], xs);
      flatten(a[2], pos);
      if (xs.empty()) fail(RunnerErrorKind::Execution, w + ": map over no tensors");
      const int64_t n = xs[0].toTensor().size(0);
      static const c10::OperatorHandle select = op_handle("aten::select", "int");
      static const c10::OperatorHandle stack_op = op_handle("aten::stack", "");
      std::vector<std::vector<at::Tensor>> per_output;
      for (int64_t i = 0; i < n; ++i) {
        std::vector<c10::IValue> in;
        for (const auto &x : xs) in.push_back(call_op(select, {x, int64_t(0), i})[0]);
        in.insert(in.end(), pos.begin(), pos.end());
        auto out = execute(p, f, std::move(in));
        if (per_output.empty()) per_output.resize(out.size());
        for (size_t k = 0; k < out.size(); ++k) per_output[k].push_back(out[k].toTensor());
      }
      std::vector<c10::IValue> results;
      for (auto &ts : per_output) results.push_back(call_op(stack_op, {c10::List<at::Tensor>(ts), int64_t(0)})[0]);
      return results;
    }
    case Hop::Scan: {  // scan(combine_fn, init, xs, additional_inputs), along dim 0 (torch's generic_scan)
      need_at_least(4);
      int f = graph_of(a[0], w);
      std::vector<c10::IValue> carry, xs, extra;
      flatten(a[1], carry);
      flatten(a[2], xs);
      flatten(a[3], extra);
      if (xs.empty()) return carry;  // torch returns the init unchanged and no outputs
      const int64_t n = xs[0].toTensor().size(0);
      if (n == 0) fail(RunnerErrorKind::Execution, w + ": scan over 0 elements");
      static const c10::OperatorHandle select = op_handle("aten::select", "int");
      static const c10::OperatorHandle stack_op = op_handle("aten::stack", "");
      const size_t n_carry = carry.size();
      std::vector<std::vector<at::Tensor>> per_output;
      std::vector<bool> is_tensor;
      for (int64_t i = 0; i < n; ++i) {
        std::vector<c10::IValue> in(carry);
        for (const auto &x : xs) in.push_back(call_op(select, {x, int64_t(0), i})[0]);
        in.insert(in.end(), extra.begin(), extra.end());
        auto out = execute(p, f, std::move(in));
        if (out.size() < n_carry) fail(RunnerErrorKind::Execution, w + ": combine_fn returns fewer values than the carry");
        if (i == 0) {
          per_output.resize(out.size() - n_carry);
          for (size_t k = n_carry; k < out.size(); ++k) is_tensor.push_back(out[k].isTensor());
        }
        for (size_t k = n_carry; k < out.size(); ++k)
          if (is_tensor[k - n_carry]) per_output[k - n_carry].push_back(out[k].toTensor());
        carry.assign(out.begin(), out.begin() + long(n_carry));
      }
      // the stacked outputs: torch writes each step into an empty tensor by scatter_; stack gives the same values
      for (size_t k = 0; k < per_output.size(); ++k)
        carry.push_back(is_tensor[k] ? call_op(stack_op, {c10::List<at::Tensor>(per_output[k]), int64_t(0)})[0]
                                     : c10::IValue());
      return carry;
    }
  }
  fail(RunnerErrorKind::UnsupportedNode, w + ": unknown higher-order operator");
}

}  // namespace

c10::IValue wrapped_number(const c10::IValue &v) {
  at::Tensor t;
  auto make = [&](at::ScalarType st) {
    t = at::detail::empty_cpu({}, st, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
  };
  if (v.isBool()) {
    make(at::kBool);
    *t.mutable_data_ptr<bool>() = v.toBool();
  } else if (v.isInt()) {
    make(at::kLong);
    *t.mutable_data_ptr<int64_t>() = v.toInt();
  } else if (v.isDouble()) {
    make(at::kDouble);
    *t.mutable_data_ptr<double>() = v.toDouble();
  } else if (v.isComplexDouble()) {
    make(at::kComplexDouble);
    *t.mutable_data_ptr<c10::complex<double>>() = v.toComplexDouble();
  } else {
    return v;
  }
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

std::vector<c10::IValue> execute(const Program &p, int index, std::vector<c10::IValue> inputs) {
  const Plan &plan = p.graphs[size_t(index)];
  if (inputs.size() != plan.inputs.size())
    fail(RunnerErrorKind::Execution, plan.path + ": takes " + std::to_string(plan.inputs.size()) + " inputs, got " +
                                         std::to_string(inputs.size()));
  std::vector<c10::IValue> env(size_t(plan.num_slots));
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(plan.inputs[i])] = std::move(inputs[i]);
  std::vector<c10::IValue> stack;
  for (size_t k = 0; k < plan.steps.size(); ++k) {
    const Step &s = plan.steps[k];
    stack.clear();
    for (const ArgPlan &a : s.args) stack.push_back(eval(a, env));
    try {
      switch (s.kind) {
        case Step::kOp:
          s.op->callBoxed(stack);
          for (size_t i = 0; i < s.outs.size() && i < stack.size(); ++i) store(s.outs[i], std::move(stack[i]), env, s.where);
          break;
        case Step::kBuiltin: store_all(s, {builtin(s, stack)}, env); break;
        case Step::kHop: store_all(s, hop(p, s, stack), env); break;
      }
    } catch (const RunnerError &) {
      throw;
    } catch (const std::exception &e) {
      std::string msg = e.what();
      if (auto *ce = dynamic_cast<const c10::Error *>(&e)) msg = ce->what_without_backtrace();
      auto nl = msg.find('\n');
      fail(RunnerErrorKind::Execution, s.where + ": " + (nl == std::string::npos ? msg : msg.substr(0, nl)));
    }
    for (int slot : plan.frees[k]) env[size_t(slot)] = c10::IValue();
  }
  std::vector<c10::IValue> out;
  out.reserve(plan.outputs.size());
  for (const ArgPlan &o : plan.outputs) out.push_back(eval(o, env));
  return out;
}

}  // namespace detail
}  // namespace pt2format
