// program_decode.h (internal): the MessagePack and JSON program encodings
// (SPEC.md §4), decoded into a FlatBuffers buffer of the same tree.
//
// The reader has one in-memory view of a program: the flatc-generated tables
// over a verified FlatBuffers buffer. A MessagePack or JSON program is parsed
// by a strict hand-written parser into a generic value tree, then rebuilt as
// FlatBuffers, field by field, walking the binary schema (no table is
// handled by hand-written code). Every value is checked against its field's
// type on the way, with the same outcomes as pt2format's decoders: a value of
// the wrong type, an integer outside its type or a string that is not UTF-8
// is an EncodingError, an unknown enum name or union member a VersionError,
// tables nested deeper than max_depth a LimitError. Keys (JSON) and array
// positions (MessagePack) the schema does not define are ignored (SPEC.md §8.2).
//
// Why hand-written parsers rather than a library: both formats are small,
// the errors must map exactly onto pt2format's classes (a JSON integer of
// more than 4300 digits is a LimitError, a lone surrogate an EncodingError,
// duplicate keys an EncodingError), and nothing may be fetched from outside
// the apt/PyPI/npm registries; a single-header JSON library (nlohmann/json)
// would still need these checks around it, and accepts inputs Python refuses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pt2f {

/// FlatBuffers bytes (with the P2FP identifier) of a MessagePack program.
/// Throws pt2f::Error (Encoding, Limit, Version).
std::vector<uint8_t> msgpack_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth);

/// FlatBuffers bytes of a JSON program (UTF-8 text). Throws pt2f::Error.
std::vector<uint8_t> json_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth);

}  // namespace pt2f
