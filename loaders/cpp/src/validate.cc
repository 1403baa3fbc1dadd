// validate(): string classes (a generic walk over the binary schema) and the
// invariants of pt2format/_validate.py (over the generated accessors), so the
// C++ reader refuses exactly what the Python reader refuses, with the same
// error class (SPEC.md §7).
#include "pt2f/validate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "pt2f/json_text.h"
#include "pt2f/schema.h"
#include "pt2f/symexpr.h"
#include "pt2format_limits.h"
#include "pt2format_rules.h"

namespace pt2f {
namespace {

using reflection::BaseType;
using strings::StringClass;

std::string num(uint64_t v) { return std::to_string(v); }
std::string snum(int64_t v) { return std::to_string(v); }

[[noreturn]] void fail(ErrorKind kind, const std::string &msg, const std::string &path,
                       const std::string &expected = "", const std::string &got = "") {
  Error::Where w;
  w.section = "program";
  w.path = path;
  w.expected = expected;
  w.got = got;
  throw Error(kind, msg, w);
}
[[noreturn]] void invalid(const std::string &msg, const std::string &path, const std::string &expected = "",
                          const std::string &got = "") {
  fail(ErrorKind::Validation, msg, path, expected, got);
}

std::string s(const flatbuffers::String *x) { return x ? x->str() : std::string(); }
template <class V>
uint32_t len(const V *v) { return v ? v->size() : 0; }
std::string at(const std::string &path, uint32_t i) { return path + "[" + num(i) + "]"; }

// ---------------------------------------------------------------------------
// String classes: every string field of every table reachable from Package.

std::string short_name(const flatbuffers::String *name) {
  const std::string n = name->str();
  const size_t dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(dot + 1);
}

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

// ---------------------------------------------------------------------------
// Invariants (pt2format/_validate.py, in the same order).

using namespace pt2format;

// Bit 2 (1.1): storages without data (meta-device state); bit 3 (1.1): tensors built from other tensor rows.
constexpr uint32_t kDataAlignment = 64;

bool known_itemsize(ScalarType t, size_t *out) {
  try {
    *out = dtype_itemsize(t);
    return true;
  } catch (const Error &) {
    return false;
  }
}

// Names declared by one graph (per kind), for the argument checks.
struct Scope {
  std::unordered_set<std::string> tensors, sym_ints, sym_floats, sym_bools, custom_objs;
};

class Validator {
 public:
  explicit Validator(const File &file) : file_(file), p_(file.package()) {}

  void run() {
    const auto *fv = p_->format_version();
    if (!fv) invalid("required field is missing", "format_version");
    if (fv->major() > 1 || fv->major() == 0)
      fail(ErrorKind::Version, "format version is not readable by this reader", "format_version", "major 1",
           num(fv->major()));
    if (p_->required_features() & ~kKnownFeatures)
      fail(ErrorKind::UnsupportedFeature, "file requires unknown features", "required_features", "bits within 0xf",
           num(p_->required_features()));
    rules::check_field_rules(p_);  // every pt2f_index/_required/_keys field, generated; the checks below rely on them
    check_data();
    check_extra_files();
    n_tensors_ = len(p_->tensors());
    for (uint32_t i = 0; i < len(p_->programs()); ++i) check_program(p_->programs()->Get(i), at("programs", i));
    for (uint32_t i = 0; i < len(p_->operators()); ++i) {
      const auto *op = p_->operators()->Get(i);
      for (int g = 0; g < 2; ++g) {
        const auto *params = g ? op->returns() : op->parameters();
        for (uint32_t j = 0; j < len(params); ++j)
          if (params->Get(j)->default_value())
            check_value(params->Get(j)->default_value(), 0, false,
                        at("operators", i) + (g ? ".returns" : ".parameters") + "[" + num(j) + "].default_value");
      }
    }
  }

 private:
  void check_data() {
    std::set<std::string> shard_names;  // names unique within each vector: pt2f_keys, generated
    const auto *shards = p_->shard_files();
    for (uint32_t i = 0; i < len(shards); ++i) {
      const auto *sh = shards->Get(i);
      const std::string path = at("shard_files", i);
      check_plain_name(sh->name(), path + ".name");
      shard_names.insert(s(sh->name()));
      const uint32_t n = len(sh->package_id());
      if (n != 0 && n != 16) invalid("shard package_id must be 16 bytes", path + ".package_id", "0 or 16", num(n));
    }
    const auto *externals = p_->external_files();
    for (uint32_t i = 0; i < len(externals); ++i) {
      const auto *ex = externals->Get(i);
      const std::string path = at("external_files", i);
      check_plain_name(ex->name(), path + ".name");
      if (shard_names.count(s(ex->name())))  // one directory holds both kinds of data file
        invalid("duplicate data file name", path + ".name", "", s(ex->name()));
    }
    const auto *segments = p_->segments();
    const Header &h = file_.header();
    for (uint32_t i = 0; i < len(segments); ++i) {
      const auto *seg = segments->Get(i);
      const std::string path = at("segments", i);
      if (seg->external()) {
        if (!(p_->required_features() & kFeatureExternalFiles))
          invalid("segment in an external file but required_features lacks bit 1 (external files)",
                  path + ".external", "", num(seg->external()));
        if (seg->file() || seg->section())
          invalid("a segment in an external file has file and section 0", path, "file 0, section 0",
                  "file " + num(seg->file()) + ", section " + num(seg->section()));
        continue;
      }
      if (seg->file() > 0 && !(p_->required_features() & kFeatureShardFiles))
        invalid("segment in a shard file but required_features lacks bit 0 (shard files)", path + ".file", "",
                num(seg->file()));
      if (seg->file() == 0 && (seg->section() >= h.sections.size() ||
                               h.sections[seg->section()].kind != uint16_t(SectionKind::Data)))
        fail(ErrorKind::Segment, "segment does not name a DATA section of this file", path + ".section",
             "a DATA section index", num(seg->section()));
    }
    const auto *storages = p_->storages();
    for (uint32_t i = 0; i < len(storages); ++i) {
      const auto *st = storages->Get(i);
      const std::string path = at("storages", i);
      const auto *seg = segments->Get(st->segment());
      if (seg->external()) {
        const uint64_t size = externals->Get(seg->external() - 1)->size();
        if (st->offset() > size || st->size() > size - st->offset())
          fail(ErrorKind::Segment, "storage ends past its external file", path, "offset + size <= " + num(size));
      } else if (st->offset() % kDataAlignment) {
        fail(ErrorKind::Segment, "storage offset is not a multiple of 64", path + ".offset", "multiple of 64",
             num(st->offset()));
      }
      if (st->meta_nbytes()) {
        if (st->size())
          invalid("a storage without data (meta_nbytes) holds bytes", path + ".size", "0", num(st->size()));
        if (!(p_->required_features() & kFeatureMetaStorages))
          invalid("storage without data but required_features lacks bit 2 (meta storages)", path + ".meta_nbytes", "",
                  num(st->meta_nbytes()));
      }
      if (seg->file() == 0 && !seg->external()) {
        const uint64_t limit = h.sections[seg->section()].length;
        if (st->offset() > limit || st->size() > limit - st->offset())
          fail(ErrorKind::Segment, "storage ends past its segment", path, "offset + size <= " + num(limit));
      }
    }
    check_no_overlap();
    std::vector<uint32_t> nesting(len(p_->tensors()), 0);
    for (uint32_t i = 0; i < len(p_->tensors()); ++i) {
      if (check_composite(p_->tensors()->Get(i), i, nesting, at("tensors", i))) continue;
      check_tensor(p_->tensors()->Get(i), at("tensors", i));
    }
  }

  void check_plain_name(const flatbuffers::String *name, const std::string &path) {
    const std::string n = s(name);
    if (!name || n.empty() || n == "." || n.find("..") != std::string::npos || n.find('/') != std::string::npos ||
        n.find('\\') != std::string::npos || n.find('\0') != std::string::npos)
      invalid("shard file name must be a plain file name (no '/', '\\', '..' or NUL)", path, "plain file name", n);
  }

  void check_no_overlap() {
    const auto *storages = p_->storages();
    std::unordered_map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, uint32_t>>> by_segment;
    for (uint32_t i = 0; i < len(storages); ++i) {
      const auto *st = storages->Get(i);
      if (st->size()) by_segment[st->segment()].emplace_back(st->offset(), st->offset() + st->size(), i);
    }
    // Report the same pair as Python: sorted by (offset, end, index), first overlap in that order.
    std::vector<uint32_t> segs;
    for (const auto &kv : by_segment) segs.push_back(kv.first);
    std::sort(segs.begin(), segs.end());
    for (uint32_t seg : segs) {
      auto &ranges = by_segment[seg];
      std::sort(ranges.begin(), ranges.end());
      for (size_t k = 1; k < ranges.size(); ++k)
        if (std::get<0>(ranges[k]) < std::get<1>(ranges[k - 1]))
          fail(ErrorKind::Segment, "storages overlap; tensors that alias must share one storage",
               at("storages", std::get<2>(ranges[k])),
               "offset >= " + num(std::get<1>(ranges[k - 1])) + " (end of storages[" + num(std::get<2>(ranges[k - 1])) + "])",
               num(std::get<0>(ranges[k])));
    }
  }

  // 1.1 rows (quantized, sparse, subclass), as pt2format/_validate.py _check_composite: true when the row
  // has no strided view of a storage. Every index a row holds is smaller than its own, so rows never loop.
  bool check_composite(const Tensor *t, uint32_t i, std::vector<uint32_t> &nesting, const std::string &path) {
    constexpr uint64_t kMaxNesting = limits::kMaxTensorNesting;
    const auto *q = t->quantization();
    const bool quantized = t->dtype() == ScalarType::QUINT8 || t->dtype() == ScalarType::QINT8 ||
                           t->dtype() == ScalarType::QINT32;
    if (quantized != (q != nullptr) && !t->subclass())
      invalid("quantized dtypes, and only they, carry quantization parameters", path + ".quantization",
              quantized ? "present" : "absent", q ? "present" : "absent");
    if (q && q->qscheme() != QScheme::PER_TENSOR_AFFINE) {
      for (int k = 0; k < 2; ++k) {
        const uint32_t idx = k ? q->zero_points() : q->scales();
        if (idx >= i)
          invalid("per-channel parameters must refer to an earlier tensor row",
                  path + (k ? ".quantization.zero_points" : ".quantization.scales"), "< " + num(i), num(idx));
        nesting[i] = std::max(nesting[i], nesting[idx] + 1);
      }
      if (nesting[i] > kMaxNesting)
        invalid("tensor parts nest too deeply", path + ".quantization", "<= " + num(kMaxNesting) + " levels",
                num(nesting[i]));
    }
    const bool composite = t->subclass() != nullptr || t->layout() != Layout::STRIDED;
    const uint32_t nparts = len(t->parts());
    if (nparts && !composite) invalid("only sparse and subclass tensors have parts", path + ".parts", "", num(nparts));
    if (!composite) return false;
    if (!(p_->required_features() & 0x8))
      invalid("a sparse or subclass tensor needs required_features bit 3", path + ".required_features", "bit 0x8 set", "");
    if (t->subclass() && t->subclass()->context())
      check_value(t->subclass()->context(), 0, false, path + ".subclass.context", true, 0);
    for (uint32_t j = 0; j < nparts; ++j) {  // names unique: pt2f_keys, generated
      const auto *part = t->parts()->Get(j);
      if (part->tensor() >= i)
        invalid("a part must refer to an earlier tensor row", path + ".parts[" + num(j) + "].tensor", "< " + num(i),
                num(part->tensor()));
      nesting[i] = std::max(nesting[i], nesting[part->tensor()] + 1);
    }
    if (nesting[i] > kMaxNesting)
      invalid("tensor parts nest too deeply", path + ".parts", "<= " + num(kMaxNesting) + " levels", num(nesting[i]));
    return true;
  }

  void check_tensor(const Tensor *t, const std::string &path) {
    const uint32_t n_storages = len(p_->storages());
    if (t->storage() >= n_storages)
      invalid("tensor storage index out of range", path + ".storage", "< " + num(n_storages), num(t->storage()));
    size_t itemsize;
    if (!known_itemsize(t->dtype(), &itemsize))
      invalid("dtype is unspecified or unknown", path + ".dtype", "", num(uint32_t(t->dtype())));
    const uint32_t nd = len(t->sizes()), ns = len(t->strides());
    if (nd != ns) invalid("sizes and strides differ in length", path + ".strides", num(nd), num(ns));
    if (t->storage_offset() < 0) invalid("negative storage_offset", path + ".storage_offset", "", snum(t->storage_offset()));
    __int128 last = t->storage_offset();
    bool empty = false;
    for (uint32_t d = 0; d < nd; ++d) {
      const int64_t size = t->sizes()->Get(d), stride = t->strides()->Get(d);
      if (size < 0) invalid("negative size", path + ".sizes[" + num(d) + "]", "", snum(size));
      if (stride < 0) invalid("negative stride", path + ".strides[" + num(d) + "]", "", snum(stride));
      if (size == 0) {
        empty = true;
        break;
      }
      last += (__int128)(size - 1) * stride;  // < 2^126 in total
    }
    // A storage without data (bit 2): its tensors are meta-device tensors, bounded by meta_nbytes.
    const auto *st = p_->storages()->Get(t->storage());
    uint64_t size = st->size();
    if (st->meta_nbytes()) {
      const auto *dev = t->device();
      const std::string type = dev && dev->type() ? dev->type()->str() : std::string();
      if (type != "meta")
        invalid("a tensor on a storage without data must be on the meta device", path + ".device", "meta",
                dev ? type : "None");
      size = st->meta_nbytes();
    }
    if (empty) return;
    // last < 2^126 and itemsize <= 16, so the product fits in unsigned 128 bits.
    const unsigned __int128 need = (unsigned __int128)(last + 1) * (unsigned)itemsize;
    if (need > (unsigned __int128)size) {
      std::string digits;  // decimal, as Python prints the byte count
      for (unsigned __int128 v = need; v; v /= 10) digits.insert(digits.begin(), char('0' + int(v % 10)));
      invalid("tensor reaches past the end of its storage", path, "<= " + num(size) + " bytes", digits + " bytes");
    }
  }

  void check_extra_files() {
    const auto *files = p_->extra_files();
    for (uint32_t i = 0; i < len(files); ++i) {  // sorted by name: pt2f_keys, generated
      const auto *e = files->Get(i);
      const std::string path = at("extra_files", i);
      const std::string n = s(e->name());
      if (n.empty() || n.size() > limits::kMaxExtraFileNameBytes)
        invalid("extra file name must be 1 to " + num(limits::kMaxExtraFileNameBytes) + " bytes of UTF-8", path + ".name",
                "", num(n.size()));
      for (unsigned char c : n)
        if (c < 0x20 || c == 0x7f) invalid("extra file name must not contain control characters", path + ".name");
    }
  }

  // --- values

  // `objects`: EnumValue and ObjectValue may appear (1.1: a tensor subclass's context only). `n_refs`: how
  // many tensor rows a TensorRefValue may name (0 in a subclass context, which never holds references).
  void check_value(const Value *v, uint32_t depth, bool identifier_keys, const std::string &path,
                   bool objects = false, int64_t n_refs = -1) {
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

  void check_map(const MapValue *m, uint32_t depth, bool identifier_keys, const std::string &path,
                 bool objects = false, int64_t n_refs = -1) {
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

  static void check_identifier_key(const Value *key, const std::string &path) {
    if (key->value_type() != ValueKind::StringValue) return;
    const auto *str = key->value_as_StringValue()->value();
    check_string_class(StringClass::identifier, str ? str->string_view() : std::string_view(), path);
  }

  // 1.1: an nn.Module input's keys name its parameters and buffers: attribute paths such as `lin.weight`.
  static void check_module_key(const Value *key, const std::string &path) {
    if (key->value_type() != ValueKind::StringValue)
      invalid("an nn.Module input's keys are parameter and buffer names", path, "a string", "");
    const auto *str = key->value_as_StringValue()->value();
    check_string_class(StringClass::attr_path, str ? str->string_view() : std::string_view(), path + ".value");
  }

  // --- programs

  void check_program(const Program *p, const std::string &path) {
    n_symbols_ = len(p->symbols());
    n_exprs_ = len(p->sym_exprs());
    check_symbols(p, path);
    for (uint32_t i = 0; i < len(p->range_constraints()); ++i)
      use(p->range_constraints()->Get(i)->expr(), path + ".range_constraints[" + num(i) + "].expr");
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

  void check_tree_spec(const TreeSpec *spec, uint32_t depth, const std::string &path) {
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

  static bool op_known(uint8_t op) {
    for (SymOp v : EnumValuesSymOp())
      if (uint8_t(v) == op) return op != 0;
    return false;
  }

  // (min, max, even) operand counts, as pt2format._symeval.OP_ARITY.
  static void arity(SymOp op, uint32_t *lo, uint32_t *hi, bool *even) {
    static const char *const two[] = {"POW", "FLOOR_DIV", "PYTHON_MOD", "MOD", "CLEAN_DIV", "EQ", "NE", "LT", "LE",
                                      "GT", "GE", "POW_BY_NATURAL", "FLOAT_POW", "INT_TRUE_DIV", "FLOAT_TRUE_DIV",
                                      "ROUND_DECIMAL", "BITWISE_AND", "BITWISE_OR", "BITWISE_XOR", "IS_MULTIPLE",
                                      nullptr};
    static const char *const one[] = {"NOT", "TRUNC_TO_INT", "TRUNC_TO_FLOAT", "FLOOR_TO_INT", "CEIL_TO_INT",
                                      "ROUND_TO_INT", "TO_FLOAT", "IDENTITY", "ABS", "CEILING", "FLOOR", "LOG2",
                                      "SQRT", "EXP", "LOG", "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN", "SINH",
                                      "COSH", "TANH", "ASINH", nullptr};
    const std::string name = EnumNameSymOp(op);
    *lo = 1;
    *hi = UINT32_MAX;
    *even = false;
    for (const char *const *n = two; *n; ++n)
      if (name == *n) *lo = *hi = 2;
    for (const char *const *n = one; *n; ++n)
      if (name == *n) *lo = *hi = 1;
    if (name == "WHERE" || name == "MODULAR_INDEXING") *lo = *hi = 3;
    if (name == "PIECEWISE" || name == "IS_NON_OVERLAPPING_AND_DENSE") {
      *lo = 2;
      *even = true;
    }
  }

  // Symbol names unique: pt2f_keys, generated.
  void check_symbols(const Program *p, const std::string &path) {
    for (uint32_t i = 0; i < n_exprs_; ++i) {
      const auto *e = p->sym_exprs()->Get(i);
      const std::string ep = path + ".sym_exprs[" + num(i) + "]";
      // kind declared and not UNSPECIFIED: pt2f_value, generated
      if (e->kind() == SymExprKind::SYMBOL) {
        if (e->symbol() >= n_symbols_)
          invalid("symbol index out of range", ep + ".symbol", "< " + num(n_symbols_), num(e->symbol()));
      } else if (e->kind() == SymExprKind::RATIONAL) {
        if (e->denominator() <= 1)
          invalid("rational denominator must be > 1", ep + ".denominator", "", snum(e->denominator()));
      } else if (e->kind() == SymExprKind::APPLY) {
        if (!op_known(uint8_t(e->op()))) invalid("APPLY needs a known op", ep + ".op", "", num(uint8_t(e->op())));
        const uint32_t n = len(e->args());
        if (n == 0) invalid("APPLY needs arguments", ep + ".args");
        for (uint32_t j = 0; j < n; ++j)
          if (e->args()->Get(j) >= i)
            invalid("argument must refer to an earlier expression (the pool is acyclic)",
                    ep + ".args[" + num(j) + "]", "< " + num(i), num(e->args()->Get(j)));
        if (e->op() == SymOp::IS_MULTIPLE) invalid("IS_MULTIPLE is reserved and never written", ep + ".op");
        uint32_t lo, hi;
        bool even;
        arity(e->op(), &lo, &hi, &even);
        if (n < lo || n > hi || (even && n % 2)) invalid("wrong number of operands", ep + ".args", "", num(n));
      }
    }
    // Float ranges and hints are finite (hint not NaN); then the pool evaluates within the bounds of §11.6.
    for (uint32_t i = 0; i < n_symbols_; ++i) {
      const auto *sym = p->symbols()->Get(i);
      if (sym->kind() != SymbolKind::FLOAT) continue;
      const std::string sp = path + ".symbols[" + num(i) + "]";
      if (const auto *r = sym->range()) {
        if (r->has_lower() && !std::isfinite(r->float_lower()))
          invalid("a present float bound must be finite", sp + ".range.float_lower");
        if (r->has_upper() && !std::isfinite(r->float_upper()))
          invalid("a present float bound must be finite", sp + ".range.float_upper");
      }
      if (sym->has_hint() && std::isnan(sym->float_hint())) invalid("float hint is NaN", sp + ".float_hint");
    }
    try {
      SymEvaluator ev(p);
      ev.bind_hints();
      for (uint32_t i = 0; i < n_exprs_; ++i) {
        try {
          ev.evaluate(i);
        } catch (const Error &e) {
          if (e.kind() == ErrorKind::Limit) throw;  // a domain error stays a value of the node (SPEC.md §11)
        }
      }
    } catch (const Error &e) {
      if (e.kind() != ErrorKind::Limit) throw;
      throw e.with_context("", "program", path);
    }
    // The file's budget (SPEC.md §11.6): every node is charged, then every use (check_sym, use).
    const auto *pool = p->sym_exprs();
    sym_sizes_.assign(n_exprs_, 1);
    for (uint32_t i = 0; i < n_exprs_; ++i) {
      const auto *e = pool->Get(i);
      if (e->kind() == SymExprKind::APPLY && e->args()) {
        uint64_t t = 1;
        for (uint32_t k = 0; k < e->args()->size(); ++k) t += sym_sizes_[e->args()->Get(k)];  // each <= bound
        sym_sizes_[i] = t;
      }
      charge(sym_sizes_[i], path + ".sym_exprs[" + num(i) + "]");
    }
  }

  // Counts one pool node or use of expanded size `size` against the file's budget (SPEC.md §11.6).
  void charge(uint64_t size, const std::string &path) {
    if (size <= kSymFreeSize) return;
    sym_spent_ += size - kSymFreeSize;
    if (sym_spent_ > kMaxSymFileExcess)
      fail(ErrorKind::Limit, "symbolic expressions of the file are too large in total", path,
           "<= " + num(kMaxSymFileExcess) + " of expanded size beyond " + num(kSymFreeSize) + " per pool node and use",
           "> " + num(kMaxSymFileExcess));
  }

  void use(uint32_t expr, const std::string &path) {
    if (expr < sym_sizes_.size() && sym_sizes_[expr] > kSymFreeSize) charge(sym_sizes_[expr], path);
  }

  // Charges a SymInt/SymFloat/SymBool use (its index already checked by the field rules) to the budget.
  void check_sym(int32_t expr, const std::string &path) {
    if (expr >= 0) use(uint32_t(expr), path + ".expr");
  }

  template <class V>
  std::unordered_set<std::string> names(const V *values, const std::string &path) {
    std::unordered_set<std::string> out;
    for (uint32_t i = 0; i < len(values); ++i) {
      const auto *v = values->Get(i);
      out.insert(v->name()->str());
    }
    if (out.size() != len(values))
      invalid("duplicate value names", path, num(len(values)) + " unique names", num(out.size()));
    return out;
  }

  Scope check_graph(const Graph *g, uint32_t depth, const std::string &path) {
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

  void check_metadata(const NodeMetadata *meta, const std::string &path) {
    if (!meta) return;
    if (meta->custom()) check_map(meta->custom(), 1, false, path + ".custom");
    // extra sorted by key: pt2f_keys, generated; extra keys' classes: the string walk
  }

  [[noreturn]] static void undeclared(const char *what, const flatbuffers::String *name, const std::string &path) {
    invalid(std::string(what) + " '" + s(name) + "' is not declared in this graph", path,
            "a name from the graph's values", s(name));
  }

  template <class L>
  void optional_names(const L *list, const std::unordered_set<std::string> &scope, const char *what,
                      const std::string &path) {
    for (uint32_t i = 0; i < len(list->items()); ++i) {
      const auto *name = list->items()->Get(i)->name();
      if (name && !scope.count(name->str())) undeclared(what, name, path + ".items[" + num(i) + "].name");
    }
  }

  void check_argument(const Scope &sc, ArgumentValue type, const void *v, uint32_t depth, const std::string &path) {
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

  // A stored parameter, buffer or constant has its placeholder's dtype and concrete sizes (SPEC.md §5);
  // only plain strided placeholders are compared, and dimensions the graph leaves symbolic are not.
  void check_state_matches_placeholders(const Program *p, const std::string &path) {
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

  void check_signature(const Program *p, const Scope &sc, const std::string &path) {
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

  const File &file_;
  const Package *p_;
  uint32_t n_tensors_ = 0;
  uint32_t n_symbols_ = 0;
  uint32_t n_exprs_ = 0;
  uint32_t max_depth_ = uint32_t(limits::kMaxDepth);
  std::vector<uint64_t> sym_sizes_;  // expanded size of each node of the current program's pool
  uint64_t sym_spent_ = 0;           // the file's budget spent so far (every program)
};

// A ShardFile.package_id that is present names this save: the main header's id (SPEC.md §5).
void check_shard_ids(const File &file) {
  const auto *shards = file.package()->shard_files();
  for (uint32_t i = 0; i < len(shards); ++i) {
    const auto *id = shards->Get(i)->package_id();
    if (!id || id->size() == 0) continue;
    if (id->size() != 16 || std::memcmp(id->data(), file.header().package_id, 16) != 0)
      fail(ErrorKind::StaleShard, "shard_files entry names another save than this file's header",
           at("shard_files", i) + ".package_id", "the header's package_id", "another id");
  }
}

}  // namespace

void validate(const File &file) {
  try {
    StringWalker().table(reinterpret_cast<const flatbuffers::Table *>(file.package()), *binary_schema().root_table(), "");
    check_shard_ids(file);
    Validator(file).run();
  } catch (const Error &e) {
    throw e.with_context(file.path()).with_versions(file.header().format_major, file.header().format_minor);
  }
}

}  // namespace pt2f
