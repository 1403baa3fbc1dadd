/**
 * CRC-32 (ISO-HDLC, as zlib's crc32): the checksum of headers, sections, storages.
 *
 * Table-driven, one byte at a time: simple and fast enough for headers and
 * program sections; storages are only checksummed on request.
 */

const TABLE: Uint32Array = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** Continues a CRC-32 over `bytes`; pass the previous result as `crc` (0 to start). */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = (crc ^ 0xffffffff) >>> 0;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** "0x" + 8 lowercase hex digits, the dump's spelling of a CRC-32. */
export function crc32Hex(value: number): string {
  return '0x' + (value >>> 0).toString(16).padStart(8, '0');
}
