// Validator, one program: its pool, guards, graph, signature, state and module call graph; tree specs;
// the signature's one spec per graph input and output; state tensors that match their placeholders.
#include <string>
#include <unordered_map>

#include "pt2f/schema.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {

void Validator::check_program(const Program *p, const std::string &path) {
  n_symbols_ = len(p->symbols());
  n_exprs_ = len(p->sym_exprs());
  check_symbols(p, path);
  for (uint32_t i = 0; i < len(p->range_constraints()); ++i)
    use(p->range_constraints()->Get(i)->expr(), path + ".range_constraints[" + num(i) + "].expr");
  // SPEC §10: torch compiles every guard; the counts are bounded before any is read.
  if (len(p->input_guards()) > limits::kMaxInputGuards)
    fail(ErrorKind::Limit, "too many input_guards", path + ".input_guards", "<= " + num(limits::kMaxInputGuards),
         num(len(p->input_guards())));
  if (len(p->guard_sources()) > limits::kMaxGuardSources)
    fail(ErrorKind::Limit, "too many guard_sources", path + ".guard_sources", "<= " + num(limits::kMaxGuardSources),
         num(len(p->guard_sources())));
  for (uint32_t i = 0; i < len(p->input_guards()); ++i)
    use(p->input_guards()->Get(i), path + ".input_guards[" + num(i) + "]");
  const Scope scope = check_graph(p->graph(), 0, path + ".graph");
  check_signature(p, scope, path);
  check_state_matches_placeholders(p, path);
  for (uint32_t i = 0; i < len(p->state()); ++i) {
    const auto *e = p->state()->Get(i);
    const std::string ep = path + ".state[" + num(i) + "]";
    if (e->kind() == StateKind::UNSPECIFIED) invalid("state kind is UNSPECIFIED", ep + ".kind");
  }
  for (uint32_t i = 0; i < len(p->custom_objects()); ++i) {
    const auto *o = p->custom_objects()->Get(i);
    const std::string op = path + ".custom_objects[" + num(i) + "]";
    if (o->state()) check_value(o->state(), 0, false, op + ".state");
  }
  if (p->example_inputs()) check_value(p->example_inputs(), 0, true, path + ".example_inputs");
  for (uint32_t i = 0; i < len(p->module_call_graph()); ++i) {
    const auto *sig = p->module_call_graph()->Get(i)->signature();
    if (!sig) continue;
    const std::string sp = path + ".module_call_graph[" + num(i) + "].signature";
    for (int g = 0; g < 2; ++g) {
      const auto *args = g ? sig->outputs() : sig->inputs();
      for (uint32_t j = 0; j < len(args); ++j)
        if (args->Get(j)->value_type() == ArgumentValue::NONE)
          invalid("union value is missing", sp + (g ? ".outputs[" : ".inputs[") + num(j) + "].value");
    }
    if (sig->in_spec()) check_tree_spec(sig->in_spec(), 0, sp + ".in_spec");
    if (sig->out_spec()) check_tree_spec(sig->out_spec(), 0, sp + ".out_spec");
  }
}

void Validator::check_tree_spec(const TreeSpec *spec, uint32_t depth, const std::string &path) {
  if (depth > max_depth_) fail(ErrorKind::Limit, "tree spec nested too deeply", path, "depth <= " + num(max_depth_), num(depth));
  for (uint32_t i = 0; i < len(spec->keys()); ++i) {
    const std::string kp = path + ".keys[" + num(i) + "]";
    check_value(spec->keys()->Get(i), 0, false, kp);
    if (spec->kind() == TreeSpecKind::MODULE)
      check_module_key(spec->keys()->Get(i), kp + ".value");
    else
      check_identifier_key(spec->keys()->Get(i), kp + ".value");
  }
  if (spec->context()) check_value(spec->context(), 0, false, path + ".context");
  for (uint32_t i = 0; i < len(spec->children()); ++i)
    check_tree_spec(spec->children()->Get(i), depth + 1, path + ".children[" + num(i) + "]");
}

// A stored parameter, buffer or constant has its placeholder's dtype and concrete sizes (SPEC.md §5);
// only plain strided placeholders are compared, and dimensions the graph leaves symbolic are not.
void Validator::check_state_matches_placeholders(const Program *p, const std::string &path) {
  std::unordered_map<std::string, const TensorMeta *> meta;
  for (uint32_t i = 0; i < len(p->graph()->tensor_values()); ++i) {
    const auto *tv = p->graph()->tensor_values()->Get(i);
    if (tv->name()) meta.insert_or_assign(tv->name()->str(), tv->meta());
  }
  std::unordered_map<std::string, uint32_t> state;
  for (uint32_t i = 0; i < len(p->state()); ++i) {
    const auto *e = p->state()->Get(i);
    if (e->name()) state.insert_or_assign(e->name()->str(), e->tensor());
  }
  const auto *sig = p->signature();
  for (uint32_t i = 0; i < len(sig->input_specs()); ++i) {
    const auto *spec = sig->input_specs()->Get(i);
    const flatbuffers::String *fqn = nullptr;
    const TensorArgument *arg = nullptr;
    switch (spec->spec_type()) {
      case InputSpecKind::InputToParameterSpec:
        fqn = spec->spec_as_InputToParameterSpec()->parameter_name();
        arg = spec->spec_as_InputToParameterSpec()->arg();
        break;
      case InputSpecKind::InputToBufferSpec:
        fqn = spec->spec_as_InputToBufferSpec()->buffer_name();
        arg = spec->spec_as_InputToBufferSpec()->arg();
        break;
      case InputSpecKind::InputToTensorConstantSpec:
        fqn = spec->spec_as_InputToTensorConstantSpec()->tensor_constant_name();
        arg = spec->spec_as_InputToTensorConstantSpec()->arg();
        break;
      default:
        continue;
    }
    if (!fqn || !arg || !arg->name()) continue;
    const auto st = state.find(fqn->str());
    const auto mt = meta.find(arg->name()->str());
    if (st == state.end() || mt == meta.end() || !mt->second) continue;
    const TensorMeta *m = mt->second;
    if (m->layout() != Layout::STRIDED || st->second >= n_tensors_) continue;
    const Tensor *t = p_->tensors()->Get(st->second);
    const std::string sp = path + ".signature.input_specs[" + num(i) + "]";
    if (t->dtype() != m->dtype())
      invalid("state tensor '" + fqn->str() + "' has another dtype than its placeholder '" + arg->name()->str() + "'",
              sp, EnumNameScalarType(m->dtype()), EnumNameScalarType(t->dtype()));
    const uint32_t nd = len(m->sizes());
    bool same = nd == len(t->sizes());
    for (uint32_t d = 0; same && d < nd; ++d) {
      const SymInt *s = m->sizes()->Get(d);
      if (s->expr() == -1 && s->value() != t->sizes()->Get(d)) same = false;
    }
    if (!same)
      invalid("state tensor '" + fqn->str() + "' has other sizes than its placeholder '" + arg->name()->str() + "'", sp);
  }
}

void Validator::check_signature(const Program *p, const Scope &sc, const std::string &path) {
  const auto *sig = p->signature();
  const reflection::Schema &schema = binary_schema();
  for (int o = 0; o < 2; ++o) {
    const uint32_t nspecs = o ? len(sig->output_specs()) : len(sig->input_specs());
    const uint32_t nargs = o ? len(p->graph()->outputs()) : len(p->graph()->inputs());
    const std::string group = path + (o ? ".signature.output_specs" : ".signature.input_specs");
    if (nspecs != nargs)
      invalid(o ? "one spec per graph output required" : "one spec per graph input required", group, num(nargs),
              num(nspecs));
    for (uint32_t i = 0; i < nspecs; ++i) {
      const std::string sp = group + "[" + num(i) + "].spec";
      uint8_t tv;
      const flatbuffers::Table *member;
      const char *union_name;
      if (o) {
        const auto *spec = sig->output_specs()->Get(i);
        tv = uint8_t(spec->spec_type());
        member = reinterpret_cast<const flatbuffers::Table *>(spec->spec());
        union_name = "pt2format.OutputSpecKind";
      } else {
        const auto *spec = sig->input_specs()->Get(i);
        tv = uint8_t(spec->spec_type());
        member = reinterpret_cast<const flatbuffers::Table *>(spec->spec());
        union_name = "pt2format.InputSpecKind";
        if (spec->spec_type() == InputSpecKind::InputToConstantInputSpec) {
          const auto *c = spec->spec_as_InputToConstantInputSpec();
          if (c->value()) check_value(c->value(), 0, false, sp + ".value");
          continue;
        }
      }
      // tv != 0 and member set: pt2f_value "member", generated
      // Every other spec member has an `arg`: an Argument (its union), or one argument table itself.
      const auto *un = schema.enums()->LookupByKey(union_name);
      const auto *ev = un ? un->values()->LookupByKey(tv) : nullptr;
      if (!ev || !ev->union_type()) continue;
      const reflection::Object &obj = *schema.objects()->Get(uint32_t(ev->union_type()->index()));
      const auto *af = obj.fields()->LookupByKey("arg");
      if (!af) continue;
      const auto *arg = member->GetPointer<const flatbuffers::Table *>(af->offset());
      if (!arg) invalid("required field is missing", sp + ".arg");
      const std::string arg_type = short_name(schema.objects()->Get(uint32_t(af->type()->index()))->name());
      if (arg_type == "Argument") {
        const auto *a = reinterpret_cast<const Argument *>(arg);
        check_argument(sc, a->value_type(), a->value(), 0, sp + ".arg.value");
      } else {
        ArgumentValue t = ArgumentValue::NONE;
        for (ArgumentValue k : EnumValuesArgumentValue())
          if (k != ArgumentValue::NONE && arg_type == EnumNameArgumentValue(k)) t = k;
        check_argument(sc, t, arg, 0, sp + ".arg");
      }
    }
  }
}

}  // namespace validation
}  // namespace pt2f
