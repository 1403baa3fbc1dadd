// MessagePack programs: a strict parser into the generic tree (program_decode_tree.h).
#include <cstring>
#include <string>
#include <utility>

#include "pt2f/error.h"
#include "pt2f/json_text.h"
#include "pt2format_limits.h"
#include "program_decode_tree.h"

namespace pt2f {
namespace decode {
namespace {

// Deepest nesting the parser accepts before the schema walk (which bounds tables by max_depth) sees
// the tree, as the Python reader's parser: msgpack-python keeps at most 1024 open containers
// (StackError). Deeper is a LimitError. From the schema's limits table.
constexpr uint64_t kMaxMsgPackDepth = limits::kMaxMsgpackDepth;

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

}  // namespace

Val parse_msgpack(const uint8_t *data, size_t size) { return MsgPackParser(data, size).parse(); }

}  // namespace decode
}  // namespace pt2f
