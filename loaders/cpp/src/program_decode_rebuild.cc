// The rebuild of a parsed program as FlatBuffers, field by field, walking the binary schema: every value
// checked against its field's type (see program_decode.h for the outcomes).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "flatbuffers/flatbuffers.h"
#include "pt2f/error.h"
#include "pt2f/schema.h"
#include "program_decode_tree.h"

namespace pt2f {
namespace decode {
namespace {

// SPEC.md §4: a NaN other than the canonical quiet one (0x7ff8000000000000) is spelled
// "nan:0x" + its 16 lowercase hex bits, so JSON keeps NaN payloads; one spelling per value.
bool nan_of_spelling(const std::string &s, uint64_t *bits) {
  if (s.size() != 22 || s.compare(0, 6, "nan:0x") != 0) return false;
  uint64_t b = 0;
  for (size_t i = 6; i < s.size(); ++i) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9' ? c - '0' : (c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1);
    if (d < 0) return false;
    b = (b << 4) | uint64_t(d);
  }
  const bool is_nan = (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull && (b & 0x000fffffffffffffull) != 0;
  if (!is_nan || b == 0x7ff8000000000000ull) return false;
  *bits = b;
  return true;
}

using reflection::BaseType;

// "pt2format.Node" -> "Node"
std::string short_name(const flatbuffers::String *name) {
  const std::string n = name->str();
  const size_t dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(dot + 1);
}

size_t scalar_size(BaseType t) {
  switch (t) {
    case reflection::UType: case reflection::Bool: case reflection::Byte: case reflection::UByte: return 1;
    case reflection::Short: case reflection::UShort: return 2;
    case reflection::Int: case reflection::UInt: case reflection::Float: return 4;
    case reflection::Long: case reflection::ULong: case reflection::Double: return 8;
    default: return 0;
  }
}

class Rebuilder {
 public:
  Rebuilder(bool json, uint32_t max_depth) : s_(binary_schema()), json_(json), max_depth_(max_depth) {}

  std::vector<uint8_t> run(const Val &root) {
    const flatbuffers::uoffset_t off = table(root, *s_.root_table(), 1);
    fbb_.Finish(flatbuffers::Offset<void>(off), "P2FP");
    return std::vector<uint8_t>(fbb_.GetBufferPointer(), fbb_.GetBufferPointer() + fbb_.GetSize());
  }

 private:
  struct Step {
    std::string name;
    int64_t index;
  };

  std::string path() const {
    std::string p;
    for (const Step &s : path_) {
      if (s.index >= 0) {
        p += "[" + std::to_string(s.index) + "]";
      } else {
        if (!p.empty()) p += '.';
        p += s.name;
      }
    }
    return p;
  }
  [[noreturn]] void wrong(const char *expected, const Val &v) {
    fail(ErrorKind::Encoding, "wrong type", path(), expected, v.type_name());
  }

  // The value of field `name` of a JSON object, or nullptr (absent or null).
  static const Val *member(const Val &obj, const std::string &name) {
    for (const auto &m : obj.members)
      if (m.first == name) return m.second.t == Val::Nil ? nullptr : &m.second;
    return nullptr;
  }
  // MessagePack: position `id` of a table array, or nullptr (absent or nil).
  static const Val *position(const Val &arr, uint32_t id) {
    return id < arr.items.size() && arr.items[id].t != Val::Nil ? &arr.items[id] : nullptr;
  }

  // Schema fields of a table indexed by id (MessagePack positions).
  const std::vector<const reflection::Field *> &by_id(const reflection::Object &obj) {
    auto it = by_id_.find(&obj);
    if (it != by_id_.end()) return it->second;
    std::vector<const reflection::Field *> v;
    for (const auto *f : *obj.fields()) {
      if (f->id() >= v.size()) v.resize(f->id() + 1, nullptr);
      v[f->id()] = f;
    }
    return by_id_.emplace(&obj, std::move(v)).first->second;
  }

  // The little-endian bits of scalar `v` as a field of base type `bt` (enum `enum_index` or -1).
  uint64_t scalar(const Val &v, BaseType bt, int enum_index) {
    if (bt == reflection::Bool) {
      if (v.t != Val::Bool) wrong("bool", v);
      return v.b ? 1 : 0;
    }
    if (bt == reflection::Float || bt == reflection::Double) {
      double d;
      if (v.t == Val::Float) {
        d = v.f;
      } else if (v.t == Val::Int) {
        if (v.big) {
          d = std::strtod(v.s.c_str(), nullptr);
          if (std::isinf(d)) fail(ErrorKind::Encoding, "integer too large for a float", path(), "float", v.s);
        } else {
          d = v.neg ? double(v.i) : double(v.u);
        }
      } else if (json_ && v.t == Val::Str) {
        uint64_t bits;
        if (v.s == "nan") bits = 0x7ff8000000000000ull;
        else if (v.s == "inf") bits = 0x7ff0000000000000ull;
        else if (v.s == "-inf") bits = 0xfff0000000000000ull;
        else if (!nan_of_spelling(v.s, &bits))
          fail(ErrorKind::Encoding, "wrong float spelling", path(),
               "\"nan\", \"nan:0x<16 hex digits>\", \"inf\" or \"-inf\"", v.s);
        std::memcpy(&d, &bits, 8);
      } else {
        wrong("float", v);
      }
      if (bt == reflection::Double) {
        uint64_t bits;
        std::memcpy(&bits, &d, 8);
        return bits;
      }
      const float x = float(d);
      uint32_t bits;
      std::memcpy(&bits, &x, 4);
      return bits;
    }
    // Integers and enums.
    int64_t lo;
    uint64_t hi;
    switch (bt) {
      case reflection::Byte: lo = INT8_MIN; hi = INT8_MAX; break;
      case reflection::UByte: case reflection::UType: lo = 0; hi = UINT8_MAX; break;
      case reflection::Short: lo = INT16_MIN; hi = INT16_MAX; break;
      case reflection::UShort: lo = 0; hi = UINT16_MAX; break;
      case reflection::Int: lo = INT32_MIN; hi = INT32_MAX; break;
      case reflection::UInt: lo = 0; hi = UINT32_MAX; break;
      case reflection::Long: lo = INT64_MIN; hi = INT64_MAX; break;
      case reflection::ULong: lo = 0; hi = UINT64_MAX; break;
      default: fail(ErrorKind::Validation, "unsupported scalar type in schema", path());
    }
    if (json_ && enum_index >= 0 && v.t == Val::Str) {
      const auto *en = s_.enums()->Get(uint32_t(enum_index));
      for (const auto *ev : *en->values())
        if (ev->name()->str() == v.s) return uint64_t(ev->value());
      fail(ErrorKind::Version, "enum value name unknown to this reader: defined by a newer minor (SPEC.md section 8)",
           path(), "a value of " + short_name(en->name()), v.s);
    }
    if (v.t != Val::Int) wrong("integer", v);
    const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    if (v.big) fail(ErrorKind::Encoding, "integer out of range", path(), range, v.s);
    if (v.neg ? v.i < lo : v.u > hi)
      fail(ErrorKind::Encoding, "integer out of range", path(), range,
           v.neg ? std::to_string(v.i) : std::to_string(v.u));
    return v.neg ? uint64_t(v.i) : v.u;
  }

  // A struct's bytes, fields at their offsets.
  void struct_bytes(const Val &v, const reflection::Object &obj, uint8_t *out, uint32_t depth) {
    if (depth > max_depth_)
      fail(ErrorKind::Limit, "nesting deeper than max_depth", path(), "<= " + std::to_string(max_depth_),
           std::to_string(depth));
    const auto *fields = obj.fields();
    if (json_) {
      if (v.t != Val::Map) wrong("object", v);
      if (v.members.size() != fields->size()) fail(ErrorKind::Encoding, "unknown or missing struct field", path());
    } else {
      if (v.t != Val::Arr) wrong("array", v);
      if (v.items.size() != fields->size())
        fail(ErrorKind::Encoding, "struct has the wrong number of fields", path(), std::to_string(fields->size()),
             std::to_string(v.items.size()));
    }
    // Declaration order is field id order.
    for (const auto *f : *fields) {
      const Val *x = nullptr;
      if (json_) {
        for (const auto &m : v.members)
          if (m.first == f->name()->str()) x = &m.second;
        if (!x) fail(ErrorKind::Encoding, "struct field is missing", path(), f->name()->str());
      } else {
        x = &v.items[f->id()];
      }
      path_.push_back({f->name()->str(), -1});
      const BaseType bt = f->type()->base_type();
      if (bt == reflection::Obj) {
        struct_bytes(*x, *s_.objects()->Get(uint32_t(f->type()->index())), out + f->offset(), depth + 1);
      } else {
        const uint64_t bits = scalar(*x, bt, f->type()->index());
        std::memcpy(out + f->offset(), &bits, scalar_size(bt));
      }
      path_.pop_back();
    }
  }

  struct Pending {
    flatbuffers::voffset_t slot;
    enum Kind { Scalar, Offset, Struct } kind;
    size_t size;  // Scalar: bytes; Struct: bytesize
    size_t align;
    uint64_t bits;
    flatbuffers::uoffset_t off;
    std::vector<uint8_t> bytes;
  };

  flatbuffers::uoffset_t vector(const Val &v, const reflection::Field &f, uint32_t depth) {
    const auto *type = f.type();
    const BaseType et = type->element();
    if (!json_ && et == reflection::UByte && v.t == Val::Bin)
      return fbb_.CreateVector(reinterpret_cast<const uint8_t *>(v.s.data()), v.s.size()).o;
    if (v.t != Val::Arr) wrong(json_ ? "array" : (et == reflection::UByte ? "bin" : "array"), v);
    const size_t n = v.items.size();
    const size_t ss = scalar_size(et);
    if (ss) {
      std::vector<uint64_t> bits(n);
      for (size_t k = 0; k < n; ++k) {
        path_.push_back({"", int64_t(k)});
        bits[k] = scalar(v.items[k], et, type->index());
        path_.pop_back();
      }
      fbb_.StartVector(n, ss, ss);
      for (size_t k = n; k-- > 0;) {
        fbb_.Align(ss);
        fbb_.PushBytes(reinterpret_cast<const uint8_t *>(&bits[k]), ss);
      }
      return fbb_.EndVector(n);
    }
    if (et == reflection::String) {
      std::vector<flatbuffers::uoffset_t> offs(n);
      for (size_t k = 0; k < n; ++k) {
        if (v.items[k].t != Val::Str) {
          path_.push_back({"", int64_t(k)});
          wrong("string", v.items[k]);
        }
        offs[k] = fbb_.CreateString(v.items[k].s.data(), v.items[k].s.size()).o;
      }
      return offsets(offs);
    }
    if (et != reflection::Obj) fail(ErrorKind::Validation, "unsupported vector element type in schema", path());
    const reflection::Object &sub = *s_.objects()->Get(uint32_t(type->index()));
    if (sub.is_struct()) {
      std::vector<uint8_t> all(n * sub.bytesize());
      for (size_t k = 0; k < n; ++k) {
        path_.push_back({"", int64_t(k)});
        struct_bytes(v.items[k], sub, all.data() + k * sub.bytesize(), depth + 1);
        path_.pop_back();
      }
      fbb_.StartVector(n, sub.bytesize(), sub.minalign());
      for (size_t k = n; k-- > 0;) fbb_.PushBytes(all.data() + k * sub.bytesize(), sub.bytesize());
      return fbb_.EndVector(n);
    }
    std::vector<flatbuffers::uoffset_t> offs(n);
    for (size_t k = 0; k < n; ++k) {
      path_.push_back({"", int64_t(k)});
      offs[k] = table(v.items[k], sub, depth + 1);
      path_.pop_back();
    }
    return offsets(offs);
  }

  flatbuffers::uoffset_t offsets(const std::vector<flatbuffers::uoffset_t> &offs) {
    fbb_.StartVector(offs.size(), sizeof(flatbuffers::uoffset_t), sizeof(flatbuffers::uoffset_t));
    for (size_t k = offs.size(); k-- > 0;) fbb_.PushElement(flatbuffers::Offset<void>(offs[k]));
    return fbb_.EndVector(offs.size());
  }

  // A union field: (type index, member offset); index 0 when absent.
  std::pair<uint8_t, flatbuffers::uoffset_t> union_field(const Val *t, const Val *v, const reflection::Field &f,
                                                         uint32_t depth) {
    const auto *un = s_.enums()->Get(uint32_t(f.type()->index()));
    const std::string type_key = f.name()->str() + "_type";
    uint32_t count = 0;  // members, NONE excluded
    for (const auto *ev : *un->values())
      if (ev->value() > 0 && uint32_t(ev->value()) > count) count = uint32_t(ev->value());
    auto type_step = [&] { path_.back().name = type_key; };
    if (!t) {
      if (v) {
        type_step();
        fail(ErrorKind::Encoding, json_ ? "union member without its _type key" : "union member without a type",
             path(), "type", "nil");
      }
      return {0, 0};
    }
    int64_t idx = -1;
    if (json_ && t->t == Val::Str) {
      if (t->s == "NONE") {
        idx = 0;
      } else {
        for (const auto *ev : *un->values())
          if (ev->value() > 0 && ev->name()->str() == t->s) idx = ev->value();
        if (idx < 0) {
          type_step();
          fail(ErrorKind::Version, "union member unknown to this reader: defined by a newer minor (SPEC.md section 8)",
               path(), "a member of " + short_name(un->name()), t->s);
        }
      }
    } else if (t->t == Val::Int) {
      if (t->big || t->neg || t->u > 255) {
        type_step();
        fail(ErrorKind::Encoding, "union type index out of range", path(), "0..255", t->big ? t->s : "out of range");
      }
      idx = int64_t(t->u);
      if (uint64_t(idx) > count) {
        type_step();
        fail(ErrorKind::Version,
             "union member index " + std::to_string(idx) +
                 " unknown to this reader: defined by a newer minor (SPEC.md section 8)",
             path(), "0.." + std::to_string(count), std::to_string(idx));
      }
    } else {
      type_step();
      wrong("union type", *t);
    }
    if (idx == 0) {
      if (v && json_) fail(ErrorKind::Encoding, "union member given with type NONE", path());
      return {0, 0};
    }
    const auto *ev = un->values()->LookupByKey(idx);
    if (!ev || !ev->union_type() || ev->union_type()->index() < 0)
      fail(ErrorKind::Version, "union member unknown to this reader", path());
    if (!v) fail(ErrorKind::Encoding, "union type without a member", path(), ev->name()->str(), "nil");
    return {uint8_t(idx), table(*v, *s_.objects()->Get(uint32_t(ev->union_type()->index())), depth + 1)};
  }

  flatbuffers::uoffset_t table(const Val &v, const reflection::Object &obj, uint32_t depth) {
    if (depth > max_depth_)
      fail(ErrorKind::Limit, "nesting deeper than max_depth", path(), "<= " + std::to_string(max_depth_),
           std::to_string(depth));
    if (json_ ? v.t != Val::Map : v.t != Val::Arr) wrong(json_ ? "object" : "array", v);
    std::vector<Pending> pending;
    for (const auto *f : *obj.fields()) {
      const BaseType bt = f->type()->base_type();
      if (f->deprecated() || bt == reflection::UType) continue;  // a union's type goes with its union
      const std::string name = f->name()->str();
      path_.push_back({name, -1});
      if (bt == reflection::Union) {
        const Val *t = json_ ? member(v, name + "_type") : (f->id() > 0 ? position(v, f->id() - 1) : nullptr);
        const Val *m = json_ ? member(v, name) : position(v, f->id());
        const auto u = union_field(t, m, *f, depth);
        if (u.first) {
          const auto *tf = obj.fields()->LookupByKey((name + "_type").c_str());
          pending.push_back({tf->offset(), Pending::Scalar, 1, 1, u.first, 0, {}});
          pending.push_back({f->offset(), Pending::Offset, 0, 0, 0, u.second, {}});
        }
        path_.pop_back();
        continue;
      }
      const Val *x = json_ ? member(v, name) : position(v, f->id());
      if (!x) {
        if (f->required()) fail(ErrorKind::Encoding, "required field is missing", path(), name, "nil");
        path_.pop_back();
        continue;
      }
      if (scalar_size(bt)) {
        pending.push_back({f->offset(), Pending::Scalar, scalar_size(bt), scalar_size(bt),
                           scalar(*x, bt, f->type()->index()), 0, {}});
      } else if (bt == reflection::String) {
        if (x->t != Val::Str) wrong("string", *x);
        pending.push_back({f->offset(), Pending::Offset, 0, 0, 0, fbb_.CreateString(x->s.data(), x->s.size()).o, {}});
      } else if (bt == reflection::Obj) {
        const reflection::Object &sub = *s_.objects()->Get(uint32_t(f->type()->index()));
        if (sub.is_struct()) {
          Pending p{f->offset(), Pending::Struct, size_t(sub.bytesize()), size_t(sub.minalign()), 0, 0, {}};
          p.bytes.assign(sub.bytesize(), 0);
          struct_bytes(*x, sub, p.bytes.data(), depth + 1);
          pending.push_back(std::move(p));
        } else {
          pending.push_back({f->offset(), Pending::Offset, 0, 0, 0, table(*x, sub, depth + 1), {}});
        }
      } else if (bt == reflection::Vector) {
        pending.push_back({f->offset(), Pending::Offset, 0, 0, 0, vector(*x, *f, depth), {}});
      } else {
        fail(ErrorKind::Validation, "unsupported field type in schema", path());
      }
      path_.pop_back();
    }
    const flatbuffers::uoffset_t start = fbb_.StartTable();
    for (const Pending &p : pending) {
      switch (p.kind) {
        case Pending::Scalar:
          fbb_.Align(p.size);
          fbb_.PushBytes(reinterpret_cast<const uint8_t *>(&p.bits), p.size);
          fbb_.TrackField(p.slot, fbb_.GetSize());
          break;
        case Pending::Offset:
          fbb_.AddOffset(p.slot, flatbuffers::Offset<void>(p.off));
          break;
        case Pending::Struct:
          fbb_.Align(p.align);
          fbb_.PushBytes(p.bytes.data(), p.size);
          fbb_.TrackField(p.slot, fbb_.GetSize());
          break;
      }
    }
    return fbb_.EndTable(start);
  }

  const reflection::Schema &s_;
  const bool json_;
  const uint32_t max_depth_;
  flatbuffers::FlatBufferBuilder fbb_;
  std::vector<Step> path_;
  std::unordered_map<const reflection::Object *, std::vector<const reflection::Field *>> by_id_;
};

}  // namespace

std::vector<uint8_t> rebuild_as_flatbuffers(const Val &root, bool json, uint32_t max_depth) {
  return Rebuilder(json, max_depth).run(root);
}

}  // namespace decode
}  // namespace pt2f
