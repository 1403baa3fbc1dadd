// Canonical-dump spellings: JSON strings (strict UTF-8), float bit patterns, integers.
#include "pt2f/json_text.h"

#include <charconv>
#include <cstring>

namespace pt2f {
namespace {

const char kHex[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence at s[0..n), or 0 when invalid.
size_t utf8_sequence(const unsigned char *s, size_t n) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && s[1] < 0xA0) return 0;   // overlong
    if (c == 0xED && s[1] >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && s[1] < 0x90) return 0;   // overlong
    if (c == 0xF4 && s[1] >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

bool valid_utf8(const char *str, size_t n) {
  const auto *s = reinterpret_cast<const unsigned char *>(str);
  for (size_t i = 0; i < n;) {
    if (s[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = utf8_sequence(s + i, n - i);
    if (!len) return false;
    i += len;
  }
  return true;
}

bool append_json_string(std::string &out, const char *str, size_t n) {
  const auto *s = reinterpret_cast<const unsigned char *>(str);
  const size_t start = out.size();
  out += '"';
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c >= 0x80) {
      const size_t len = utf8_sequence(s + i, n - i);
      if (!len) {
        out.resize(start);
        return false;
      }
      out.append(str + i, len);
      i += len;
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
        } else {
          out += char(c);
        }
    }
    ++i;
  }
  out += '"';
  return true;
}

void append_float_json(std::string &out, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  char buf[20] = {'"', '0', 'x'};
  for (int i = 0; i < 16; ++i) buf[3 + i] = kHex[(bits >> (60 - 4 * i)) & 0xF];
  buf[19] = '"';
  out.append(buf, sizeof buf);
}

void append_int(std::string &out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, size_t(r.ptr - buf));
}

void append_uint(std::string &out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, size_t(r.ptr - buf));
}

}  // namespace pt2f
