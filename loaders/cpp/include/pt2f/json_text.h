// pt2f/json_text.h: the scalar spellings of the canonical dump (SPEC.md §6).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace pt2f {

/// Whether s[0..n) is valid UTF-8 (Unicode scalar values only: no surrogates, no overlong forms).
bool valid_utf8(const char *s, size_t n);

/// Append `s` as a JSON string exactly as Python's json.dumps(...,
/// ensure_ascii=False) writes it. Returns false (appending nothing) when `s`
/// is not valid UTF-8 in Python's strict sense (no surrogates, overlongs or
/// code points above U+10FFFF).
bool append_json_string(std::string &out, const char *s, size_t n);

/// Append the JSON string "0x" + 16 lowercase hex digits of the binary64
/// bit pattern (quotes included).
void append_float_json(std::string &out, double v);

void append_int(std::string &out, int64_t v);
void append_uint(std::string &out, uint64_t v);

}  // namespace pt2f
