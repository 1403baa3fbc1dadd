// validate() part 1: every string field of every table reachable from Package, in the class its field
// declares (SPEC.md §9; a generic walk over the binary schema, classes from pt2format_strings.h).
#include <string>
#include <unordered_map>

#include "pt2f/json_text.h"
#include "pt2f/schema.h"
#include "pt2f/validate.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {
namespace {

using reflection::BaseType;
using strings::StringClass;

const std::unordered_map<std::string, StringClass> &field_classes() {
  static const auto *m = [] {
    auto *out = new std::unordered_map<std::string, StringClass>();
    for (const auto *e = strings::kFieldClasses; e->table; ++e) (*out)[std::string(e->table) + "." + e->field] = e->cls;
    return out;
  }();
  return *m;
}

class StringWalker {
 public:
  StringWalker() : s_(binary_schema()) {}

  void table(const flatbuffers::Table *t, const reflection::Object &obj, const std::string &path) {
    const std::string owner = short_name(obj.name());
    for (const reflection::Field *f : *obj.fields()) {
      if (f->deprecated()) continue;
      const BaseType bt = f->type()->base_type();
      const std::string fpath = path.empty() ? f->name()->str() : path + "." + f->name()->str();
      if (bt == BaseType::String) {
        const auto *str = t->GetPointer<const flatbuffers::String *>(f->offset());
        if (str) check(owner, *f, str, fpath);
      } else if (bt == BaseType::Obj) {
        const reflection::Object &sub = *s_.objects()->Get(uint32_t(f->type()->index()));
        if (sub.is_struct()) continue;
        const auto *child = t->GetPointer<const flatbuffers::Table *>(f->offset());
        if (child) table(child, sub, fpath);
      } else if (bt == BaseType::Union) {
        const auto *tf = obj.fields()->LookupByKey((f->name()->str() + "_type").c_str());
        const uint8_t tv = tf ? t->GetField<uint8_t>(tf->offset(), 0) : 0;
        if (!tv) continue;
        const auto *ev = s_.enums()->Get(uint32_t(f->type()->index()))->values()->LookupByKey(tv);
        const auto *child = t->GetPointer<const flatbuffers::Table *>(f->offset());
        // As pt2format's decoders, before any invariant: a member this reader does not know is a
        // newer minor's (VersionError, SPEC.md §8.2); a type without its member is damage.
        if (!ev || !ev->union_type() || ev->union_type()->index() < 0)
          fail(ErrorKind::Version,
               "union member index " + num(tv) + " unknown to this reader: defined by a newer minor (SPEC.md section 8)",
               fpath + "_type", "a member of " + short_name(s_.enums()->Get(uint32_t(f->type()->index()))->name()),
               num(tv));
        if (!child) fail(ErrorKind::Encoding, "union type " + ev->name()->str() + " without a member", fpath);
        table(child, *s_.objects()->Get(uint32_t(ev->union_type()->index())), fpath);
      } else if (bt == BaseType::Vector) {
        const BaseType et = f->type()->element();
        const auto *v = t->GetPointer<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *>(f->offset());
        if (!v) continue;
        if (et == BaseType::String) {
          const auto *sv = reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>> *>(v);
          for (uint32_t i = 0; i < sv->size(); ++i) check(owner, *f, sv->Get(i), at(fpath, i));
        } else if (et == BaseType::Obj) {
          const reflection::Object &sub = *s_.objects()->Get(uint32_t(f->type()->index()));
          if (sub.is_struct()) continue;
          for (uint32_t i = 0; i < v->size(); ++i) table(v->Get(i), sub, at(fpath, i));
          if (owner == "NodeMetadata" && f->name()->str() == "extra") extra_keys(v, fpath);
        }
      }
    }
  }

 private:
  void check(const std::string &owner, const reflection::Field &f, const flatbuffers::String *str,
             const std::string &path) {
    if (!valid_utf8(str->c_str(), str->size()))
      fail(ErrorKind::Encoding, "string is not valid UTF-8", path, "UTF-8");
    const std::string key = owner + "." + f.name()->str();
    const auto it = field_classes().find(key);
    if (it == field_classes().end())
      invalid("reader build is inconsistent: string field without a class in pt2format_strings.h", path, "", key);
    check_string_class(it->second, str->string_view(), key);
  }

  // NodeMetadata.extra keys: identifiers that torch does not interpret itself (SPEC.md §9).
  void extra_keys(const flatbuffers::Vector<flatbuffers::Offset<flatbuffers::Table>> *v, const std::string &path) {
    const auto *entries = reinterpret_cast<const flatbuffers::Vector<flatbuffers::Offset<pt2format::StringEntry>> *>(v);
    for (uint32_t i = 0; i < entries->size(); ++i) {
      const auto *k = entries->Get(i)->key();
      if (!k) continue;
      const std::string kp = at(path, i) + ".key";
      check_string_class(StringClass::identifier, k->string_view(), kp);
      for (const char *const *r = strings::kReservedNodeMetaKeys; *r; ++r)
        if (k->string_view() == *r)
          fail(ErrorKind::StringClass, "extra metadata key '" + k->str() + "' is reserved for structured metadata",
               kp, "a key torch does not interpret", k->str());
    }
  }

  const reflection::Schema &s_;
};

}  // namespace

void check_string_classes(const File &file) {
  StringWalker().table(reinterpret_cast<const flatbuffers::Table *>(file.package()), *binary_schema().root_table(), "");
}

}  // namespace validation
}  // namespace pt2f
