// pt2f/container.h: the fixed header and section table of SPEC.md §2-3.
//
// parse_container() runs the spec's checks in the spec's order (the order of
// pt2format/_container/header.py) and throws a pt2f::Error naming the first
// violation; it reads nothing but the header,
// the section table and the padding bytes between sections.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

// kKnownFeatures, kFeature*, SectionKind: generated from schema/container.toml (SPEC.md §8.3-8.4).
#include "pt2format_container.h"
#include "pt2format_minors.h"

namespace pt2f {

constexpr uint8_t kMagic[8] = {0x89, 'P', 'T', '2', 'F', '\r', '\n', 0x1a};
constexpr size_t kHeaderSize = 64;
constexpr size_t kSectionEntrySize = 48;
constexpr uint16_t kHeaderVersion = 1;
/// Newest schema version this reader understands.
constexpr uint16_t kReaderFormatMajor = minors::kSchemaMajor;
constexpr uint16_t kReaderFormatMinor = minors::kSchemaMinor;
enum class ProgramEncoding : uint16_t { FlatBuffers = 1, MsgPack = 2, Json = 3 };
constexpr uint16_t kDataEncodingRaw = 0;
constexpr uint32_t kChecksumNone = 0;
constexpr uint32_t kChecksumCrc32 = 1;
/// Section-entry flag: a reader that does not know the section's kind skips it (SPEC.md §3, §8).
constexpr uint32_t kSectionOptional = 0x1;

/// One section-table entry (SPEC.md §3), as stored.
struct Section {
  uint16_t kind = 0;
  uint16_t encoding = 0;
  uint32_t alignment = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t checksum_kind = 0;
  uint32_t checksum = 0;
  uint32_t flags = 0;  // bit 0: OPTIONAL; other bits ignored
};

/// The header (SPEC.md §2) and its section table, after every check passed.
struct Header {
  uint16_t header_version = 0;
  uint16_t section_count = 0;
  uint32_t header_length = 0;
  uint16_t format_major = 0;
  uint16_t format_minor = 0;
  uint32_t flags = 0;
  uint64_t required_features = 0;
  uint64_t file_length = 0;
  uint32_t header_checksum = 0;
  /// Identity of the save (SPEC.md §2): a main file and its shards share it; all zero when not recorded.
  uint8_t package_id[16] = {};
  std::vector<Section> sections;
};

/// A main file holds exactly one PROGRAM section (entry 0); a shard file none.
enum class FileRole { Main, Shard };

/// Check and decode the header and section table of a file held in
/// data[0, size). `file_name` only labels error messages.
Header parse_container(const uint8_t *data, size_t size, FileRole role, const std::string &file_name);

/// Label of section `index` in messages, as pt2format names it: "0 (PROGRAM)", "2 (DATA)".
std::string section_label(const Header &header, size_t index);

/// Little-endian loads from unaligned bytes.
inline uint16_t load_u16(const uint8_t *p) { return uint16_t(p[0] | p[1] << 8); }
inline uint32_t load_u32(const uint8_t *p) {
  return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
inline uint64_t load_u64(const uint8_t *p) { return uint64_t(load_u32(p)) | uint64_t(load_u32(p + 4)) << 32; }

}  // namespace pt2f
