// Validator, generic Value trees: union set, tensor references in range, bounded depth, objects only in a
// tensor subclass's context; dict keys that torch turns into source are identifiers or attribute paths.
#include <set>
#include <string>
#include <string_view>

#include "pt2f/validate.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {

using strings::StringClass;

// `objects`: EnumValue and ObjectValue may appear (1.1: a tensor subclass's context only). `n_refs`: how
// many tensor rows a TensorRefValue may name (0 in a subclass context, which never holds references).
void Validator::check_value(const Value *v, uint32_t depth, bool identifier_keys, const std::string &path,
                            bool objects, int64_t n_refs) {
  const uint32_t n_tensors = n_refs < 0 ? n_tensors_ : uint32_t(n_refs);
  if (depth > max_depth_)
    fail(ErrorKind::Limit, "value nested too deeply", path, "depth <= " + num(max_depth_), num(depth));
  switch (v->value_type()) {
    case ValueKind::NONE: invalid("union value is missing", path + ".value");
    case ValueKind::ListValue: {
      const auto *items = v->value_as_ListValue()->items();
      for (uint32_t i = 0; i < len(items); ++i)
        check_value(items->Get(i), depth + 1, identifier_keys, path + ".value.items[" + num(i) + "]", objects, n_refs);
      return;
    }
    case ValueKind::MapValue:
      check_map(v->value_as_MapValue(), depth + 1, identifier_keys, path + ".value", objects, n_refs);
      return;
    case ValueKind::TensorRefValue:
      if (v->value_as_TensorRefValue()->tensor() >= n_tensors)
        invalid("tensor index out of range", path + ".value.tensor", "< " + num(n_tensors),
                num(v->value_as_TensorRefValue()->tensor()));
      return;
    case ValueKind::EnumValue:
    case ValueKind::ObjectValue: {
      if (!objects)
        invalid("enum and object values appear only in a tensor subclass's context", path + ".value",
                "a plain value", v->value_type() == ValueKind::EnumValue ? "EnumValue" : "ObjectValue");
      if (v->value_type() == ValueKind::EnumValue) return;
      const auto *fields = v->value_as_ObjectValue()->fields();
      std::set<std::string> names;
      for (uint32_t i = 0; i < len(fields); ++i) {
        const auto *f = fields->Get(i);
        const std::string fp = path + ".value.fields[" + num(i) + "]";
        if (!names.insert(f->name() ? f->name()->str() : std::string()).second)
          invalid("object field names must be unique", fp + ".name");
        if (!f->value()) invalid("required field is missing", fp + ".value");
        check_value(f->value(), depth + 1, identifier_keys, fp, true, n_refs);
      }
      return;
    }
    default: return;
  }
}

void Validator::check_map(const MapValue *m, uint32_t depth, bool identifier_keys, const std::string &path,
                          bool objects, int64_t n_refs) {
  for (uint32_t i = 0; i < len(m->entries()); ++i) {
    const auto *e = m->entries()->Get(i);
    const std::string ep = path + ".entries[" + num(i) + "]";
    if (!e->key()) invalid("required field is missing", ep + ".key");
    check_value(e->key(), depth, identifier_keys, ep + ".key", objects, n_refs);
    if (identifier_keys) check_identifier_key(e->key(), ep + ".key.value");
    if (!e->value()) invalid("required field is missing", ep + ".value");
    check_value(e->value(), depth, identifier_keys, ep + ".value", objects, n_refs);
  }
}

void Validator::check_identifier_key(const Value *key, const std::string &path) {
  if (key->value_type() != ValueKind::StringValue) return;
  const auto *str = key->value_as_StringValue()->value();
  check_string_class(StringClass::identifier, str ? str->string_view() : std::string_view(), path);
}

// 1.1: an nn.Module input's keys name its parameters and buffers: attribute paths such as `lin.weight`.
void Validator::check_module_key(const Value *key, const std::string &path) {
  if (key->value_type() != ValueKind::StringValue)
    invalid("an nn.Module input's keys are parameter and buffer names", path, "a string", "");
  const auto *str = key->value_as_StringValue()->value();
  check_string_class(StringClass::attr_path, str ? str->string_view() : std::string_view(), path + ".value");
}

}  // namespace validation
}  // namespace pt2f
