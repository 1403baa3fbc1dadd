// pt2f/crc32.h: CRC-32 (ISO-HDLC, as zlib's crc32), the checksum of SPEC.md.
#pragma once

#include <cstddef>
#include <cstdint>

namespace pt2f {

/// Continue a CRC-32 over `size` bytes; start with crc = 0 (zlib convention:
/// crc32(crc32(0, a), b) == crc32(0, a + b)).
uint32_t crc32_update(uint32_t crc, const uint8_t *data, size_t size);

/// CRC-32 of one buffer.
inline uint32_t crc32(const uint8_t *data, size_t size) { return crc32_update(0, data, size); }

}  // namespace pt2f
