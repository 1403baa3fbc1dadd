// The grammars of the string classes (SPEC.md §9), as pt2format/_strings.py
// states them; which field has which class, and the word lists, are generated
// (pt2format_strings.h).
#include <cstring>
#include <string>
#include <string_view>

#include "pt2f/error.h"
#include "pt2f/validate.h"

namespace pt2f {
namespace {

using strings::StringClass;

bool in_list(const char *const *list, std::string_view s) {
  for (; *list; ++list)
    if (s == *list) return true;
  return false;
}

bool ident_start(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; }
bool ident_char(char c) { return ident_start(c) || (c >= '0' && c <= '9'); }
bool digit(char c) { return c >= '0' && c <= '9'; }

bool plain_identifier(std::string_view s) {
  if (s.empty() || !ident_start(s[0])) return false;
  for (char c : s)
    if (!ident_char(c)) return false;
  return true;
}

std::string identifier(std::string_view s) {
  if (!plain_identifier(s)) return "an ASCII identifier [A-Za-z_][A-Za-z0-9_]*";
  if (in_list(strings::kKeywords, s)) return "not a Python keyword";
  if (s.size() > 4 && s.substr(0, 2) == "__" && s.substr(s.size() - 2) == "__") return "not a dunder name";
  return "";
}

template <class F>
std::string each_part(std::string_view s, F part) {
  size_t start = 0;
  for (;;) {
    const size_t dot = s.find('.', start);
    const std::string why = part(s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!why.empty()) return why;
    if (dot == std::string_view::npos) return "";
    start = dot + 1;
  }
}

std::string attr_path(std::string_view s) {
  return each_part(s, [](std::string_view p) -> std::string {
    if (!p.empty()) {
      bool all_digits = true;
      for (char c : p) all_digits = all_digits && digit(c);
      if (all_digits) return "";
    }
    const std::string why = identifier(p);
    if (!why.empty()) return "dot-separated identifiers or indices (" + why + ": '" + std::string(p) + "')";
    if (in_list(strings::kReservedMemberNames, p))
      return "no component reserved by torch.nn.Module/GraphModule ('" + std::string(p) + "')";
    return "";
  });
}

std::string qualified_name(std::string_view s) {
  return each_part(s, [](std::string_view p) -> std::string {
    bool ok = plain_identifier(p);
    if (!ok && p.size() >= 3 && p.front() == '<' && p.back() == '>') {
      ok = true;
      for (char c : p.substr(1, p.size() - 2)) ok = ok && c >= 'a' && c <= 'z';
    }
    if (!ok || in_list(strings::kKeywords, p)) return "dot-separated identifiers ('" + std::string(p) + "')";
    return "";
  });
}

// Code points of valid UTF-8 (continuation bytes are not counted).
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string metadata_key(std::string_view s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  for (size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = p[i];
    if (c < 0x20 || c == 0x7f) return "no control characters or line separators";
    // C1 controls U+0080..U+009F are C2 80..C2 9F; U+2028/U+2029 are E2 80 A8/A9.
    if (c == 0xC2 && i + 1 < s.size() && p[i + 1] >= 0x80 && p[i + 1] <= 0x9f)
      return "no control characters or line separators";
    if (c == 0xE2 && i + 2 < s.size() && p[i + 1] == 0x80 && (p[i + 2] == 0xA8 || p[i + 2] == 0xA9))
      return "no control characters or line separators";
  }
  return "";
}

}  // namespace

std::string string_class_violation(StringClass cls, std::string_view s) {
  bool may_be_empty = false;
  size_t longest = strings::kMaxNameLength;
  switch (cls) {
    case StringClass::optional_identifier:
    case StringClass::optional_attr_path: may_be_empty = true; break;
    case StringClass::free_text: may_be_empty = true; longest = strings::kMaxTextLength; break;
    case StringClass::file_name: longest = 255; break;
    case StringClass::device_type: longest = 64; break;
    default: break;
  }
  if (s.empty()) return may_be_empty ? "" : "a non-empty string";
  if (code_points(s) > longest) return "at most " + std::to_string(longest) + " characters";
  switch (cls) {
    case StringClass::local_name: {
      std::string why = identifier(s);
      if (why.empty() && in_list(strings::kReservedLocalNames, s)) why = "not a reserved local name (self)";
      return why;
    }
    case StringClass::identifier:
    case StringClass::optional_identifier: return identifier(s);
    case StringClass::attr_path:
    case StringClass::optional_attr_path: return attr_path(s);
    case StringClass::qualified_name: return qualified_name(s);
    case StringClass::file_name: {
      auto ok0 = [](char c) { return ident_char(c); };
      bool ok = ok0(s[0]);
      for (char c : s.substr(1)) ok = ok && (ident_char(c) || c == '.' || c == '-');
      return ok ? "" : "[A-Za-z0-9_][A-Za-z0-9._-]*, at most 255 characters, no directories";
    }
    case StringClass::device_type: {
      bool ok = s[0] >= 'a' && s[0] <= 'z';
      for (char c : s.substr(1)) ok = ok && ((c >= 'a' && c <= 'z') || digit(c) || c == '_');
      return ok ? "" : "[a-z][a-z0-9_]*, at most 64 characters";
    }
    case StringClass::token: {
      for (char ch : s) {
        const unsigned char c = static_cast<unsigned char>(ch);
        if (c < 0x21 || c > 0x7e || c == '"' || c == '\'' || c == '\\' || c == '`')
          return "printable ASCII without spaces, quotes, backslashes or backticks";
      }
      return "";
    }
    case StringClass::metadata_key: return metadata_key(s);
    case StringClass::free_text: return "";
  }
  return "";
}

void check_string_class(StringClass cls, std::string_view s, const std::string &field) {
  const std::string why = string_class_violation(cls, s);
  if (why.empty()) return;
  Error::Where w;
  w.section = "program";
  w.path = field;
  w.expected = why;
  std::string got = "'" + std::string(s.substr(0, 80)) + (s.size() > 80 ? "'..." : "'");
  w.got = got;
  throw Error(ErrorKind::StringClass,
              std::string("string is not a valid ") + strings::kClassNames[static_cast<int>(cls)], w);
}

}  // namespace pt2f
