/**
 * The container: parses and checks the header and section table (SPEC.md §2-3).
 *
 * Checks run in the order the spec lists, so the first error a reader
 * reports is the same in every language. All offsets are checked against the
 * file size before anything is read at them.
 */
import { crc32 } from './crc32.js';
import { ChecksumError, EncodingError, HeaderError, SegmentError, UnsupportedFeatureError, VersionError } from './errors.js';

export const MAGIC = Uint8Array.of(0x89, 0x50, 0x54, 0x32, 0x46, 0x0d, 0x0a, 0x1a);
export const HEADER_SIZE = 64;
export const SECTION_ENTRY_SIZE = 48;
export const HEADER_VERSION = 1;
/** The schema major version this reader implements. */
export const READER_FORMAT_MAJOR: number = SCHEMA_VERSION[0];  // the schema's version line (generated)
/**
 * Bits of `required_features` this reader understands and the section kinds it knows, generated from
 * schema/container.toml (SPEC.md 8.3-8.4). Bit 1 (external raw files): such storages are validated and
 * dumped; opening the external file for its bytes is refused with a SegmentError by this reader. Bit 2
 * (meta-device state): `storageBytes(i)` gives an empty view and `tensor(i)` refuses a tensor on one by
 * name. Bit 3 (composite tensors): the dump shows them whole; `tensor(i)` refuses them by name.
 */
export { KNOWN_FEATURES, SectionKind } from './generated/container.js';
import { KNOWN_FEATURES, SECTION_KINDS, SectionKind } from './generated/container.js';
import { SCHEMA_VERSION } from './generated/minors.js';

export const ProgramEncoding = { FLATBUFFERS: 1, MSGPACK: 2, JSON: 3 } as const;
export const ENCODING_NAMES: Record<number, string> = { 1: 'FLATBUFFERS', 2: 'MSGPACK', 3: 'JSON' };

export interface Header {
  headerVersion: number;
  sectionCount: number;
  headerLength: number;
  formatMajor: number;
  formatMinor: number;
  flags: number;
  requiredFeatures: bigint;
  fileLength: number;
  headerChecksum: number;
  /** Identity of the save (SPEC.md §2): a main file and its shards share it; all zero when not recorded. */
  packageId: Uint8Array;
}

export interface Section {
  /** Position in the section table. */
  index: number;
  kind: number;
  encoding: number;
  alignment: number;
  offset: number;
  length: number;
  checksumKind: number;
  checksum: number;
  /** Entry flags: bit 0 OPTIONAL (a reader that does not know the kind skips the section); other bits ignored. */
  flags: number;
}

/** Section-entry flag: a reader that does not know the section's kind skips it (SPEC.md §3, §8). */
export const SECTION_OPTIONAL = 0x1;

export interface Container {
  header: Header;
  sections: Section[];
}

/** How errors name a section, as the Python reader does: `0 (PROGRAM)`, `1 (DATA)`. */
export function sectionName(s: Pick<Section, 'index' | 'kind'>): string {
  return s.kind === SectionKind.PROGRAM ? `${s.index} (PROGRAM)` : s.kind === SectionKind.DATA ? `${s.index} (DATA)` : `${s.index} (kind ${s.kind})`;
}

function u64(view: DataView, at: number, what: string, ctx: { file?: string; section?: string }): number {
  const v = view.getBigUint64(at, true);
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new HeaderError(`${what} is too large`, { ...ctx, offset: at, expected: `<= ${Number.MAX_SAFE_INTEGER}`, got: v });
  }
  return Number(v);
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

function allZero(bytes: Uint8Array, from: number, to: number): number {
  for (let i = from; i < to; i++) if (bytes[i] !== 0) return i;
  return -1;
}

/**
 * Parses and checks the header and section table of `bytes`.
 * `role` is 'main' (exactly one PROGRAM section, entry 0) or 'shard' (none).
 */
export function parseContainer(bytes: Uint8Array, opts: { file?: string; role?: 'main' | 'shard' } = {}): Container {
  const file = opts.file;
  const role = opts.role ?? 'main';
  const hctx = { file, section: 'header' };
  const size = bytes.length;
  if (size < HEADER_SIZE) {
    throw new HeaderError('file is shorter than the header', { ...hctx, offset: 0, expected: `>= ${HEADER_SIZE} bytes`, got: size });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < MAGIC.length; i++) {
    if (bytes[i] !== MAGIC[i]) {
      throw new HeaderError('bad magic: not a .pt2f file', { ...hctx, offset: 0, expected: hex(MAGIC), got: hex(bytes.subarray(0, 8)) });
    }
  }
  const headerVersion = view.getUint16(8, true);
  if (headerVersion !== HEADER_VERSION) {
    throw new (headerVersion > HEADER_VERSION ? VersionError : HeaderError)('unsupported header version', { ...hctx, offset: 8, expected: HEADER_VERSION, got: headerVersion });
  }
  const sectionCount = view.getUint16(10, true);
  const headerLength = view.getUint32(12, true);
  const wantLength = HEADER_SIZE + SECTION_ENTRY_SIZE * sectionCount;
  if (sectionCount < 1) {
    throw new HeaderError('section_count is 0', { ...hctx, offset: 10, expected: '>= 1', got: sectionCount });
  }
  if (headerLength !== wantLength) {
    throw new HeaderError('header_length does not match section_count', { ...hctx, offset: 12, expected: wantLength, got: headerLength });
  }
  if (headerLength > size) {
    throw new HeaderError('section table runs past the end of the file', { ...hctx, offset: 12, expected: `<= ${size}`, got: headerLength });
  }
  const headerChecksum = view.getUint32(40, true);
  const crc = crc32(bytes.subarray(44, headerLength), crc32(new Uint8Array(4), crc32(bytes.subarray(0, 40))));
  if (crc !== headerChecksum) {
    throw new HeaderError('header checksum mismatch', { ...hctx, offset: 40, expected: hex32(headerChecksum), got: hex32(crc) });
  }
  const fileLengthBig = view.getBigUint64(32, true);
  if (fileLengthBig !== BigInt(size)) {
    throw new HeaderError('file_length does not match the file size (truncated or extended file?)', { ...hctx, offset: 32, expected: size, got: fileLengthBig });
  }
  const fileLength = size;
  const formatMajor = view.getUint16(16, true);
  const formatMinor = view.getUint16(18, true);
  if (formatMajor > READER_FORMAT_MAJOR || formatMajor === 0) {
    throw new VersionError('file needs a newer reader (format major version)', { ...hctx, offset: 16, expected: `<= ${READER_FORMAT_MAJOR}`, got: formatMajor });
  }
  const requiredFeatures = view.getBigUint64(24, true);
  const unknown = requiredFeatures & ~KNOWN_FEATURES;
  if (unknown !== 0n) {
    throw new UnsupportedFeatureError('file requires features this reader does not know', { ...hctx, offset: 24, expected: `bits within 0x${KNOWN_FEATURES.toString(16)}`, got: `0x${unknown.toString(16)}` });
  }
  // `flags` and the reserved bytes: writers write zero, readers ignore them (SPEC.md §8); the
  // header checksum still covers them.
  const flags = view.getUint32(20, true);

  const sections: Section[] = [];
  for (let i = 0; i < sectionCount; i++) sections.push(parseEntry(bytes, view, i, file));
  checkSectionSet(bytes, sections, headerLength, fileLength, role, file);
  return {
    header: { headerVersion, sectionCount, headerLength, formatMajor, formatMinor, flags, requiredFeatures, fileLength, headerChecksum,
      packageId: bytes.slice(44, 60) },
    sections,
  };
}

function parseEntry(bytes: Uint8Array, view: DataView, index: number, file?: string): Section {
  const at = HEADER_SIZE + SECTION_ENTRY_SIZE * index;
  const ctx = { file, section: `section table entry ${index}` };
  const kind = view.getUint16(at, true);
  const encoding = view.getUint16(at + 2, true);
  const alignment = view.getUint32(at + 4, true);
  const offset = u64(view, at + 8, 'section offset', ctx);
  const length = u64(view, at + 16, 'section length', ctx);
  const checksumKind = view.getUint32(at + 24, true);
  const checksum = view.getUint32(at + 28, true);
  const flags = view.getUint32(at + 32, true);
  if (kind !== SectionKind.PROGRAM && kind !== SectionKind.DATA && !(flags & SECTION_OPTIONAL)) {
    throw new HeaderError('unknown section kind, not marked OPTIONAL', { ...ctx, offset: at, expected: '1 (PROGRAM), 2 (DATA), or flags bit 0 (OPTIONAL) set', got: kind });
  }
  const name = sectionName({ index, kind });
  const sctx = { file, section: name };
  if (kind === SectionKind.PROGRAM && !(encoding in ENCODING_NAMES)) {
    throw new EncodingError('unknown program encoding', { ...sctx, offset: at + 2, expected: '1 (FLATBUFFERS), 2 (MSGPACK) or 3 (JSON)', got: encoding });
  }
  if (kind === SectionKind.DATA && encoding !== 0) {
    throw new EncodingError('unknown data encoding', { ...sctx, offset: at + 2, expected: '0 (RAW)', got: encoding });
  }
  const minAlign = SECTION_KINDS[String(kind)]?.minAlignment ?? 8;
  if (!isPowerOfTwo(alignment) || alignment < minAlign) {
    throw new SegmentError('alignment must be a power of two', { ...sctx, offset: at + 4, expected: `power of two >= ${minAlign}`, got: alignment });
  }
  if (offset % alignment !== 0) {
    throw new SegmentError(`section offset is not a multiple of alignment ${alignment}`, { ...sctx, offset: at + 8, expected: `multiple of ${alignment}`, got: offset });
  }
  if (checksumKind !== 0 && checksumKind !== 1) {
    throw new HeaderError('unknown checksum kind', { ...sctx, offset: at + 24, expected: '0 (none) or 1 (CRC-32)', got: checksumKind });
  }
  if (kind === SectionKind.PROGRAM && checksumKind !== 1) {
    throw new HeaderError('the PROGRAM section must have a CRC-32', { ...sctx, offset: at + 24, expected: 1, got: checksumKind });
  }
  if (checksumKind === 0 && checksum !== 0) {
    throw new HeaderError('checksum must be 0 when checksum_kind is NONE', { ...sctx, offset: at + 28, expected: 0, got: checksum });
  }
  return { index, kind, encoding, alignment, offset, length, checksumKind, checksum, flags };
}

function checkSectionSet(bytes: Uint8Array, sections: Section[], headerLength: number, fileLength: number,
  role: 'main' | 'shard', file?: string): void {
  const programs = sections.filter((s) => s.kind === SectionKind.PROGRAM);
  if (role === 'main' && (programs.length !== 1 || sections[0]!.kind !== SectionKind.PROGRAM)) {
    throw new HeaderError('a main file has exactly one PROGRAM section, as entry 0',
      { file, section: 'section table', offset: HEADER_SIZE, expected: 'one PROGRAM section at entry 0', got: `${programs.length} PROGRAM section(s)` });
  }
  if (role === 'shard' && programs.length !== 0) {
    throw new HeaderError('a shard file has no PROGRAM section', { file, section: 'section table', offset: HEADER_SIZE, expected: 0, got: programs.length });
  }
  let end = headerLength;
  for (const s of sections) {
    const ctx = { file, section: sectionName(s) };
    if (s.offset < end) {
      throw new SegmentError(s.index === 0 ? 'section starts inside the header' : 'sections are not sorted by offset or overlap',
        { ...ctx, offset: s.offset, expected: `>= ${end}`, got: s.offset });
    }
    if (s.offset - end >= s.alignment) {
      throw new SegmentError('gap before the section is longer than its alignment padding',
        { ...ctx, offset: end, expected: `< ${s.alignment} bytes of padding`, got: s.offset - end });
    }
    if (s.length > fileLength - s.offset) {
      throw new SegmentError('section ends past the end of the file', { ...ctx, offset: s.offset, expected: `end <= ${fileLength}`, got: s.offset + s.length });
    }
    const nz = allZero(bytes, end, s.offset);
    if (nz >= 0) throw new SegmentError('padding before the section is not zero', { ...ctx, offset: nz, expected: 0, got: bytes[nz] });
    end = s.offset + s.length;
  }
  if (end !== fileLength) {
    const last = sections[sections.length - 1]!;
    throw new SegmentError('bytes after the last section', { file, section: sectionName(last), offset: end, expected: `file ends at ${end}`, got: fileLength });
  }
}

/** Checks a section's CRC-32 (when it has one). */
export function verifySectionChecksum(bytes: Uint8Array, s: Section, file?: string): void {
  if (s.checksumKind !== 1) return;
  const got = crc32(bytes.subarray(s.offset, s.offset + s.length));
  if (got !== s.checksum) {
    throw new ChecksumError('section checksum mismatch', { file, section: sectionName(s), offset: s.offset, expected: hex32(s.checksum), got: hex32(got) });
  }
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, '0')).join(' ');
}

function hex32(v: number): string {
  return '0x' + (v >>> 0).toString(16).padStart(8, '0');
}
