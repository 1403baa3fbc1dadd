// program_decode_tree.h (internal): what the parts of program_decode.cc share: the generic tree
// both parsers produce, and the error helper. The parts:
//   program_decode_msgpack.cc   MessagePack bytes -> Val
//   program_decode_json.cc      JSON text -> Val
//   program_decode_rebuild.cc   Val -> FlatBuffers, walking the binary schema
//   program_decode.cc           the entry points (program_decode.h)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pt2f/error.h"

namespace pt2f {
namespace decode {

[[noreturn]] inline void fail(ErrorKind kind, const std::string &msg, const std::string &path = "",
                              const std::string &expected = "", const std::string &got = "") {
  Error::Where w;
  w.section = "program";
  w.path = path;
  w.expected = expected;
  w.got = got;
  throw Error(kind, msg, w);
}

// ---------------------------------------------------------------------------
// The generic tree both parsers produce.

struct Val {
  enum Type : uint8_t { Nil, Bool, Int, Float, Str, Bin, Arr, Map, Other } t = Nil;
  bool neg = false;  // Int: negative, value in i; otherwise value in u
  bool big = false;  // Int: outside 64 bits (JSON only); decimal text in s
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double f = 0;
  std::string s;                                   // Str, Bin, big Int text
  std::vector<Val> items;                          // Arr
  std::vector<std::pair<std::string, Val>> members;  // Map (keys in file order)

  const char *type_name() const {
    switch (t) {
      case Nil: return "nil";
      case Bool: return "bool";
      case Int: return "int";
      case Float: return "float";
      case Str: return "str";
      case Bin: return "bytes";
      case Arr: return "list";
      case Map: return "dict";
      default: return "other";
    }
  }
};

// The tree of a MessagePack program (msgpack-python's unpackb semantics). Throws pt2f::Error (Encoding, Limit).
Val parse_msgpack(const uint8_t *data, size_t size);
// The tree of a JSON program (Python's json module, strict). Throws pt2f::Error (Encoding, Limit).
Val parse_json(const char *data, size_t size);
// FlatBuffers bytes (with the P2FP identifier) of a parsed program: `json` says which encoding's
// spellings `root` uses. Throws pt2f::Error (Encoding, Limit, Version).
std::vector<uint8_t> rebuild_as_flatbuffers(const Val &root, bool json, uint32_t max_depth);

}  // namespace decode
}  // namespace pt2f
