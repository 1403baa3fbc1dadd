// pt2f/schema.h: the reader's schema, as flatc's binary schema (.bfbs).
//
// The .bfbs is generated at build time by `flatc --binary --schema` from
// schema/pt2format.fbs (the same file the checked-in header comes from), so
// nothing here is copied by hand. It carries what minireflect TypeTables
// lack: field defaults and deprecation flags, both needed by the canonical
// dump, and field names exactly as in the schema (TypeTables escape C++
// keywords: "namespace" becomes "namespace_"). check_schema_matches_generated() proves that it describes the same
// types as the compiled header (names, ids, types, enum values).
#pragma once

#include <cstdint>
#include <string>

#include "flatbuffers/reflection_generated.h"

namespace pt2f {

/// The verified binary schema of pt2format.fbs compiled into this library.
const reflection::Schema &binary_schema();

/// The minor (of this major) that defines a table field ("Owner.field") or an
/// enum value / union member ("Owner#value"), from pt2format_minors.h; 0 (X.0)
/// for a name not listed there.
uint16_t name_minor(const std::string &key);

/// Throw pt2f::Error (kind Validation) when the binary schema and the
/// flatc-generated header's TypeTables disagree anywhere reachable from Package.
void check_schema_matches_generated();

}  // namespace pt2f
