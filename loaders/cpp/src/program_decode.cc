// MessagePack and JSON programs: strict parsers into a generic tree, then a
// schema-driven rebuild as FlatBuffers (see program_decode.h for why).
#include "program_decode.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>

#include "flatbuffers/flatbuffers.h"
#include "pt2f/error.h"
#include "pt2f/json_text.h"
#include "pt2f/schema.h"
#include "pt2format_limits.h"

namespace pt2f {
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

// Deepest nesting the parsers accept before the schema walk (which bounds
// tables by max_depth) sees the tree, as the Python reader's parsers: msgpack-python
// keeps at most 1024 open containers (StackError), CPython's json stops near
// its recursion limit. Deeper is a LimitError. Both from the schema's limits table.
constexpr uint64_t kMaxMsgPackDepth = limits::kMaxMsgpackDepth;
constexpr uint64_t kMaxJsonDepth = limits::kMaxJsonDepth;
// Python's int() refuses decimal strings of more digits (sys.get_int_max_str_digits()).
constexpr size_t kMaxIntDigits = limits::kMaxJsonIntDigits;

[[noreturn]] void fail(ErrorKind kind, const std::string &msg, const std::string &path = "",
                       const std::string &expected = "", const std::string &got = "") {
  Error::Where w;
  w.section = "program";
  w.path = path;
  w.expected = expected;
  w.got = got;
  throw Error(kind, msg, w);
}

// ---------------------------------------------------------------------------
// The generic tree both parsers produce.

struct Val {
  enum Type : uint8_t { Nil, Bool, Int, Float, Str, Bin, Arr, Map, Other } t = Nil;
  bool neg = false;  // Int: negative, value in i; otherwise value in u
  bool big = false;  // Int: outside 64 bits (JSON only); decimal text in s
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;                                   // Str, Bin, big Int text
  std::vector<Val> items;                          // Arr
  std::vector<std::pair<std::string, Val>> members;  // Map (keys in file order)

  const char *type_name() const {
    switch (t) {
      case Nil: return "nil";
      case Bool: return "bool";
      case Int: return "int";
      case Float: return "float";
      case Str: return "str";
      case Bin: return "bytes";
      case Arr: return "list";
      case Map: return "dict";
      default: return "other";
    }
  }
};

// ---------------------------------------------------------------------------
// MessagePack (msgpack-python's unpackb(raw=False, strict_map_key=True) semantics)

class MsgPackParser {
 public:
  MsgPackParser(const uint8_t *p, size_t n) : p_(p), n_(n) {}

  Val parse() {
    Val v = value(0);
    if (pos_ != n_)
      fail(ErrorKind::Encoding, "trailing bytes after the msgpack object", "", std::to_string(pos_) + " bytes",
           std::to_string(n_));
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string &msg) {
    Error::Where w;
    w.section = "program";
    w.offset = pos_;
    throw Error(ErrorKind::Encoding, "malformed msgpack: " + msg, w);
  }
  const uint8_t *take(size_t k) {
    if (k > n_ - pos_) bad("data cut short");
    const uint8_t *q = p_ + pos_;
    pos_ += k;
    return q;
  }
  uint64_t be(size_t k) {
    const uint8_t *q = take(k);
    uint64_t v = 0;
    for (size_t j = 0; j < k; ++j) v = (v << 8) | q[j];
    return v;
  }
  void str(Val &v, size_t len) {
    const uint8_t *q = take(len);
    if (!valid_utf8(reinterpret_cast<const char *>(q), len))
      fail(ErrorKind::Encoding, "string is not valid UTF-8", "", "UTF-8");
    v.t = Val::Str;
    v.s.assign(reinterpret_cast<const char *>(q), len);
  }
  void bin(Val &v, size_t len) {
    const uint8_t *q = take(len);
    v.t = Val::Bin;
    v.s.assign(reinterpret_cast<const char *>(q), len);
  }
  void array(Val &v, size_t len, uint32_t depth) {
    if (len > n_ - pos_) bad("array longer than the data");  // each element takes at least one byte
    v.t = Val::Arr;
    v.items.resize(len);
    for (size_t j = 0; j < len; ++j) v.items[j] = value(depth + 1);
  }
  void map(Val &v, size_t len, uint32_t depth) {
    if (len > (n_ - pos_) / 2) bad("map longer than the data");
    v.t = Val::Map;
    v.members.resize(len);
    for (size_t j = 0; j < len; ++j) {
      Val k = value(depth + 1);
      if (k.t != Val::Str && k.t != Val::Bin) bad("map key is not a string");
      v.members[j].first = std::move(k.s);
      v.members[j].second = value(depth + 1);
    }
  }
  void ext(Val &v, size_t len) {
    take(1);  // type
    take(len);
    v.t = Val::Other;
  }

  Val value(uint32_t depth) {
    if (depth > kMaxMsgPackDepth)
      fail(ErrorKind::Limit, "msgpack nesting too deep", "", "<= " + std::to_string(kMaxMsgPackDepth), "deeper");
    Val v;
    const uint8_t c = *take(1);
    if (c <= 0x7f) {
      v.t = Val::Int;
      v.u = c;
    } else if (c >= 0xe0) {
      v.t = Val::Int;
      v.neg = true;
      v.i = int8_t(c);
    } else if ((c & 0xf0) == 0x80) {
      map(v, c & 15, depth);
    } else if ((c & 0xf0) == 0x90) {
      array(v, c & 15, depth);
    } else if ((c & 0xe0) == 0xa0) {
      str(v, c & 31);
    } else {
      switch (c) {
        case 0xc0: break;
        case 0xc2: v.t = Val::Bool; v.b = false; break;
        case 0xc3: v.t = Val::Bool; v.b = true; break;
        case 0xc4: bin(v, be(1)); break;
        case 0xc5: bin(v, be(2)); break;
        case 0xc6: bin(v, be(4)); break;
        case 0xc7: ext(v, be(1)); break;
        case 0xc8: ext(v, be(2)); break;
        case 0xc9: ext(v, be(4)); break;
        case 0xca: {
          const uint32_t bits = uint32_t(be(4));
          float x;
          std::memcpy(&x, &bits, 4);
          v.t = Val::Float;
          v.f = double(x);
          break;
        }
        case 0xcb: {
          const uint64_t bits = be(8);
          v.t = Val::Float;
          std::memcpy(&v.f, &bits, 8);
          break;
        }
        case 0xcc: v.t = Val::Int; v.u = be(1); break;
        case 0xcd: v.t = Val::Int; v.u = be(2); break;
        case 0xce: v.t = Val::Int; v.u = be(4); break;
        case 0xcf: v.t = Val::Int; v.u = be(8); break;
        case 0xd0: case 0xd1: case 0xd2: case 0xd3: {
          const size_t k = size_t(1) << (c - 0xd0);
          const uint64_t raw = be(k);
          int64_t x;
          if (k == 1) x = int8_t(raw);
          else if (k == 2) x = int16_t(raw);
          else if (k == 4) x = int32_t(raw);
          else x = int64_t(raw);
          v.t = Val::Int;
          if (x < 0) {
            v.neg = true;
            v.i = x;
          } else {
            v.u = uint64_t(x);
          }
          break;
        }
        case 0xd4: ext(v, 1); break;
        case 0xd5: ext(v, 2); break;
        case 0xd6: ext(v, 4); break;
        case 0xd7: ext(v, 8); break;
        case 0xd8: ext(v, 16); break;
        case 0xd9: str(v, be(1)); break;
        case 0xda: str(v, be(2)); break;
        case 0xdb: str(v, be(4)); break;
        case 0xdc: array(v, be(2), depth); break;
        case 0xdd: array(v, be(4), depth); break;
        case 0xde: map(v, be(2), depth); break;
        case 0xdf: map(v, be(4), depth); break;
        default: pos_--; bad("the byte 0xc1 is never used");
      }
    }
    return v;
  }

  const uint8_t *p_;
  size_t n_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// JSON (Python's json module, strict: no NaN/Infinity constants, no duplicate keys)

class JsonParser {
 public:
  JsonParser(const char *p, size_t n) : p_(p), n_(n) {}

  Val parse() {
    if (!valid_utf8(p_, n_)) fail(ErrorKind::Encoding, "JSON text is not valid UTF-8", "", "UTF-8");
    ws();
    Val v = value(1);  // the root is depth 1, as the TypeScript parser counts against the same max_json_depth
    ws();
    if (pos_ != n_) bad("extra data after the document");
    return v;
  }

 private:
  [[noreturn]] void bad(const std::string &msg) {
    Error::Where w;
    w.section = "program";
    w.offset = pos_;
    throw Error(ErrorKind::Encoding, "malformed JSON: " + msg, w);
  }
  void ws() {
    while (pos_ < n_ && (p_[pos_] == ' ' || p_[pos_] == '\t' || p_[pos_] == '\n' || p_[pos_] == '\r')) ++pos_;
  }
  bool lit(const char *word) {
    const size_t k = std::strlen(word);
    if (n_ - pos_ >= k && std::memcmp(p_ + pos_, word, k) == 0) {
      pos_ += k;
      return true;
    }
    return false;
  }

  Val value(uint32_t depth) {
    if (depth > kMaxJsonDepth)
      fail(ErrorKind::Limit, "JSON nesting too deep", "", "<= " + std::to_string(kMaxJsonDepth), "deeper");
    if (pos_ >= n_) bad("expecting a value");
    Val v;
    const char c = p_[pos_];
    if (c == '{') {
      ++pos_;
      v.t = Val::Map;
      ws();
      if (pos_ < n_ && p_[pos_] == '}') {
        ++pos_;
        return v;
      }
      for (;;) {
        ws();
        if (pos_ >= n_ || p_[pos_] != '"') bad("expecting a property name in double quotes");
        std::string key = string();
        for (const auto &m : v.members)
          if (m.first == key) fail(ErrorKind::Encoding, "duplicate key in a JSON object", "", "unique keys", key);
        ws();
        if (pos_ >= n_ || p_[pos_] != ':') bad("expecting ':'");
        ++pos_;
        ws();
        v.members.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (pos_ < n_ && p_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < n_ && p_[pos_] == '}') {
          ++pos_;
          return v;
        }
        bad("expecting ',' or '}'");
      }
    }
    if (c == '[') {
      ++pos_;
      v.t = Val::Arr;
      ws();
      if (pos_ < n_ && p_[pos_] == ']') {
        ++pos_;
        return v;
      }
      for (;;) {
        ws();
        v.items.push_back(value(depth + 1));
        ws();
        if (pos_ < n_ && p_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < n_ && p_[pos_] == ']') {
          ++pos_;
          return v;
        }
        bad("expecting ',' or ']'");
      }
    }
    if (c == '"') {
      v.t = Val::Str;
      v.s = string();
      return v;
    }
    if (lit("true")) {
      v.t = Val::Bool;
      v.b = true;
      return v;
    }
    if (lit("false")) {
      v.t = Val::Bool;
      return v;
    }
    if (lit("null")) return v;
    if (lit("NaN") || lit("Infinity") || lit("-Infinity"))
      fail(ErrorKind::Encoding, "bare NaN/Infinity is not JSON; write non-finite floats as strings", "",
           "\"nan\", \"inf\" or \"-inf\"");
    if (c == '-' || (c >= '0' && c <= '9')) return number();
    bad("expecting a value");
  }

  Val number() {
    const size_t start = pos_;
    if (p_[pos_] == '-') ++pos_;
    const size_t digits_start = pos_;
    if (pos_ < n_ && p_[pos_] == '0') {
      ++pos_;
    } else if (pos_ < n_ && p_[pos_] >= '1' && p_[pos_] <= '9') {
      while (pos_ < n_ && p_[pos_] >= '0' && p_[pos_] <= '9') ++pos_;
    } else {
      bad("expecting a value");
    }
    const size_t int_end = pos_;
    bool is_float = false;
    if (pos_ + 1 < n_ && p_[pos_] == '.' && p_[pos_ + 1] >= '0' && p_[pos_ + 1] <= '9') {
      is_float = true;
      pos_ += 1;
      while (pos_ < n_ && p_[pos_] >= '0' && p_[pos_] <= '9') ++pos_;
    }
    if (pos_ < n_ && (p_[pos_] == 'e' || p_[pos_] == 'E')) {
      size_t q = pos_ + 1;
      if (q < n_ && (p_[q] == '+' || p_[q] == '-')) ++q;
      if (q < n_ && p_[q] >= '0' && p_[q] <= '9') {
        is_float = true;
        while (q < n_ && p_[q] >= '0' && p_[q] <= '9') ++q;
        pos_ = q;
      }
    }
    Val v;
    const std::string text(p_ + start, pos_ - start);
    if (is_float) {
      v.t = Val::Float;
      v.f = std::strtod(text.c_str(), nullptr);  // correctly rounded, as Python's float()
      // The infinities have one spelling, "inf"/"-inf" (SPEC.md section 4): 1e400 is not another.
      if (std::isinf(v.f))
        fail(ErrorKind::Encoding, "JSON number beyond the largest finite float", "", "a number within binary64 range",
             text);
      return v;
    }
    const size_t ndigits = int_end - digits_start;
    if (ndigits > kMaxIntDigits)
      fail(ErrorKind::Limit, "JSON number too large", "", "at most " + std::to_string(kMaxIntDigits) + " digits",
           std::to_string(ndigits) + " digits");
    v.t = Val::Int;
    const bool neg = p_[start] == '-';
    unsigned __int128 mag = 0;
    bool over = false;
    for (size_t k = digits_start; k < int_end; ++k) {
      mag = mag * 10 + unsigned(p_[k] - '0');
      if (mag > (unsigned __int128)UINT64_MAX + 1) {
        over = true;
        break;
      }
    }
    if (over || (!neg && mag > UINT64_MAX) || (neg && mag > (unsigned __int128)INT64_MAX + 1)) {
      v.big = true;
      v.neg = neg;
      v.s = text;
    } else if (neg && mag != 0) {
      v.neg = true;
      v.i = mag == (unsigned __int128)INT64_MAX + 1 ? INT64_MIN : -int64_t(uint64_t(mag));
    } else {
      v.u = uint64_t(mag);
    }
    return v;
  }

  unsigned hex4() {
    if (n_ - pos_ < 4) bad("invalid \\uXXXX escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = p_[pos_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else bad("invalid \\uXXXX escape");
    }
    return v;
  }

  static void put_utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++pos_;  // opening quote
    std::string out;
    for (;;) {
      if (pos_ >= n_) bad("unterminated string");
      const unsigned char c = static_cast<unsigned char>(p_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) bad("invalid control character in a string");
      if (c != '\\') {
        out += char(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= n_) bad("unterminated string");
      const char e = p_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (n_ - pos_ >= 6 && p_[pos_] == '\\' && p_[pos_ + 1] == 'u') {
              const size_t save = pos_;
              pos_ += 2;
              const uint32_t lo = hex4();
              if (lo >= 0xDC00 && lo <= 0xDFFF) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
              } else {
                pos_ = save;
                fail(ErrorKind::Encoding, "lone surrogate escape in a JSON string", "", "Unicode scalar values",
                     "\\u" + std::to_string(cp));
              }
            } else {
              fail(ErrorKind::Encoding, "lone surrogate escape in a JSON string", "", "Unicode scalar values",
                   "a high surrogate without its pair");
            }
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail(ErrorKind::Encoding, "lone surrogate escape in a JSON string", "", "Unicode scalar values",
                 "a low surrogate without its pair");
          }
          put_utf8(out, cp);
          break;
        }
        default: --pos_; bad("invalid escape");
      }
    }
  }

  const char *p_;
  size_t n_;
  size_t pos_ = 0;
};

// ---------------------------------------------------------------------------
// The rebuild as FlatBuffers, walking the binary schema.

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

std::vector<uint8_t> msgpack_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth) {
  const Val root = MsgPackParser(data, size).parse();
  return Rebuilder(/*json=*/false, max_depth).run(root);
}

std::vector<uint8_t> json_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth) {
  const Val root = JsonParser(reinterpret_cast<const char *>(data), size).parse();
  return Rebuilder(/*json=*/true, max_depth).run(root);
}

}  // namespace pt2f
