// validate() part: a file's label is not older than its content (SPEC.md §8.1). A field that is
// present (not its default, not an empty vector), an enum value, a union member or a feature bit
// defined by a newer minor than the file's format_version is a ValidationError naming it, its path
// and the minor that defines it, as pt2format/_validate/label.py says: every reader of the labelled
// minor would read the file without it, and the canonical dump would drop it. Names newer than this
// reader are §8.2's business; a file labelled with this reader's minor is not walked.
#include <string>
#include <unordered_map>
#include <vector>

#include "pt2f/schema.h"
#include "pt2format_container.h"
#include "pt2format_minors.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {
namespace {

using reflection::BaseType;

// A field path kept as links on the walk's stack, written out only for the name found.
struct Link {
  const Link *up;
  std::string field;
  int64_t index;
};

std::string path_of(const Link *l) {
  std::vector<const Link *> chain;
  for (; l; l = l->up) chain.push_back(l);
  std::string out;
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    if (!out.empty()) out += '.';
    out += (*it)->field;
    if ((*it)->index >= 0) out += "[" + snum((*it)->index) + "]";
  }
  return out;
}

[[noreturn]] void older_than_label(const std::string &what, uint16_t since, uint16_t label, const std::string &path) {
  const std::string major = num(minors::kSchemaMajor);
  invalid(what + " is defined by format " + major + "." + num(since) +
              ", newer than the file's format_version, which a reader of the labelled minor does not know "
              "(SPEC.md §8.1)",
          path, "format_version " + major + "." + num(since) + " or newer", major + "." + num(label));
}

// A scalar read by its schema type (reflection.cpp's GetAny* helpers are not linked into the reader).
template <class Read>
int64_t as_int(BaseType t, Read read) {
  switch (t) {
    case BaseType::Byte: return read(int8_t());
    case BaseType::Short: return read(int16_t());
    case BaseType::UShort: return read(uint16_t());
    case BaseType::Int: return read(int32_t());
    case BaseType::UInt: return read(uint32_t());
    case BaseType::Long: return read(int64_t());
    case BaseType::ULong: return int64_t(read(uint64_t()));
    default: return read(uint8_t());  // Bool, UByte, UType
  }
}

int64_t field_int(const flatbuffers::Table *t, const reflection::Field &f) {
  const int64_t d = f.default_integer();
  return as_int(f.type()->base_type(), [&](auto zero) { return int64_t(t->GetField<decltype(zero)>(f.offset(), decltype(zero)(d))); });
}

double field_real(const flatbuffers::Table *t, const reflection::Field &f) {
  const double d = f.default_real();
  return f.type()->base_type() == BaseType::Float ? double(t->GetField<float>(f.offset(), float(d)))
                                                   : t->GetField<double>(f.offset(), d);
}

int64_t element_int(const flatbuffers::VectorOfAny *v, BaseType et, uint32_t i) {
  const uint8_t *p = v->Data();
  return as_int(et, [&](auto zero) { return int64_t(flatbuffers::ReadScalar<decltype(zero)>(p + i * sizeof(zero))); });
}

bool is_scalar(BaseType t) { return t >= BaseType::Bool && t <= BaseType::Double; }
bool is_integer(BaseType t) { return t >= BaseType::Bool && t <= BaseType::ULong; }

class LabelWalker {
 public:
  explicit LabelWalker(uint16_t label) : s_(binary_schema()), label_(label) {}

  void table(const flatbuffers::Table *t, const reflection::Object &obj, const Link *link) {
    const std::vector<uint16_t> &since = field_minors(obj);
    const std::string owner = short_name(obj.name());
    for (const reflection::Field *f : *obj.fields()) {
      const BaseType bt = f->type()->base_type();
      if (f->deprecated() || bt == BaseType::UType) continue;  // a union's type goes with its union
      const Link here{link, f->name()->str(), -1};
      if (since[f->id()] > label_ && present(t, *f)) newer("field " + owner + "." + f->name()->str(), since[f->id()], &here);
      const int index = f->type()->index();
      if (is_integer(bt) && index >= 0) {
        enum_value(field_int(t, *f), index, owner, *f, &here);
      } else if (bt == BaseType::Obj) {
        const reflection::Object &sub = *s_.objects()->Get(uint32_t(index));
        const auto *child = sub.is_struct() ? nullptr : t->GetPointer<const flatbuffers::Table *>(f->offset());
        if (child) table(child, sub, &here);
      } else if (bt == BaseType::Union) {
        const auto *tf = obj.fields()->LookupByKey((f->name()->str() + "_type").c_str());
        const uint8_t tv = tf ? t->GetField<uint8_t>(tf->offset(), 0) : 0;
        const auto *ev = tv ? s_.enums()->Get(uint32_t(index))->values()->LookupByKey(tv) : nullptr;
        if (!ev || !ev->union_type() || ev->union_type()->index() < 0) continue;  // NONE, or refused elsewhere
        const std::string un = short_name(s_.enums()->Get(uint32_t(index))->name());
        const uint16_t m = name_minor(un + "#" + num(tv));
        if (m > label_) {
          const Link type_link{link, f->name()->str() + "_type", -1};
          newer("union member " + ev->name()->str() + " of " + owner + "." + f->name()->str(), m, &type_link);
        }
        const auto *child = t->GetPointer<const flatbuffers::Table *>(f->offset());
        if (child) table(child, *s_.objects()->Get(uint32_t(ev->union_type()->index())), &here);
      } else if (bt == BaseType::Vector) {
        const BaseType et = f->type()->element();
        const auto *v = t->GetPointer<const flatbuffers::VectorOfAny *>(f->offset());
        if (!v) continue;
        if (is_integer(et) && index >= 0) {
          for (uint32_t i = 0; i < v->size(); ++i) {
            const Link item{link, f->name()->str(), int64_t(i)};
            enum_value(element_int(v, et, i), index, owner, *f, &item);
          }
        } else if (et == BaseType::Obj && !s_.objects()->Get(uint32_t(index))->is_struct()) {
          const reflection::Object &sub = *s_.objects()->Get(uint32_t(index));
          const auto *tables = reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(v);
          for (uint32_t i = 0; i < tables->size(); ++i) {
            const Link item{link, f->name()->str(), int64_t(i)};
            table(tables->Get(i), sub, &item);
          }
        }
      }
    }
  }

 private:
  // Present as the writer counts it (pt2format/_content_minor.py): not the default, not an empty vector.
  static bool present(const flatbuffers::Table *t, const reflection::Field &f) {
    const BaseType bt = f.type()->base_type();
    if (bt == BaseType::Union) return false;  // its member is checked by its type
    if (is_scalar(bt)) {
      if (!t->CheckField(f.offset())) return false;
      if (bt == BaseType::Float || bt == BaseType::Double) return field_real(t, f) != f.default_real();
      return field_int(t, f) != f.default_integer();
    }
    if (bt == BaseType::Vector) {
      const auto *v = t->GetPointer<const flatbuffers::VectorOfAny *>(f.offset());
      return v && v->size() > 0;
    }
    return t->CheckField(f.offset()) && t->GetPointer<const uint8_t *>(f.offset()) != nullptr;
  }

  void enum_value(int64_t v, int index, const std::string &owner, const reflection::Field &f, const Link *link) {
    const uint16_t m = name_minor(short_name(s_.enums()->Get(uint32_t(index))->name()) + "#" + snum(v));
    if (m > label_) newer("enum value " + snum(v) + " of " + owner + "." + f.name()->str(), m, link);
  }

  // Minor of each field of `obj`, by field id (cached per table type).
  const std::vector<uint16_t> &field_minors(const reflection::Object &obj) {
    auto it = cache_.find(&obj);
    if (it != cache_.end()) return it->second;
    std::vector<uint16_t> v(obj.fields()->size(), 0);
    const std::string owner = short_name(obj.name());
    for (const reflection::Field *f : *obj.fields()) v[f->id()] = name_minor(owner + "." + f->name()->str());
    return cache_.emplace(&obj, std::move(v)).first->second;
  }

  [[noreturn]] void newer(const std::string &what, uint16_t since, const Link *link) const {
    older_than_label(what, since, label_, path_of(link));
  }

  const reflection::Schema &s_;
  const uint16_t label_;
  std::unordered_map<const reflection::Object *, std::vector<uint16_t>> cache_;
};

}  // namespace

void check_label(const File &file) {
  const auto *fv = file.package()->format_version();
  if (!fv || fv->major() != minors::kSchemaMajor || fv->minor() >= minors::kSchemaMinor) return;
  const uint16_t label = fv->minor();
  const uint64_t features = file.package()->required_features();
  for (const ContainerEntry &e : kFeatureTable)
    if ((features >> e.value & 1) && e.since_minor > label)
      older_than_label("feature bit " + std::string(e.name), e.since_minor, label, "required_features");
  LabelWalker(label).table(reinterpret_cast<const flatbuffers::Table *>(file.package()),
                           *binary_schema().root_table(), nullptr);
}

}  // namespace validation
}  // namespace pt2f
