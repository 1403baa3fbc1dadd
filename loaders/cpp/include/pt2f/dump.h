// pt2f/dump.h: the canonical dump of SPEC.md §6, walked generically over the
// binary schema so no table is rendered by hand-written code.
#pragma once

#include <string>

#include "pt2f/reader.h"

namespace pt2f {

/// The canonical dump of an open file: one JSON line followed by "\n",
/// byte-identical to `pt2format dump FILE`. Throws pt2f::Error when a string
/// is not UTF-8 or a storage cannot be resolved.
std::string canonical_dump(const File &file);

/// Append the rendering of the verified root table (the "package" value).
/// The package tree as the file's format minor `minor` defines it (SPEC.md §6): fields of a
/// newer minor are left out, enum values of a newer minor are integers, union members of a
/// newer minor are a VersionError.
void append_package_json(std::string &out, const pt2format::Package *package, uint16_t minor);

}  // namespace pt2f
