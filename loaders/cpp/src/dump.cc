// Canonical dump: every non-deprecated field of every table in schema field
// order, keys sorted, defaults filled in from the binary schema.
#include "pt2f/dump.h"

#include <algorithm>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "pt2f/crc32.h"
#include "pt2f/json_text.h"
#include "pt2f/schema.h"

namespace pt2f {
namespace {

using reflection::BaseType;

size_t scalar_size(BaseType t) {
  switch (t) {
    case reflection::UType: case reflection::Bool: case reflection::Byte: case reflection::UByte: return 1;
    case reflection::Short: case reflection::UShort: return 2;
    case reflection::Int: case reflection::UInt: case reflection::Float: return 4;
    case reflection::Long: case reflection::ULong: case reflection::Double: return 8;
    default: return 0;
  }
}

class Dumper {
 public:
  explicit Dumper(std::string &out) : s_(binary_schema()), out_(out) {}

  void table(const flatbuffers::Table *t, const reflection::Object &obj) {
    out_ += '{';
    bool first = true;
    for (const reflection::Field *f : order(obj)) {
      if (!first) out_ += ',';
      first = false;
      key(f->name());
      path_.push_back({f->name()->c_str(), -1});
      field(t, obj, *f);
      path_.pop_back();
    }
    out_ += '}';
  }

 private:
  struct Step {
    const char *name;
    int64_t index;
  };

  [[noreturn]] void fail(ErrorKind kind, const std::string &msg) {
    std::string p;
    for (const Step &s : path_) {
      if (s.index >= 0) {
        p += "[" + std::to_string(s.index) + "]";
      } else {
        if (!p.empty()) p += '.';
        p += s.name;
      }
    }
    Error::Where w;
    w.section = "program";
    w.path = p;
    throw Error(kind, msg, w);
  }

  // Non-deprecated fields sorted by name (code point order of ASCII names).
  const std::vector<const reflection::Field *> &order(const reflection::Object &obj) {
    auto it = order_.find(&obj);
    if (it != order_.end()) return it->second;
    std::vector<const reflection::Field *> v;
    for (const auto *f : *obj.fields())
      if (!f->deprecated()) v.push_back(f);
    std::sort(v.begin(), v.end(), [](const reflection::Field *a, const reflection::Field *b) {
      return a->name()->string_view() < b->name()->string_view();
    });
    return order_.emplace(&obj, std::move(v)).first->second;
  }

  void key(const flatbuffers::String *name) {
    append_json_string(out_, name->c_str(), name->size());
    out_ += ':';
  }

  void string(const flatbuffers::String *s) {
    if (!s) {
      out_ += "null";
      return;
    }
    if (!append_json_string(out_, s->c_str(), s->size())) fail(ErrorKind::Encoding, "string is not valid UTF-8");
  }

  void enum_or_int(int64_t v, int enum_index) {
    if (enum_index >= 0) {
      const auto *ev = s_.enums()->Get(uint32_t(enum_index))->values()->LookupByKey(v);
      if (ev) {
        append_json_string(out_, ev->name()->c_str(), ev->name()->size());
        return;
      }
    }
    append_int(out_, v);
  }

  // A scalar stored at p (little-endian), as the dump spells it.
  void scalar_at(const uint8_t *p, BaseType t, int enum_index) {
    switch (t) {
      case reflection::Bool: out_ += flatbuffers::ReadScalar<uint8_t>(p) ? "true" : "false"; return;
      case reflection::UType:
      case reflection::UByte: enum_or_int(flatbuffers::ReadScalar<uint8_t>(p), enum_index); return;
      case reflection::Byte: enum_or_int(flatbuffers::ReadScalar<int8_t>(p), enum_index); return;
      case reflection::Short: enum_or_int(flatbuffers::ReadScalar<int16_t>(p), enum_index); return;
      case reflection::UShort: enum_or_int(flatbuffers::ReadScalar<uint16_t>(p), enum_index); return;
      case reflection::Int: enum_or_int(flatbuffers::ReadScalar<int32_t>(p), enum_index); return;
      case reflection::UInt: enum_or_int(flatbuffers::ReadScalar<uint32_t>(p), enum_index); return;
      case reflection::Long: enum_or_int(flatbuffers::ReadScalar<int64_t>(p), enum_index); return;
      case reflection::ULong: {
        const uint64_t v = flatbuffers::ReadScalar<uint64_t>(p);
        if (enum_index >= 0 && v <= uint64_t(INT64_MAX))
          enum_or_int(int64_t(v), enum_index);
        else
          append_uint(out_, v);
        return;
      }
      case reflection::Float: append_float_json(out_, double(flatbuffers::ReadScalar<float>(p))); return;
      case reflection::Double: append_float_json(out_, flatbuffers::ReadScalar<double>(p)); return;
      default: fail(ErrorKind::Validation, "unsupported scalar type in schema");
    }
  }

  // An absent scalar field: its schema default.
  void scalar_default(const reflection::Field &f) {
    const BaseType t = f.type()->base_type();
    switch (t) {
      case reflection::Bool: out_ += f.default_integer() ? "true" : "false"; return;
      case reflection::Float:
      case reflection::Double: append_float_json(out_, f.default_real()); return;
      case reflection::ULong:
        if (f.type()->index() < 0) {
          append_uint(out_, uint64_t(f.default_integer()));
          return;
        }
        [[fallthrough]];
      default: enum_or_int(f.default_integer(), f.type()->index());
    }
  }

  void structure(const uint8_t *p, const reflection::Object &obj) {
    out_ += '{';
    bool first = true;
    for (const reflection::Field *f : order(obj)) {
      if (!first) out_ += ',';
      first = false;
      key(f->name());
      const BaseType t = f->type()->base_type();
      if (t == reflection::Obj)
        structure(p + f->offset(), *s_.objects()->Get(uint32_t(f->type()->index())));
      else if (scalar_size(t))
        scalar_at(p + f->offset(), t, f->type()->index());
      else
        fail(ErrorKind::Validation, "unsupported struct member type in schema (arrays)");
    }
    out_ += '}';
  }

  void field(const flatbuffers::Table *t, const reflection::Object &obj, const reflection::Field &f) {
    const auto *type = f.type();
    const BaseType bt = type->base_type();
    const flatbuffers::voffset_t off = f.offset();
    if (scalar_size(bt)) {
      const uint8_t *p = t->GetAddressOf(off);
      if (p)
        scalar_at(p, bt, type->index());
      else
        scalar_default(f);
      return;
    }
    switch (bt) {
      case reflection::String: string(t->GetPointer<const flatbuffers::String *>(off)); return;
      case reflection::Obj: {
        const reflection::Object &sub = *s_.objects()->Get(uint32_t(type->index()));
        if (sub.is_struct()) {
          const uint8_t *p = t->GetStruct<const uint8_t *>(off);
          if (p) structure(p, sub); else out_ += "null";
        } else {
          const auto *child = t->GetPointer<const flatbuffers::Table *>(off);
          if (child) table(child, sub); else out_ += "null";
        }
        return;
      }
      case reflection::Union: {
        // As pt2format's decoder: type NONE is null whatever follows; a type
        // this reader does not know, or a type without its member, is an error.
        const std::string type_name = f.name()->str() + "_type";
        const auto *tf = obj.fields()->LookupByKey(type_name.c_str());
        const uint8_t tv = tf ? t->GetField<uint8_t>(tf->offset(), 0) : 0;
        if (tv == 0) {
          out_ += "null";
          return;
        }
        const auto *ev = s_.enums()->Get(uint32_t(type->index()))->values()->LookupByKey(tv);
        if (!ev || !ev->union_type() || ev->union_type()->index() < 0)
          fail(ErrorKind::Encoding, "union type index " + std::to_string(tv) +
                                        " unknown to this reader (newer schema minor?)");
        const auto *child = t->GetPointer<const flatbuffers::Table *>(off);
        if (!child) fail(ErrorKind::Encoding, "union type " + ev->name()->str() + " without a member");
        table(child, *s_.objects()->Get(uint32_t(ev->union_type()->index())));
        return;
      }
      case reflection::Vector: vector(t, f); return;
      default: fail(ErrorKind::Validation, "unsupported field type in schema (arrays, 64-bit vectors)");
    }
  }

  void vector(const flatbuffers::Table *t, const reflection::Field &f) {
    const auto *type = f.type();
    const auto *v = t->GetPointer<const flatbuffers::Vector<uint8_t> *>(f.offset());
    const uint32_t n = v ? v->size() : 0;
    out_ += '[';
    if (n == 0) {
      out_ += ']';
      return;
    }
    const uint8_t *elems = v->Data();
    const BaseType et = type->element();
    const size_t ss = scalar_size(et);
    const reflection::Object *sub =
        et == reflection::Obj ? s_.objects()->Get(uint32_t(type->index())) : nullptr;
    if (et == reflection::Union || et == reflection::UType || (!ss && et != reflection::String && !sub))
      fail(ErrorKind::Validation, "unsupported vector element type in schema (vectors of unions)");
    for (uint32_t i = 0; i < n; ++i) {
      if (i) out_ += ',';
      path_.push_back({nullptr, int64_t(i)});
      if (ss) {
        scalar_at(elems + size_t(i) * ss, et, type->index());
      } else if (et == reflection::String) {
        const uint8_t *p = elems + size_t(i) * 4;
        string(reinterpret_cast<const flatbuffers::String *>(p + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(p)));
      } else if (sub->is_struct()) {
        structure(elems + size_t(i) * sub->bytesize(), *sub);
      } else {
        const uint8_t *p = elems + size_t(i) * 4;
        table(reinterpret_cast<const flatbuffers::Table *>(p + flatbuffers::ReadScalar<flatbuffers::uoffset_t>(p)),
              *sub);
      }
      path_.pop_back();
    }
    out_ += ']';
  }

  const reflection::Schema &s_;
  std::string &out_;
  std::vector<Step> path_;
  std::unordered_map<const reflection::Object *, std::vector<const reflection::Field *>> order_;
};

void ensure_schema_consistent() {
  static const bool ok = [] {
    check_schema_matches_generated();
    return true;
  }();
  (void)ok;
}

}  // namespace

void append_package_json(std::string &out, const pt2format::Package *package) {
  ensure_schema_consistent();
  Dumper d(out);
  d.table(reinterpret_cast<const flatbuffers::Table *>(package), *binary_schema().root_table());
}

std::string canonical_dump(const File &file) {
  std::string out = "{\"package\":";
  try {
    append_package_json(out, file.package());
  } catch (const Error &e) {
    throw e.with_context(file.path());
  }
  out += ",\"storage_crc32\":[";
  const auto *storages = file.package()->storages();
  const uint32_t n = storages ? storages->size() : 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i) out += ',';
    const Bytes b = file.storage_bytes(i);
    char buf[16];
    std::snprintf(buf, sizeof buf, "\"0x%08x\"", crc32(b.data, b.size));
    out += buf;
  }
  out += "]}\n";
  return out;
}

}  // namespace pt2f
