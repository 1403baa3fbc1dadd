// pt2f/validate.h: the checks pt2format.validate runs after decoding, so that
// the C++ reader never accepts (or dumps) a file the Python reader refuses.
//
// validate() walks the open file's package twice: every string against the
// class its field declares (SPEC.md §9, classes generated from the schema's
// pt2f_string attributes into pt2format_strings.h; StringClassError naming
// Table.field), then the invariants of pt2format/_validate.py (SPEC.md §5,
// §7, §11): indices in range, names declared and unique, sorted maps,
// storages inside their segments and never overlapping, tensor extents,
// the symbolic pool's order and bounds. Errors carry the field path.
#pragma once

#include <string>
#include <string_view>

#include "pt2f/reader.h"
#include "pt2format_strings.h"

namespace pt2f {

/// Throw pt2f::Error (StringClass, Validation, Segment, Limit, Version,
/// UnsupportedFeature, Encoding) on the first broken rule.
void validate(const File &file);

/// Why `s` is not in class `cls` ("" when it is). `s` must be valid UTF-8.
std::string string_class_violation(strings::StringClass cls, std::string_view s);

/// Check `s` against `cls`, throwing StringClassError naming `field` ("Table.field").
void check_string_class(strings::StringClass cls, std::string_view s, const std::string &field);

}  // namespace pt2f
