// JSON programs: a strict parser into the generic tree (program_decode_tree.h).
#include <cmath>
#include <cstdlib>
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
// the tree, as the Python reader's parser: CPython's json stops near its recursion limit. Deeper is a
// LimitError. From the schema's limits table.
constexpr uint64_t kMaxJsonDepth = limits::kMaxJsonDepth;
// Python's int() refuses decimal strings of more digits (sys.get_int_max_str_digits()).
constexpr size_t kMaxIntDigits = limits::kMaxJsonIntDigits;

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

}  // namespace

Val parse_json(const char *data, size_t size) { return JsonParser(data, size).parse(); }

}  // namespace decode
}  // namespace pt2f
