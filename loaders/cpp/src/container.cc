// Header and section-table checks of SPEC.md §2-3, in the spec's order.
#include "pt2f/container.h"

#include <cstdio>
#include <cstring>

#include "pt2f/crc32.h"
#include "pt2f/error.h"

namespace pt2f {
namespace {

std::string hex32(uint32_t v) {
  static const char *digits = "0123456789abcdef";
  std::string s = "0x";
  for (int i = 7; i >= 0; --i) s += digits[(v >> (4 * i)) & 0xF];
  return s;
}

std::string num(uint64_t v) { return std::to_string(v); }

std::string hex64(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  return buf;
}

bool is_power_of_two(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (p[i]) return false;
  return true;
}

const char *kind_name(uint16_t kind) {
  return kind == uint16_t(SectionKind::Program) ? "PROGRAM" : kind == uint16_t(SectionKind::Data) ? "DATA" : "?";
}

}  // namespace

std::string section_label(const Header &header, size_t index) {
  std::string label = std::to_string(index);
  if (index < header.sections.size()) {
    const uint16_t kind = header.sections[index].kind;
    label += kind_name(kind)[0] == '?' ? " (kind " + std::to_string(kind) + ")" : std::string(" (") + kind_name(kind) + ")";
  }
  return label;
}

Header parse_container(const uint8_t *data, size_t size, FileRole role, const std::string &file) {
  auto fail = [&](ErrorKind kind, const std::string &msg, std::optional<uint64_t> offset,
                  const std::string &expected = "", const std::string &got = "") -> Error {
    Error::Where w;
    w.file = file;
    w.section = "header";
    w.offset = offset;
    w.expected = expected;
    w.got = got;
    return Error(kind, msg, w);
  };

  // SPEC.md §2, in order (the same order as pt2format/_container/header.py).
  if (size < kHeaderSize)
    throw fail(ErrorKind::Header, "file too short for a header", 0, ">= 64 bytes", num(size) + " bytes");
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0)
    throw fail(ErrorKind::Header, "not a pt2format file: bad magic", 0, "89 50 54 32 46 0d 0a 1a", "other bytes");
  Header h;
  h.header_version = load_u16(data + 8);
  h.section_count = load_u16(data + 10);
  h.header_length = load_u32(data + 12);
  h.format_major = load_u16(data + 16);
  h.format_minor = load_u16(data + 18);
  h.flags = load_u32(data + 20);
  h.required_features = load_u64(data + 24);
  h.file_length = load_u64(data + 32);
  h.header_checksum = load_u32(data + 40);
  std::memcpy(h.package_id, data + 44, sizeof h.package_id);
  if (h.header_version != kHeaderVersion)
    throw fail(h.header_version > kHeaderVersion ? ErrorKind::Version : ErrorKind::Header,
               "unsupported header_version", 8, num(kHeaderVersion), num(h.header_version));
  if (h.section_count < 1)
    throw fail(ErrorKind::Header, "section_count must be at least 1", 10, ">= 1", num(h.section_count));
  const uint64_t want_len = kHeaderSize + uint64_t(kSectionEntrySize) * h.section_count;
  if (h.header_length != want_len)
    throw fail(ErrorKind::Header, "header_length does not match section_count", 12, num(want_len),
               num(h.header_length));
  if (h.header_length > size)
    throw fail(ErrorKind::Header, "file truncated inside the section table", size, ">= " + num(h.header_length) +
               " bytes", num(size));
  {
    static const uint8_t zeros[4] = {0, 0, 0, 0};
    uint32_t c = crc32_update(0, data, 40);
    c = crc32_update(c, zeros, 4);
    c = crc32_update(c, data + 44, h.header_length - 44);
    if (c != h.header_checksum)
      throw fail(ErrorKind::Header, "header checksum mismatch", 40, hex32(c), hex32(h.header_checksum));
  }
  if (h.file_length != size)
    throw fail(ErrorKind::Header,
               std::string("file ") + (size < h.file_length ? "truncated" : "longer than recorded") +
                   ": file_length does not match the file size",
               32, num(h.file_length), num(size));
  if (h.format_major > kReaderFormatMajor || h.format_major == 0)
    throw fail(ErrorKind::Version,
               "format version " + num(h.format_major) + "." + num(h.format_minor) +
                   " is not readable by this reader (this reader reads " + num(kReaderFormatMajor) + "." +
                   num(kReaderFormatMinor) + ", and every minor of major " + num(kReaderFormatMajor) + ")",
               16, "major " + num(kReaderFormatMajor), num(h.format_major));
  if (h.required_features & ~kKnownFeatures)
    throw fail(ErrorKind::UnsupportedFeature, "file requires unknown features", 24,
               "bits within " + hex64(kKnownFeatures), hex64(h.required_features));
  // `flags` and the reserved bytes: writers write zero, readers ignore them (SPEC.md §8); the
  // header checksum still covers them.

  // SPEC.md §3: each entry.
  h.sections.resize(h.section_count);
  for (size_t i = 0; i < h.section_count; ++i) {
    const uint8_t *e = data + kHeaderSize + kSectionEntrySize * i;
    const uint64_t at = kHeaderSize + kSectionEntrySize * i;
    Section &s = h.sections[i];
    s.kind = load_u16(e);
    s.encoding = load_u16(e + 2);
    s.alignment = load_u32(e + 4);
    s.offset = load_u64(e + 8);
    s.length = load_u64(e + 16);
    s.checksum_kind = load_u32(e + 24);
    s.checksum = load_u32(e + 28);
    s.flags = load_u32(e + 32);
    auto sfail = [&](ErrorKind kind, const std::string &msg, uint64_t field, const std::string &expected,
                     const std::string &got) -> Error {
      Error::Where w;
      w.file = file;
      w.section = section_label(h, i);
      w.offset = at + field;
      w.expected = expected;
      w.got = got;
      return Error(kind, msg, w);
    };
    const bool program = s.kind == uint16_t(SectionKind::Program);
    const bool data_kind = s.kind == uint16_t(SectionKind::Data);
    if (!program && !data_kind && !(s.flags & kSectionOptional))
      throw sfail(ErrorKind::Header, "unknown section kind, not marked OPTIONAL", 0,
                  "1 (PROGRAM), 2 (DATA), or flags bit 0 (OPTIONAL) set", num(s.kind));
    if (program && (s.encoding < 1 || s.encoding > 3))
      throw sfail(ErrorKind::Encoding, "unknown program encoding", 2, "1 (FLATBUFFERS), 2 (MSGPACK) or 3 (JSON)",
                  num(s.encoding));
    if (data_kind && s.encoding != kDataEncodingRaw)
      throw sfail(ErrorKind::Encoding, "unknown data encoding", 2, "0 (RAW)", num(s.encoding));
    const uint32_t min_align = section_min_alignment(s.kind);
    if (!is_power_of_two(s.alignment) || s.alignment < min_align)
      throw sfail(ErrorKind::Segment, "alignment must be a power of two", 4, "power of two >= " + num(min_align),
                  num(s.alignment));
    if (s.offset % s.alignment != 0)
      throw sfail(ErrorKind::Segment, "offset is not a multiple of alignment " + num(s.alignment), 8,
                  "multiple of " + num(s.alignment), num(s.offset));
    if ((s.checksum_kind != kChecksumNone && s.checksum_kind != kChecksumCrc32) ||
        (program && s.checksum_kind != kChecksumCrc32))
      throw sfail(ErrorKind::Header, "bad checksum_kind", 24, program ? "1 (CRC32)" : "0 (NONE) or 1 (CRC32)",
                  num(s.checksum_kind));
    if (s.checksum_kind == kChecksumNone && s.checksum != 0)
      throw sfail(ErrorKind::Header, "checksum must be 0 when checksum_kind is NONE", 28, "0", num(s.checksum));
  }

  // Program placement, then layout: sorted, in bounds, only zero padding between.
  size_t programs = 0;
  for (const Section &s : h.sections) programs += s.kind == uint16_t(SectionKind::Program);
  if (role == FileRole::Shard && programs) {
    Error::Where w;
    w.file = file;
    w.section = "header";
    w.expected = "DATA sections only";
    w.got = num(programs) + " PROGRAM";
    throw Error(ErrorKind::Header, "a shard file has no PROGRAM section", w);
  }
  if (role == FileRole::Main && (programs != 1 || h.sections[0].kind != uint16_t(SectionKind::Program))) {
    Error::Where w;
    w.file = file;
    w.section = "header";
    w.expected = "PROGRAM at entry 0 only";
    w.got = num(programs) + " PROGRAM section(s)";
    throw Error(ErrorKind::Header, "a file has exactly one PROGRAM section, as entry 0", w);
  }
  uint64_t cursor = h.header_length;
  for (size_t i = 0; i < h.sections.size(); ++i) {
    const Section &s = h.sections[i];
    Error::Where w;
    w.file = file;
    w.section = section_label(h, i);
    w.offset = s.offset;
    if (s.offset < cursor) {
      w.expected = "offset >= " + num(cursor);
      w.got = num(s.offset);
      throw Error(ErrorKind::Segment,
                  i == 0 ? "section overlaps the section table"
                         : "section overlaps section " + section_label(h, i - 1), w);
    }
    if (s.offset - cursor >= s.alignment) {
      w.offset = cursor;
      w.expected = "< " + num(s.alignment) + " bytes";
      w.got = num(s.offset - cursor);
      throw Error(ErrorKind::Segment, "gap before section is longer than its alignment padding", w);
    }
    if (s.offset > size || s.length > size - s.offset) {
      w.expected = "length <= " + num(s.offset > size ? 0 : size - s.offset);
      w.got = num(s.length);
      throw Error(ErrorKind::Segment, "section ends past the end of the file", w);
    }
    if (!all_zero(data + cursor, size_t(s.offset - cursor))) {
      w.offset = cursor;
      throw Error(ErrorKind::Segment, "padding before section is not zero", w);
    }
    cursor = s.offset + s.length;
  }
  if (cursor != size) {
    Error::Where w;
    w.file = file;
    w.section = section_label(h, h.sections.size() - 1);
    w.offset = cursor;
    w.expected = "file ends at " + num(cursor);
    w.got = num(size);
    throw Error(ErrorKind::Segment, "bytes after the last section", w);
  }
  return h;
}

}  // namespace pt2f
