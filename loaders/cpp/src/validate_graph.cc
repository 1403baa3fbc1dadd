// Validator, graph rules: value names unique and scoped to the graph that declares them (subgraphs
// nested at most max_depth), every argument's names declared there, node names unique, node metadata.
#include <string>
#include <unordered_set>

#include "validate_internal.h"

namespace pt2f {
namespace validation {

template <class V>
std::unordered_set<std::string> Validator::names(const V *values, const std::string &path) {
  std::unordered_set<std::string> out;
  for (uint32_t i = 0; i < len(values); ++i) {
    const auto *v = values->Get(i);
    out.insert(v->name()->str());
  }
  if (out.size() != len(values))
    invalid("duplicate value names", path, num(len(values)) + " unique names", num(out.size()));
  return out;
}

Scope Validator::check_graph(const Graph *g, uint32_t depth, const std::string &path) {
  if (depth > max_depth_)
    fail(ErrorKind::Limit, "subgraphs nested too deeply", path, "depth <= " + num(max_depth_), num(depth));
  Scope sc;
  sc.tensors = names(g->tensor_values(), path + ".tensor_values");
  sc.sym_ints = names(g->sym_int_values(), path + ".sym_int_values");
  sc.sym_floats = names(g->sym_float_values(), path + ".sym_float_values");
  sc.sym_bools = names(g->sym_bool_values(), path + ".sym_bool_values");
  sc.custom_objs = names(g->custom_obj_values(), path + ".custom_obj_values");
  for (uint32_t i = 0; i < len(g->tensor_values()); ++i) {
    const auto *meta = g->tensor_values()->Get(i)->meta();
    const std::string mp = path + ".tensor_values[" + num(i) + "].meta";
    // dtype not UNSPECIFIED: pt2f_value, generated
    for (uint32_t d = 0; d < len(meta->sizes()); ++d) check_sym(meta->sizes()->Get(d)->expr(), mp + ".sizes[" + num(d) + "]");
    for (uint32_t d = 0; d < len(meta->strides()); ++d)
      check_sym(meta->strides()->Get(d)->expr(), mp + ".strides[" + num(d) + "]");
    if (meta->storage_offset()) check_sym(meta->storage_offset()->expr(), mp + ".storage_offset");
  }
  for (uint32_t i = 0; i < len(g->sym_int_values()); ++i)
    if (g->sym_int_values()->Get(i)->value())
      check_sym(g->sym_int_values()->Get(i)->value()->expr(), path + ".sym_int_values[" + num(i) + "].value");
  for (uint32_t i = 0; i < len(g->sym_float_values()); ++i)
    if (g->sym_float_values()->Get(i)->value())
      check_sym(g->sym_float_values()->Get(i)->value()->expr(), path + ".sym_float_values[" + num(i) + "].value");
  for (uint32_t i = 0; i < len(g->sym_bool_values()); ++i)
    if (g->sym_bool_values()->Get(i)->value())
      check_sym(g->sym_bool_values()->Get(i)->value()->expr(), path + ".sym_bool_values[" + num(i) + "].value");
  for (int o = 0; o < 2; ++o) {
    const auto *args = o ? g->outputs() : g->inputs();
    for (uint32_t i = 0; i < len(args); ++i)
      check_argument(sc, args->Get(i)->value_type(), args->Get(i)->value(), depth,
                     path + (o ? ".outputs[" : ".inputs[") + num(i) + "].value");
  }
  for (uint32_t i = 0; i < len(g->input_metadata()); ++i)
    check_metadata(g->input_metadata()->Get(i), path + ".input_metadata[" + num(i) + "]");
  check_metadata(g->output_metadata(), path + ".output_metadata");
  std::unordered_set<std::string> node_names;
  for (uint32_t i = 0; i < len(g->nodes()); ++i) {
    const auto *node = g->nodes()->Get(i);
    const std::string np = path + ".nodes[" + num(i) + "]";
    for (uint32_t j = 0; j < len(node->inputs()); ++j)
      check_argument(sc, node->inputs()->Get(j)->value_type(), node->inputs()->Get(j)->value(), depth,
                     np + ".inputs[" + num(j) + "].value");
    for (uint32_t j = 0; j < len(node->outputs()); ++j)
      check_argument(sc, node->outputs()->Get(j)->value_type(), node->outputs()->Get(j)->value(), depth,
                     np + ".outputs[" + num(j) + "].value");
    check_metadata(node->metadata(), np + ".metadata");
    for (uint32_t j = 0; j < len(node->unpack_metadata()); ++j)
      check_metadata(node->unpack_metadata()->Get(j)->metadata(), np + ".unpack_metadata[" + num(j) + "].metadata");
    node_names.insert(node->name()->str());
  }
  if (node_names.size() != len(g->nodes()))
    invalid("duplicate node names", path + ".nodes", num(len(g->nodes())) + " unique names", num(node_names.size()));
  return sc;
}

void Validator::check_metadata(const NodeMetadata *meta, const std::string &path) {
  if (!meta) return;
  if (meta->custom()) check_map(meta->custom(), 1, false, path + ".custom");
  // extra sorted by key: pt2f_keys, generated; extra keys' classes: the string walk
}

[[noreturn]] void Validator::undeclared(const char *what, const flatbuffers::String *name, const std::string &path) {
  invalid(std::string(what) + " '" + s(name) + "' is not declared in this graph", path,
          "a name from the graph's values", s(name));
}

template <class L>
void Validator::optional_names(const L *list, const std::unordered_set<std::string> &scope, const char *what,
                               const std::string &path) {
  for (uint32_t i = 0; i < len(list->items()); ++i) {
    const auto *name = list->items()->Get(i)->name();
    if (name && !scope.count(name->str())) undeclared(what, name, path + ".items[" + num(i) + "].name");
  }
}

void Validator::check_argument(const Scope &sc, ArgumentValue type, const void *v, uint32_t depth,
                               const std::string &path) {
  using A = ArgumentValue;
  auto opt = [&](const flatbuffers::String *name, const std::unordered_set<std::string> &scope, const char *what) {
    if (name && !scope.count(name->str())) undeclared(what, name, path + ".name");
  };
  switch (type) {
    case A::NONE: invalid("union value is missing", path);
    case A::TensorArgument: {
      const auto *a = static_cast<const TensorArgument *>(v);
      if (!a->name() || !sc.tensors.count(a->name()->str())) undeclared("tensor", a->name(), path + ".name");
      return;
    }
    case A::OptionalTensorArgument: opt(static_cast<const OptionalTensorArgument *>(v)->name(), sc.tensors, "tensor"); return;
    case A::SymIntArgument: opt(static_cast<const SymIntArgument *>(v)->name(), sc.sym_ints, "SymInt"); return;
    case A::SymFloatArgument: opt(static_cast<const SymFloatArgument *>(v)->name(), sc.sym_floats, "SymFloat"); return;
    case A::SymBoolArgument: opt(static_cast<const SymBoolArgument *>(v)->name(), sc.sym_bools, "SymBool"); return;
    case A::OptionalTensorListArgument:
      optional_names(static_cast<const OptionalTensorListArgument *>(v), sc.tensors, "tensor", path);
      return;
    case A::SymIntListArgument: optional_names(static_cast<const SymIntListArgument *>(v), sc.sym_ints, "SymInt", path); return;
    case A::SymFloatListArgument:
      optional_names(static_cast<const SymFloatListArgument *>(v), sc.sym_floats, "SymFloat", path);
      return;
    case A::SymBoolListArgument:
      optional_names(static_cast<const SymBoolListArgument *>(v), sc.sym_bools, "SymBool", path);
      return;
    case A::TensorListArgument: {
      const auto *names = static_cast<const TensorListArgument *>(v)->names();
      for (uint32_t i = 0; i < len(names); ++i)
        if (!sc.tensors.count(names->Get(i)->str())) undeclared("tensor", names->Get(i), path + ".names[" + num(i) + "]");
      return;
    }
    case A::NestedTensorListArgument: {
      const auto *lists = static_cast<const NestedTensorListArgument *>(v)->lists();
      for (uint32_t i = 0; i < len(lists); ++i) {
        const auto *names = lists->Get(i)->names();
        for (uint32_t j = 0; j < len(names); ++j)
          if (!sc.tensors.count(names->Get(j)->str()))
            undeclared("tensor", names->Get(j), path + ".lists[" + num(i) + "].names[" + num(j) + "]");
      }
      return;
    }
    case A::CustomObjArgument: {
      const auto *a = static_cast<const CustomObjArgument *>(v);
      if (!a->name() || !sc.custom_objs.count(a->name()->str())) undeclared("custom object", a->name(), path + ".name");
      return;
    }
    case A::TokenArgument:
      return;
    case A::GraphArgument: {
      const auto *a = static_cast<const GraphArgument *>(v);
      check_metadata(a->metadata(), path + ".metadata");
      check_graph(a->graph(), depth + 1, path + ".graph");
      return;
    }
    case A::TreeSpecArgument: {  // 1.1: a flat_apply node's spec, fetched with get_attr
      const auto *a = static_cast<const TreeSpecArgument *>(v);
      check_metadata(a->metadata(), path + ".metadata");
      check_tree_spec(a->spec(), 0, path + ".spec");
      return;
    }
    case A::MixedListArgument: {  // 1.1: each item is a whole Argument, in this graph's scope
      const auto *items = static_cast<const MixedListArgument *>(v)->items();
      for (uint32_t i = 0; i < len(items); ++i) {
        const auto *item = items->Get(i);
        check_argument(sc, item->value_type(), item->value(), depth, path + ".items[" + num(i) + "].value");
      }
      return;
    }
    case A::StringToArgumentMapArgument: {
      const auto *entries = static_cast<const StringToArgumentMapArgument *>(v)->entries();
      for (uint32_t i = 0; i < len(entries); ++i) {
        const auto *val = entries->Get(i)->value();
        const std::string ep = path + ".entries[" + num(i) + "].value";
        if (!val) invalid("required field is missing", ep);
        check_argument(sc, val->value_type(), val->value(), depth, ep + ".value");
      }
      return;
    }
    default: return;
  }
}

}  // namespace validation
}  // namespace pt2f
