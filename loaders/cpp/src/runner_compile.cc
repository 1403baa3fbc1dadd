// Compile a program's graphs into plans (runner_plan.h): operators resolved once through the dispatcher,
// every argument converted to what the operator's schema declares, every name given a slot.
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "runner_plan.h"

namespace pt2format {
namespace detail {
namespace {

using pt2f::str;

const std::unordered_map<std::string, Builtin> &builtins() {
  static const std::unordered_map<std::string, Builtin> table = {
      {"_operator.getitem", Builtin::Getitem}, {"_operator.add", Builtin::Add},
      {"_operator.sub", Builtin::Sub}, {"_operator.mul", Builtin::Mul},
      {"_operator.truediv", Builtin::TrueDiv}, {"_operator.floordiv", Builtin::FloorDiv},
      {"_operator.mod", Builtin::Mod}, {"_operator.pow", Builtin::Pow}, {"_operator.neg", Builtin::Neg},
      {"_operator.pos", Builtin::Pos}, {"_operator.abs", Builtin::Abs}, {"_operator.eq", Builtin::Eq},
      {"_operator.ne", Builtin::Ne}, {"_operator.lt", Builtin::Lt}, {"_operator.le", Builtin::Le},
      {"_operator.gt", Builtin::Gt}, {"_operator.ge", Builtin::Ge}, {"_operator.and_", Builtin::And},
      {"_operator.or_", Builtin::Or}, {"_operator.not_", Builtin::Not}, {"torch.sym_max", Builtin::SymMax},
      {"torch.sym_min", Builtin::SymMin}, {"torch.sym_not", Builtin::SymNot}, {"torch.sym_int", Builtin::SymInt},
      {"torch.sym_float", Builtin::SymFloat}, {"torch.sym_ite", Builtin::SymIte},
      {"torch.sym_sum", Builtin::SymSum}, {"math.floor", Builtin::Floor},
      {"math.ceil", Builtin::Ceil}, {"math.trunc", Builtin::Trunc}, {"math.sqrt", Builtin::Sqrt},
      {"torch.sym_sqrt", Builtin::Sqrt}, {"torch._C._set_grad_enabled", Builtin::SetGradEnabled},
  };
  return table;
}

const std::unordered_map<std::string, Hop> &hops() {
  static const std::unordered_map<std::string, Hop> table = {
      {"torch.ops.higher_order.cond", Hop::Cond},
      {"torch.ops.higher_order.while_loop", Hop::WhileLoop},
      {"torch.ops.higher_order.map_impl", Hop::Map},
      {"torch.ops.higher_order.scan", Hop::Scan},
      {"torch.ops.higher_order.wrap_with_autocast", Hop::Autocast},
      {"torch.ops.higher_order.invoke_subgraph", Hop::InvokeSubgraph},
      {"torch.ops.higher_order.wrap_with_set_grad_enabled", Hop::SetGradEnabled},
  };
  return table;
}

c10::Layout to_layout(pt2format::Layout l, const std::string &where) {
  switch (l) {
    case pt2format::Layout::STRIDED: return c10::kStrided;
    case pt2format::Layout::SPARSE_COO: return c10::kSparse;
    case pt2format::Layout::SPARSE_CSR: return c10::kSparseCsr;
    case pt2format::Layout::SPARSE_CSC: return c10::kSparseCsc;
    case pt2format::Layout::SPARSE_BSR: return c10::kSparseBsr;
    case pt2format::Layout::SPARSE_BSC: return c10::kSparseBsc;
    case pt2format::Layout::MKLDNN: return c10::kMkldnn;
    default: fail(RunnerErrorKind::UnsupportedNode, where + ": layout " + std::to_string(int(l)) + " has no torch equivalent");
  }
}

c10::MemoryFormat to_memory_format(pt2format::MemoryFormat m, const std::string &where) {
  switch (m) {
    case pt2format::MemoryFormat::CONTIGUOUS_FORMAT: return c10::MemoryFormat::Contiguous;
    case pt2format::MemoryFormat::CHANNELS_LAST: return c10::MemoryFormat::ChannelsLast;
    case pt2format::MemoryFormat::CHANNELS_LAST_3D: return c10::MemoryFormat::ChannelsLast3d;
    case pt2format::MemoryFormat::PRESERVE_FORMAT: return c10::MemoryFormat::Preserve;
    default:
      fail(RunnerErrorKind::UnsupportedNode, where + ": memory format " + std::to_string(int(m)) + " has no torch equivalent");
  }
}

c10::Device to_device(const pt2format::Device *d, const std::string &where) {
  if (!d || !d->type()) fail(RunnerErrorKind::UnsupportedNode, where + ": device without a type");
  try {
    std::string s = d->type()->str();
    if (d->index() >= 0) s += ":" + std::to_string(d->index());
    return c10::Device(s);
  } catch (const c10::Error &) {
    fail(RunnerErrorKind::UnsupportedNode, where + ": unknown device type '" + d->type()->str() + "'");
  }
}

template <class V>
uint32_t len(const V *v) { return v ? v->size() : 0; }

/// The argument kind's name, for messages ("CustomObjArgument").
std::string kind_name(pt2format::ArgumentValue t) {
  const char *n = pt2format::EnumNameArgumentValue(t);
  return n && *n ? n : "argument kind " + std::to_string(int(t));
}

class Compiler {
 public:
  explicit Compiler(Program &p) : p_(p) {}

  int graph(const pt2format::Graph *g, const std::string &path);

 private:
  struct Scope {
    std::unordered_map<std::string, int> slots;
    std::vector<int> last_use;  // per slot: the last step that reads it, or defines it when none reads it
    int current_step = 0;
    std::string path;
    int define(const std::string &name) {
      int s = int(last_use.size());
      slots[name] = s;
      last_use.push_back(current_step);
      return s;
    }
    int use(const std::string &name, const std::string &where) {
      auto it = slots.find(name);
      if (it == slots.end())
        fail(RunnerErrorKind::UnsupportedNode, where + ": value '" + name + "' is used before any node or input defines it");
      if (last_use[it->second] < current_step) last_use[it->second] = current_step;
      return it->second;
    }
  };

  ArgPlan plan(pt2format::ArgumentValue t, const void *v, const c10::Argument *schema, Scope &sc,
               const std::string &where);
  ArgPlan plan_arg(const pt2format::Argument *a, Scope &sc, const std::string &where) {
    if (!a) fail(RunnerErrorKind::UnsupportedNode, where + ": absent argument");
    return plan(a->value_type(), a->value(), nullptr, sc, where);
  }
  OutBind bind(const pt2format::Argument *a, Scope &sc);
  void op_step(const pt2format::Node *n, Step &s, Scope &sc, const std::string &where);

  Program &p_;
};

c10::IValue coerce(c10::IValue v, const c10::TypePtr &type) {
  if (!type) return v;
  c10::TypePtr t = type;
  if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
  if (t->kind() == c10::TypeKind::FloatType && v.isInt()) return c10::IValue(double(v.toInt()));
  if (t->kind() == c10::TypeKind::FloatType && v.isBool()) return c10::IValue(double(v.toBool()));
  if (t->kind() == c10::TypeKind::IntType && v.isBool()) return c10::IValue(int64_t(v.toBool()));
  return v;
}

ArgPlan constant(c10::IValue v) {
  ArgPlan a;
  a.op = ArgPlan::kConst;
  a.constant = std::move(v);
  return a;
}

bool is_list_of(const c10::Argument *schema, c10::TypeKind elem, bool optional_elem = false) {
  if (!schema) return false;
  c10::TypePtr t = schema->type();
  if (auto o = t->cast<c10::OptionalType>()) t = o->getElementType();
  auto l = t->cast<c10::ListType>();
  if (!l) return false;
  c10::TypePtr e = l->getElementType();
  if (optional_elem) {
    auto oe = e->cast<c10::OptionalType>();
    return oe && oe->getElementType()->kind() == elem;
  }
  return e->kind() == elem;
}

ArgPlan Compiler::plan(pt2format::ArgumentValue t, const void *v, const c10::Argument *schema, Scope &sc,
                       const std::string &where) {
  using AV = pt2format::ArgumentValue;
  auto unsupported = [&]() -> ArgPlan {
    fail(RunnerErrorKind::UnsupportedNode, where + ": " + kind_name(t) + " is not supported by the C++ runner");
  };
  c10::TypePtr type = schema ? schema->type() : nullptr;
  switch (t) {
    case AV::NoneArgument: return constant(c10::IValue());
    case AV::TensorArgument: {
      ArgPlan a;
      a.op = ArgPlan::kSlot;
      a.slot = sc.use(str(static_cast<const pt2format::TensorArgument *>(v)->name()), where);
      return a;
    }
    case AV::OptionalTensorArgument: {
      auto *o = static_cast<const pt2format::OptionalTensorArgument *>(v);
      if (!o->name()) return constant(c10::IValue());
      ArgPlan a;
      a.op = ArgPlan::kSlot;
      a.slot = sc.use(o->name()->str(), where);
      return a;
    }
    case AV::TensorListArgument: {
      ArgPlan a;
      a.op = is_list_of(schema, c10::TypeKind::TensorType, true) ? ArgPlan::kOptTensorList : ArgPlan::kTensorList;
      for (auto *n : pt2f::each(static_cast<const pt2format::TensorListArgument *>(v)->names()))
        a.slots.push_back(sc.use(n->str(), where));
      return a;
    }
    case AV::OptionalTensorListArgument: {
      ArgPlan a;
      a.op = ArgPlan::kOptTensorList;
      for (auto *o : pt2f::each(static_cast<const pt2format::OptionalTensorListArgument *>(v)->items()))
        a.slots.push_back(o && o->name() ? sc.use(o->name()->str(), where) : -1);
      return a;
    }
    case AV::IntArgument: {
      int64_t x = static_cast<const pt2format::IntArgument *>(v)->value();
      if (is_list_of(schema, c10::TypeKind::IntType)) {  // an int for `int[N]`: Python repeats it N times
        c10::TypePtr lt = type;
        if (auto o = lt->cast<c10::OptionalType>()) lt = o->getElementType();
        size_t n = schema->N() ? *schema->N() : 1;
        return constant(c10::IValue(std::vector<int64_t>(n, x)));
      }
      return constant(coerce(c10::IValue(x), type));
    }
    case AV::FloatArgument: return constant(c10::IValue(static_cast<const pt2format::FloatArgument *>(v)->value()));
    case AV::BoolArgument: return constant(coerce(c10::IValue(static_cast<const pt2format::BoolArgument *>(v)->value()), type));
    case AV::StringArgument: return constant(c10::IValue(str(static_cast<const pt2format::StringArgument *>(v)->value())));
    case AV::ComplexArgument: {
      auto *c = static_cast<const pt2format::ComplexArgument *>(v);
      return constant(c10::IValue(c10::complex<double>(c->real(), c->imag())));
    }
    case AV::IntListArgument: {
      std::vector<int64_t> xs;
      for (int64_t x : pt2f::each(static_cast<const pt2format::IntListArgument *>(v)->values())) xs.push_back(x);
      return constant(c10::IValue(xs));
    }
    case AV::FloatListArgument: {
      std::vector<double> xs;
      for (double x : pt2f::each(static_cast<const pt2format::FloatListArgument *>(v)->values())) xs.push_back(x);
      return constant(c10::IValue(xs));
    }
    case AV::BoolListArgument: {
      c10::List<bool> xs;
      for (bool x : pt2f::each(static_cast<const pt2format::BoolListArgument *>(v)->values())) xs.push_back(x);
      return constant(c10::IValue(xs));
    }
    case AV::StringListArgument: {
      c10::List<std::string> xs;
      for (auto *x : pt2f::each(static_cast<const pt2format::StringListArgument *>(v)->values())) xs.push_back(x->str());
      return constant(c10::IValue(xs));
    }
    case AV::SymIntArgument: {
      auto *s = static_cast<const pt2format::SymIntArgument *>(v);
      if (!s->name()) return constant(coerce(c10::IValue(int64_t(s->value())), type));
      ArgPlan a;
      a.op = ArgPlan::kSlot;
      a.slot = sc.use(s->name()->str(), where);
      return a;
    }
    case AV::SymFloatArgument: {
      auto *s = static_cast<const pt2format::SymFloatArgument *>(v);
      if (!s->name()) return constant(c10::IValue(s->value()));
      ArgPlan a;
      a.op = ArgPlan::kSlot;
      a.slot = sc.use(s->name()->str(), where);
      return a;
    }
    case AV::SymBoolArgument: {
      auto *s = static_cast<const pt2format::SymBoolArgument *>(v);
      if (!s->name()) return constant(c10::IValue(bool(s->value())));
      ArgPlan a;
      a.op = ArgPlan::kSlot;
      a.slot = sc.use(s->name()->str(), where);
      return a;
    }
    case AV::SymIntListArgument: {
      ArgPlan a;
      a.op = ArgPlan::kIntList;
      for (auto *s : pt2f::each(static_cast<const pt2format::SymIntListArgument *>(v)->items())) {
        a.slots.push_back(s->name() ? sc.use(s->name()->str(), where) : -1);
        a.consts.emplace_back(int64_t(s->value()));
      }
      return a;
    }
    case AV::SymFloatListArgument: {
      ArgPlan a;
      a.op = ArgPlan::kDoubleList;
      for (auto *s : pt2f::each(static_cast<const pt2format::SymFloatListArgument *>(v)->items())) {
        a.slots.push_back(s->name() ? sc.use(s->name()->str(), where) : -1);
        a.consts.emplace_back(s->value());
      }
      return a;
    }
    case AV::SymBoolListArgument: {
      ArgPlan a;
      a.op = ArgPlan::kBoolList;
      for (auto *s : pt2f::each(static_cast<const pt2format::SymBoolListArgument *>(v)->items())) {
        a.slots.push_back(s->name() ? sc.use(s->name()->str(), where) : -1);
        a.consts.emplace_back(bool(s->value()));
      }
      return a;
    }
    case AV::ScalarTypeArgument: {
      auto st = to_aten_dtype(static_cast<const pt2format::ScalarTypeArgument *>(v)->value());
      if (st == at::ScalarType::Undefined) fail(RunnerErrorKind::UnsupportedNode, where + ": dtype has no torch equivalent");
      return constant(c10::IValue(st));
    }
    case AV::MemoryFormatArgument:
      return constant(c10::IValue(to_memory_format(static_cast<const pt2format::MemoryFormatArgument *>(v)->value(), where)));
    case AV::LayoutArgument:
      return constant(c10::IValue(to_layout(static_cast<const pt2format::LayoutArgument *>(v)->value(), where)));
    case AV::DeviceArgument:
      return constant(c10::IValue(to_device(static_cast<const pt2format::DeviceArgument *>(v)->value(), where)));
    case AV::GraphArgument: {
      if (schema) return unsupported();
      auto *g = static_cast<const pt2format::GraphArgument *>(v);
      ArgPlan a;
      a.op = ArgPlan::kGraph;
      a.graph = graph(g->graph(), where + ".graph");
      return a;
    }
    case AV::MixedListArgument: {
      ArgPlan a;
      a.op = ArgPlan::kMixed;
      int i = 0;
      for (auto *item : pt2f::each(static_cast<const pt2format::MixedListArgument *>(v)->items()))
        a.items.push_back(plan_arg(item, sc, where + ".items[" + std::to_string(i++) + "]"));
      return a;
    }
    default: return unsupported();
  }
}

OutBind Compiler::bind(const pt2format::Argument *a, Scope &sc) {
  using AV = pt2format::ArgumentValue;
  OutBind b;
  if (!a) return b;
  const void *v = a->value();
  auto slot = [&](const flatbuffers::String *name) {
    if (name) {
      b.op = OutBind::kSlot;
      b.slot = sc.define(name->str());
    }
  };
  switch (a->value_type()) {
    case AV::TensorArgument: slot(static_cast<const pt2format::TensorArgument *>(v)->name()); break;
    case AV::OptionalTensorArgument: slot(static_cast<const pt2format::OptionalTensorArgument *>(v)->name()); break;
    case AV::SymIntArgument: slot(static_cast<const pt2format::SymIntArgument *>(v)->name()); break;
    case AV::SymFloatArgument: slot(static_cast<const pt2format::SymFloatArgument *>(v)->name()); break;
    case AV::SymBoolArgument: slot(static_cast<const pt2format::SymBoolArgument *>(v)->name()); break;
    case AV::TensorListArgument:
      b.op = OutBind::kList;
      for (auto *n : pt2f::each(static_cast<const pt2format::TensorListArgument *>(v)->names()))
        b.slots.push_back(sc.define(n->str()));
      break;
    case AV::OptionalTensorListArgument:
      b.op = OutBind::kList;
      for (auto *o : pt2f::each(static_cast<const pt2format::OptionalTensorListArgument *>(v)->items()))
        b.slots.push_back(o && o->name() ? sc.define(o->name()->str()) : -1);
      break;
    case AV::SymIntListArgument:
      b.op = OutBind::kList;
      for (auto *s : pt2f::each(static_cast<const pt2format::SymIntListArgument *>(v)->items()))
        b.slots.push_back(s->name() ? sc.define(s->name()->str()) : -1);
      break;
    default: break;  // None and constants: nothing to bind
  }
  return b;
}

void Compiler::op_step(const pt2format::Node *n, Step &s, Scope &sc, const std::string &where) {
  const std::string target = n->target()->str();
  // torch.ops.<ns>.<op>.<overload>
  const std::string rest = target.substr(std::strlen("torch.ops."));
  auto first = rest.find('.'), last = rest.rfind('.');
  if (first == std::string::npos || first == last)
    fail(RunnerErrorKind::UnsupportedNode, where + ": target '" + target + "' is not torch.ops.<namespace>.<op>.<overload>");
  std::string name = rest.substr(0, first) + "::" + rest.substr(first + 1, last - first - 1);
  std::string overload = rest.substr(last + 1);
  if (overload == "default") overload.clear();
  auto handle = c10::Dispatcher::singleton().findSchema({name, overload});
  if (!handle)
    fail(RunnerErrorKind::UnknownOperator,
         where + ": operator " + name + (overload.empty() ? "" : "." + overload) +
             " is not registered (load the library that defines it with --library)");
  s.kind = Step::kOp;
  s.op = *handle;
  const c10::FunctionSchema &schema = handle->schema();
  std::vector<bool> used(len(n->inputs()), false);
  for (const c10::Argument &param : schema.arguments()) {
    const pt2format::NamedArgument *given = nullptr;
    for (uint32_t i = 0; i < len(n->inputs()); ++i) {
      auto *na = n->inputs()->Get(i);
      if (!used[i] && str(na->name()) == param.name()) {
        given = na;
        used[i] = true;
        break;
      }
    }
    std::string at = where + ".inputs[" + param.name() + "]";
    if (given) {
      ArgPlan a = plan(given->value_type(), given->value(), &param, sc, at);
      c10::TypePtr pt = param.type();
      if (auto o = pt->cast<c10::OptionalType>()) pt = o->getElementType();
      if (pt->kind() == c10::TypeKind::TensorType) {
        if (a.op == ArgPlan::kConst) a.constant = wrapped_number(a.constant);
        else if (a.op == ArgPlan::kSlot && given->value_type() != pt2format::ArgumentValue::TensorArgument &&
                 given->value_type() != pt2format::ArgumentValue::OptionalTensorArgument)
          a.wrap_scalar = true;
      }
      s.args.push_back(std::move(a));
    } else if (param.default_value()) {
      s.args.push_back(constant(*param.default_value()));
    } else if (param.type()->kind() == c10::TypeKind::OptionalType) {
      s.args.push_back(constant(c10::IValue()));
    } else {
      fail(RunnerErrorKind::UnsupportedNode, where + ": argument '" + param.name() + "' of " + schema.name() +
                                                 " is required but the node does not pass it");
    }
  }
  for (uint32_t i = 0; i < used.size(); ++i)
    if (!used[i])
      fail(RunnerErrorKind::UnsupportedNode, where + ": argument '" + str(n->inputs()->Get(i)->name()) +
                                                 "' is not a parameter of " + schema.name() +
                                                 (overload.empty() ? "" : "." + overload) + " in this libtorch");
  s.num_returns = schema.returns().size();
}

int Compiler::graph(const pt2format::Graph *g, const std::string &path) {
  const int index = int(p_.graphs.size());
  p_.graphs.emplace_back();
  Plan out;
  out.path = path;
  Scope sc;
  sc.path = path;
  for (auto *in : pt2f::each(g->inputs())) {
    OutBind b = bind(in, sc);
    // A constant placeholder (torch's ConstantArgument input) still takes a slot of its own.
    out.inputs.push_back(b.op == OutBind::kSlot ? b.slot : sc.define("<constant input " + std::to_string(out.inputs.size()) + ">"));
  }
  uint32_t k = 0;
  for (auto *n : pt2f::each(g->nodes())) {
    sc.current_step = int(out.steps.size());
    std::string where = path + ".nodes[" + std::to_string(k++) + "] (" + str(n->name()) + ", " + str(n->target()) + ")";
    Step s;
    s.where = where;
    const std::string target = str(n->target());
    auto hop = hops().find(target);
    auto builtin = builtins().find(target);
    if (hop != hops().end()) {
      s.kind = Step::kHop;
      s.hop = hop->second;
      uint32_t i = 0;
      for (auto *na : pt2f::each(n->inputs()))
        s.args.push_back(plan(na->value_type(), na->value(), nullptr, sc, where + ".inputs[" + std::to_string(i++) + "]"));
    } else if (builtin != builtins().end()) {
      s.kind = Step::kBuiltin;
      s.builtin = builtin->second;
      uint32_t i = 0;
      for (auto *na : pt2f::each(n->inputs()))
        s.args.push_back(plan(na->value_type(), na->value(), nullptr, sc, where + ".inputs[" + std::to_string(i++) + "]"));
    } else if (target.rfind("torch.ops.higher_order.", 0) == 0) {
      fail(RunnerErrorKind::UnsupportedNode, where + ": higher-order operator " + target.substr(23) +
                                                 " is not supported by the C++ runner");
    } else if (target.rfind("torch.ops.", 0) == 0) {
      op_step(n, s, sc, where);
    } else {
      fail(RunnerErrorKind::UnsupportedNode, where + ": target " + target + " is not supported by the C++ runner");
    }
    for (auto *o : pt2f::each(n->outputs())) s.outs.push_back(bind(o, sc));
    if (s.kind == Step::kOp)  // outputs past the operator's returns can only be None (e.g. _assert_scalar's)
      for (size_t i = s.num_returns; i < s.outs.size(); ++i)
        if (s.outs[i].op != OutBind::kIgnore)
          fail(RunnerErrorKind::UnsupportedNode, where + ": the node names output " + std::to_string(i) + ", " +
                                                     s.op->schema().name() + " returns " + std::to_string(s.num_returns));
    out.steps.push_back(std::move(s));
  }
  sc.current_step = int(out.steps.size());
  uint32_t i = 0;
  for (auto *o : pt2f::each(g->outputs())) out.outputs.push_back(plan_arg(o, sc, path + ".outputs[" + std::to_string(i++) + "]"));
  out.num_slots = int(sc.last_use.size());
  // Free each intermediate value after the step that reads it last (as FX's generated code does).
  out.frees.assign(out.steps.size(), {});
  for (int slot = 0; slot < out.num_slots; ++slot) {
    int last = sc.last_use[slot];
    if (last < int(out.steps.size())) out.frees[last].push_back(slot);
  }
  p_.graphs[index] = std::move(out);
  return index;
}

}  // namespace

void compile_program(Program &p) {
  Compiler c(p);
  c.graph(p.program->graph(), "programs[" + str(p.program->name()) + "].graph");
}

}  // namespace detail
}  // namespace pt2format
