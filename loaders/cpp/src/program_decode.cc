// MessagePack and JSON programs: strict parsers into a generic tree, then a
// schema-driven rebuild as FlatBuffers (see program_decode.h for why).
//
// The parts: program_decode_tree.h lists them.
#include "program_decode.h"

#include "program_decode_tree.h"

namespace pt2f {

std::vector<uint8_t> msgpack_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth) {
  const decode::Val root = decode::parse_msgpack(data, size);
  return decode::rebuild_as_flatbuffers(root, /*json=*/false, max_depth);
}

std::vector<uint8_t> json_to_flatbuffers(const uint8_t *data, size_t size, uint32_t max_depth) {
  const decode::Val root = decode::parse_json(reinterpret_cast<const char *>(data), size);
  return decode::rebuild_as_flatbuffers(root, /*json=*/true, max_depth);
}

}  // namespace pt2f
