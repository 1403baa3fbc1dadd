// The embedded binary schema and its cross-check against the generated header.
#include "pt2f/schema.h"

#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "pt2f/error.h"
#include "pt2f/generated.h"
#include "pt2format_minors.h"

// Defined in the build directory by cmake/embed_bfbs.cmake.
extern const unsigned char pt2f_schema_bfbs[];
extern const unsigned long pt2f_schema_bfbs_size;

namespace pt2f {
namespace {

[[noreturn]] void drift(const std::string &what) {
  throw Error(ErrorKind::Validation,
              "reader build is inconsistent: binary schema and generated header disagree: " + what);
}

flatbuffers::ElementaryType elementary(reflection::BaseType t) {
  switch (t) {
    case reflection::Obj:
    case reflection::Union:
      return flatbuffers::ET_SEQUENCE;
    default:
      if (t >= reflection::UType && t <= reflection::String)
        return flatbuffers::ElementaryType(int(t) - int(reflection::UType) + int(flatbuffers::ET_UTYPE));
      drift("unsupported base type " + std::to_string(int(t)));
  }
}

class Checker {
 public:
  explicit Checker(const reflection::Schema &s) : s_(s) {}

  void object(const flatbuffers::TypeTable *tt, const reflection::Object *obj) {
    if (!seen_.insert({tt, obj}).second) return;
    const std::string where = obj->name()->str();
    const bool is_struct = obj->is_struct();
    if (tt->st != (is_struct ? flatbuffers::ST_STRUCT : flatbuffers::ST_TABLE)) drift(where + ": table/struct kind");
    const auto *fields = obj->fields();
    if (tt->num_elems != fields->size()) drift(where + ": field count");
    for (const auto *f : *fields) {
      const size_t i = f->id();
      const std::string fw = where + "." + f->name()->str();
      if (i >= tt->num_elems) drift(fw + ": id");
      // flatc escapes C++ keywords in TypeTable names ("namespace" -> "namespace_").
      if (!tt->names || (f->name()->str() != tt->names[i] && f->name()->str() + "_" != tt->names[i]))
        drift(fw + ": name at id " + std::to_string(i));
      const auto &code = tt->type_codes[i];
      const auto *type = f->type();
      const bool vec = type->base_type() == reflection::Vector;
      const auto base = vec ? type->element() : type->base_type();
      if (bool(code.is_repeating) != vec || code.base_type != elementary(base)) drift(fw + ": type");
      if (is_struct && tt->values[i] != int64_t(f->offset())) drift(fw + ": struct offset");
      if (!is_struct && f->offset() != flatbuffers::FieldIndexToOffset(flatbuffers::voffset_t(i)))
        drift(fw + ": vtable slot");
      if (type->index() >= 0) {
        if (code.sequence_ref < 0) drift(fw + ": missing type reference");
        const flatbuffers::TypeTable *ref = tt->type_refs[code.sequence_ref]();
        if (base == reflection::Obj)
          object(ref, s_.objects()->Get(uint32_t(type->index())));
        else
          enumeration(ref, s_.enums()->Get(uint32_t(type->index())));
      }
    }
    if (is_struct && tt->values[tt->num_elems] != int64_t(obj->bytesize())) drift(where + ": struct size");
  }

  void enumeration(const flatbuffers::TypeTable *tt, const reflection::Enum *en) {
    if (!seen_.insert({tt, en}).second) return;
    const std::string where = en->name()->str();
    const auto *vals = en->values();
    if (tt->num_elems != vals->size()) drift(where + ": value count");
    for (uint32_t i = 0; i < vals->size(); ++i) {
      const auto *v = vals->Get(i);
      const int64_t tt_value = tt->values ? tt->values[i] : int64_t(i);
      if (!tt->names || v->name()->str() != tt->names[i] || tt_value != v->value())
        drift(where + "." + v->name()->str());
      if (en->is_union() && v->value() != 0) {
        const auto *ut = v->union_type();
        if (!ut || ut->base_type() != reflection::Obj || tt->type_codes[i].sequence_ref < 0)
          drift(where + "." + v->name()->str() + ": member type");
        object(tt->type_refs[tt->type_codes[i].sequence_ref](), s_.objects()->Get(uint32_t(ut->index())));
      }
    }
  }

 private:
  const reflection::Schema &s_;
  std::set<std::pair<const void *, const void *>> seen_;
};

}  // namespace

const reflection::Schema &binary_schema() {
  static const reflection::Schema *schema = [] {
    flatbuffers::Verifier v(pt2f_schema_bfbs, size_t(pt2f_schema_bfbs_size));
    if (!reflection::VerifySchemaBuffer(v)) drift("embedded binary schema does not verify");
    return reflection::GetSchema(pt2f_schema_bfbs);
  }();
  return *schema;
}

uint16_t name_minor(const std::string &key) {
  static const auto *names = [] {
    auto *out = new std::unordered_map<std::string, uint16_t>();
    for (const auto *e = minors::kNameMinors; e->owner; ++e)
      (*out)[std::string(e->owner) + (e->field ? "." + std::string(e->field) : "#" + std::to_string(e->value))] =
          e->minor;
    return out;
  }();
  const auto it = names->find(key);
  return it == names->end() ? 0 : it->second;
}

void check_schema_matches_generated() {
  const reflection::Schema &s = binary_schema();
  if (!s.root_table() || s.root_table()->name()->str() != "pt2format.Package") drift("root table");
  if (!s.file_ident() || s.file_ident()->str() != pt2format::PackageIdentifier()) drift("file identifier");
  Checker(s).object(pt2format::PackageTypeTable(), s.root_table());
}

}  // namespace pt2f
