// The grammars of the string classes (SPEC.md §9), as pt2format/_strings.py
// states them; which field has which class, and the word lists, are generated
// (pt2format_strings.h).
#include <cstring>
#include <string>
#include <string_view>

#include "pt2f/error.h"
#include "pt2f/validate.h"
#include "pt2format_limits.h"

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

// Decodes the code point at s[i] (valid UTF-8, checked before classes are) and advances i; -1 when malformed.
long next_code_point(std::string_view s, size_t &i) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  const unsigned char c = p[i];
  int n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
  if (n < 0 || i + n >= s.size()) return -1;
  long cp = n == 0 ? c : n == 1 ? (c & 0x1F) : n == 2 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k <= n; ++k) {
    if ((p[i + k] & 0xC0) != 0x80) return -1;
    cp = (cp << 6) | (p[i + k] & 0x3F);
  }
  i += n + 1;
  return cp;
}

// The identifier table's row holding `cp`, or nullptr (binary search on the sorted firsts).
const strings::IdentRange *ident_row(long cp) {
  size_t lo = 0, hi = strings::kIdentRangeCount;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const auto &r = strings::kIdentRanges[mid];
    if (cp < static_cast<long>(r.first)) hi = mid;
    else if (cp > static_cast<long>(r.last)) lo = mid + 1;
    else return &r;
  }
  return nullptr;
}

// Python's identifier rule in NFKC form, by the generated table (as pt2format/_strings.py).
bool unicode_identifier(std::string_view s) {
  int prev = 0;
  bool first = true;
  for (size_t i = 0; i < s.size();) {
    const long cp = next_code_point(s, i);
    const strings::IdentRange *r = cp < 0 ? nullptr : ident_row(cp);
    if (!r || (first && !r->start)) return false;
    if (r->ccc && prev > r->ccc) return false;
    prev = r->ccc;
    first = false;
  }
  return true;
}

bool is_identifier(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
  if (ascii) return plain_identifier(s) && !in_list(strings::kKeywords, s);
  return unicode_identifier(s);
}

std::string identifier(std::string_view s) {
  if (!is_identifier(s))
    return in_list(strings::kKeywords, s) ? "not a Python keyword"
                                          : "a Python identifier (str.isidentifier, Unicode 14.0.0) in NFKC form";
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

std::string module_call_path(std::string_view s) {
  const size_t at = s.find('@');
  if (at == std::string_view::npos) return attr_path(s);
  const std::string_view index = s.substr(at + 1);
  bool ok = at > 0 && !index.empty() && index[0] >= '1' && index[0] <= '9';
  for (char c : index) ok = ok && digit(c);
  if (!ok) return "a module path, optionally followed by @ and a call index [1-9][0-9]* (torch's n1.n2@1)";
  return attr_path(s.substr(0, at));
}

// torch's repr of a slice, as an nn_module_stack path component: slice(a, b, c), each -?[0-9]+ or None.
bool slice_component(std::string_view p) {
  const std::string_view head = "slice(";
  if (p.size() < head.size() + 1 || p.substr(0, head.size()) != head || p.back() != ')') return false;
  std::string_view rest = p.substr(head.size(), p.size() - head.size() - 1);
  for (int k = 0; k < 3; ++k) {
    size_t end = k < 2 ? rest.find(", ") : rest.size();
    if (end == std::string_view::npos) return false;
    std::string_view v = rest.substr(0, end);
    if (v != "None") {
      if (!v.empty() && v[0] == '-') v = v.substr(1);
      if (v.empty()) return false;
      for (char c : v) if (!digit(c)) return false;
    }
    rest = k < 2 ? rest.substr(end + 2) : std::string_view();
  }
  return true;
}

std::string module_stack_path(std::string_view s) {
  return each_part(s, [](std::string_view p) -> std::string {
    if (slice_component(p)) return "";
    std::string why = attr_path(p);
    if (!why.empty() && why.back() == ')') why = why.substr(0, why.size() - 1) + ", or slice(start, stop, step) components)";
    return why;
  });
}

std::string qualified_name(std::string_view s) {
  return each_part(s, [](std::string_view p) -> std::string {
    bool ok = is_identifier(p);
    if (!ok && p.size() >= 3 && p.front() == '<' && p.back() == '>') {
      ok = true;
      for (char c : p.substr(1, p.size() - 2)) ok = ok && c >= 'a' && c <= 'z';
    }
    if (!ok) return "dot-separated identifiers ('" + std::string(p) + "')";
    return "";
  });
}

// Code points of valid UTF-8 (continuation bytes are not counted).
size_t code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

std::string printed_name(std::string_view s) {
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
    case StringClass::optional_attr_path:
    case StringClass::module_call_path:
    case StringClass::module_stack_path: may_be_empty = true; break;
    case StringClass::free_text: may_be_empty = true; longest = strings::kMaxTextLength; break;
    case StringClass::file_name: longest = limits::kMaxFileNameLength; break;
    case StringClass::device_type: longest = limits::kMaxDeviceTypeLength; break;
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
    case StringClass::module_call_path: return module_call_path(s);
    case StringClass::module_stack_path: return module_stack_path(s);
    case StringClass::qualified_name: return qualified_name(s);
    case StringClass::file_name: {
      auto ok0 = [](char c) { return ident_char(c); };
      bool ok = ok0(s[0]);
      for (char c : s.substr(1)) ok = ok && (ident_char(c) || c == '.' || c == '-');
      return ok ? "" : "[A-Za-z0-9_][A-Za-z0-9._-]*, at most " + std::to_string(limits::kMaxFileNameLength) +
                           " characters, no directories";
    }
    case StringClass::device_type: {
      bool ok = s[0] >= 'a' && s[0] <= 'z';
      for (char c : s.substr(1)) ok = ok && ((c >= 'a' && c <= 'z') || digit(c) || c == '_');
      return ok ? "" : "[a-z][a-z0-9_]*, at most " + std::to_string(limits::kMaxDeviceTypeLength) + " characters";
    }
    case StringClass::token:
    case StringClass::metadata_key: return printed_name(s);
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
