/**
 * Opens a .pt2f file held in memory: checks, verifies, and hands out zero-copy views.
 *
 * Runs anywhere JavaScript does (browser, Node, Deno): no Node APIs here.
 * `readPt2f` checks the header and section table, the PROGRAM CRC-32 and the
 * FlatBuffers structure before returning; afterwards the flatc-generated
 * accessors (`file.package()`) are safe to use, and storages and tensors are
 * `Uint8Array` views into the caller's buffer, never copies.
 */
import * as flatbuffers from 'flatbuffers';
import { ChecksumKind, Package, ScalarType } from './_build/classes.js';
import { Container, KNOWN_FEATURES, parseContainer, ProgramEncoding, Section, SectionKind, sectionName, verifySectionChecksum, ENCODING_NAMES } from './container.js';
import { crc32, crc32Hex } from './crc32.js';
import { rootIdentifier, schemaDescriptor } from './descriptor.js';
import { Dumper, renderDump } from './dump.js';
import { ChecksumError, HeaderError, SegmentError, UnsupportedEncodingError, UnsupportedFeatureError, ValidationError } from './errors.js';
import { verifyBuffer, VerifyLimits } from './verify.js';

export interface ReadOptions extends VerifyLimits {
  /** File name used in error messages. */
  file?: string;
  /** Also check the CRC-32 of every DATA section (as `pt2format.read(..., verify_data=True)`). */
  verifyData?: boolean;
  /** Returns the bytes of a sibling shard file named in `Package.shard_files` (Node: read from the same directory). */
  loadShard?: (name: string) => Uint8Array;
}

import { DTYPE_ITEMSIZE } from './generated/itemsize.js';
export { DTYPE_ITEMSIZE };

/** A tensor of `Package.tensors`: metadata plus a zero-copy view of its storage. */
export interface TensorView {
  dtype: string;
  itemsize: number;
  sizes: bigint[];
  strides: bigint[];
  storageOffset: bigint;
  /** The whole storage the tensor views (shared with aliasing tensors). */
  storage: Uint8Array;
  /** Byte offset of element [0, ..., 0] in `storage`. */
  byteOffset: number;
}

interface Loaded { bytes: Uint8Array; container: Container; file: string }

export class Pt2fFile {
  readonly programBytes: Uint8Array;
  private readonly bb: flatbuffers.ByteBuffer;
  private readonly rootPos: number;
  private readonly shards = new Map<number, Loaded>();

  constructor(readonly bytes: Uint8Array, readonly container: Container, rootPos: number, programBytes: Uint8Array,
    private readonly opts: ReadOptions) {
    this.programBytes = programBytes;
    this.rootPos = rootPos;
    this.bb = new flatbuffers.ByteBuffer(programBytes);
  }

  get header() { return this.container.header; }
  get sections(): Section[] { return this.container.sections; }

  /** The root `Package` table, read with the flatc-generated accessors (zero-copy). */
  package(): Package {
    return new Package().__init(this.rootPos, this.bb);
  }

  /** The bytes of `Package.storages[i]`, as a view into the file (or shard) buffer. */
  storageBytes(i: number): Uint8Array {
    const pkg = this.package();
    const n = pkg.storagesLength();
    const path = `storages[${i}]`;
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new ValidationError('storage index out of range', { file: this.opts.file, path, expected: `< ${n}`, got: i });
    const st = pkg.storages(i)!;
    const segIndex = st.segment();
    const nseg = pkg.segmentsLength();
    if (segIndex >= nseg) throw new ValidationError('storage names a missing segment', { file: this.opts.file, path: `${path}.segment`, expected: `< ${nseg}`, got: segIndex });
    const seg = pkg.segments(segIndex)!;
    const where = this.fileOf(seg.file(), `segments[${segIndex}].file`);
    const secIndex = seg.section();
    const sec = where.container.sections[secIndex];
    if (!sec || sec.kind !== SectionKind.DATA) {
      throw new SegmentError('segment names a section that is not a DATA section', { file: where.file, path: `segments[${segIndex}].section`, expected: 'a DATA section index', got: secIndex });
    }
    const off = st.offset();
    const size = st.size();
    if (off + size > BigInt(sec.length)) {
      throw new SegmentError('storage runs past the end of its segment', { file: where.file, section: sectionName(sec), path, expected: `end <= ${sec.length}`, got: off + size });
    }
    const start = sec.offset + Number(off);
    return where.bytes.subarray(start, start + Number(size));
  }

  /** `Package.tensors[i]` with a zero-copy view of its storage; every byte it can reach is checked to lie in the storage. */
  tensor(i: number): TensorView {
    const pkg = this.package();
    const path = `tensors[${i}]`;
    const n = pkg.tensorsLength();
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new ValidationError('tensor index out of range', { file: this.opts.file, path, expected: `< ${n}`, got: i });
    const t = pkg.tensors(i)!;
    if (t.layout() !== 1 || t.subclass() !== null) {
      throw new ValidationError('tensor is built from other tensor rows (a sparse layout or a wrapper subclass); read its parts', { file: this.opts.file, path, expected: 'a strided tensor', got: t.subclass() !== null ? 'a subclass' : `layout ${t.layout()}` });
    }
    const dtypeValue = t.dtype();
    const dtype = ScalarType[dtypeValue] ?? String(dtypeValue);
    const itemsize = DTYPE_ITEMSIZE[dtype];
    if (!itemsize) throw new ValidationError('tensor has no known dtype', { file: this.opts.file, path: `${path}.dtype`, expected: 'a dtype with data', got: dtype });
    const sizes: bigint[] = [];
    const strides: bigint[] = [];
    for (let d = 0; d < t.sizesLength(); d++) sizes.push(t.sizes(d)!);
    for (let d = 0; d < t.stridesLength(); d++) strides.push(t.strides(d)!);
    if (sizes.length !== strides.length) throw new ValidationError('sizes and strides differ in length', { file: this.opts.file, path, expected: sizes.length, got: strides.length });
    const storage = this.storageBytes(t.storage());
    const so = t.storageOffset();
    let lo = so;
    let hi = so;
    let empty = false;
    sizes.forEach((s, d) => {
      if (s < 0n) throw new ValidationError('negative size', { file: this.opts.file, path: `${path}.sizes[${d}]`, expected: '>= 0', got: s });
      if (s === 0n) empty = true;
      const span = (s - 1n) * strides[d]!;
      if (span < 0n) lo += span; else hi += span;
    });
    const isz = BigInt(itemsize);
    if (!empty && (lo < 0n || (hi + 1n) * isz > BigInt(storage.length))) {
      throw new SegmentError('tensor reaches bytes outside its storage', { file: this.opts.file, path, expected: `elements within ${storage.length} bytes`, got: `elements ${lo}..${hi}` });
    }
    const byteOffset = empty ? 0 : Number(so * isz);
    return { dtype, itemsize, sizes, strides, storageOffset: so, storage, byteOffset };
  }

  /** Checks every DATA section's CRC-32 and every storage's checksum, opening the shard files segments use. */
  verifyData(): void {
    const pkg = this.package();
    for (let i = 0; i < pkg.segmentsLength(); i++) this.fileOf(pkg.segments(i)!.file(), `segments[${i}].file`);
    for (const s of this.container.sections) if (s.kind === SectionKind.DATA) verifySectionChecksum(this.bytes, s, this.opts.file);
    for (const shard of this.shards.values()) for (const s of shard.container.sections) verifySectionChecksum(shard.bytes, s, shard.file);
    for (let i = 0; i < pkg.storagesLength(); i++) {
      const st = pkg.storages(i)!;
      if (st.checksumKind() !== ChecksumKind.CRC32) continue;
      const got = crc32(this.storageBytes(i));
      if (got !== st.checksum()) {
        throw new ChecksumError('storage checksum mismatch', { file: this.opts.file, path: `storages[${i}]`,
          expected: crc32Hex(st.checksum()), got: crc32Hex(got) });
      }
    }
  }

  /** The canonical dump (SPEC.md §6) of the whole file, newline included. */
  dump(): string {
    const d = schemaDescriptor();
    const tree = new Dumper(this.programBytes, { file: this.opts.file, section: sectionName(this.sections[0]!) },
      this.header.formatMinor).table(this.rootPos, d.root, '');
    const crcs: string[] = [];
    const n = this.package().storagesLength();
    for (let i = 0; i < n; i++) crcs.push(crc32Hex(crc32(this.storageBytes(i))));
    return renderDump(tree, crcs);
  }

  private fileOf(k: number, path: string): Loaded {
    if (k === 0) return { bytes: this.bytes, container: this.container, file: this.opts.file ?? '<memory>' };
    const have = this.shards.get(k);
    if (have) return have;
    const pkg = this.package();
    const n = pkg.shardFilesLength();
    if (k > n) throw new ValidationError('segment names a missing shard file', { file: this.opts.file, path, expected: `<= ${n}`, got: k });
    const entry = pkg.shardFiles(k - 1)!;
    const name = entry.name() ?? '';
    if (name === '' || name.includes('/') || name.includes('\\') || name === '..' || name === '.') {
      throw new ValidationError('shard file name must be a plain file name', { file: this.opts.file, path: `shard_files[${k - 1}].name`, expected: "no '/', '\\\\' or '..'", got: JSON.stringify(name) });
    }
    if (!this.opts.loadShard) throw new SegmentError('data lives in a shard file but no shard loader was given', { file: this.opts.file, path, got: name });
    const bytes = this.opts.loadShard(name);
    if (BigInt(bytes.length) !== entry.size()) {
      throw new SegmentError('shard file has the wrong size', { file: name, expected: entry.size(), got: bytes.length });
    }
    const container = parseContainer(bytes, { file: name, role: 'shard' });
    // A shard from another save (same name, even same size) carries another package id: refuse it.
    const mainId = this.container.header.packageId;
    const recorded = entry.packageIdArray();
    let want = mainId;
    if (recorded && recorded.length !== 0) {
      if (!sameBytes(recorded, mainId)) {
        throw new HeaderError("shard_files entry names another save than this file's header", { file: this.opts.file, path: `shard_files[${k - 1}].package_id`, expected: hexBytes(mainId), got: hexBytes(recorded) });
      }
      want = recorded;
    }
    if (!sameBytes(container.header.packageId, want)) {
      throw new HeaderError('shard file belongs to another save (package_id differs)', { file: name, section: 'header', offset: 44, path: `shard_files[${k - 1}].package_id`, expected: hexBytes(want), got: hexBytes(container.header.packageId) });
    }
    const loaded = { bytes, container, file: name };
    if (this.opts.verifyData) for (const s of container.sections) verifySectionChecksum(bytes, s, name);
    this.shards.set(k, loaded);
    return loaded;
  }
}

/** Reads and checks a .pt2f file from memory; throws a Pt2fError subclass on damaged or unsupported input. */
export function readPt2f(data: ArrayBuffer | Uint8Array, opts: ReadOptions = {}): Pt2fFile {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const file = opts.file;
  const container = parseContainer(bytes, { file, role: 'main' });
  const prog = container.sections[0]!;
  verifySectionChecksum(bytes, prog, file);
  if (prog.encoding !== ProgramEncoding.FLATBUFFERS) {
    throw new UnsupportedEncodingError(`encoding not supported by this reader: ${ENCODING_NAMES[prog.encoding]}`,
      { file, section: sectionName(prog), expected: 'FLATBUFFERS', got: ENCODING_NAMES[prog.encoding] });
  }
  const programBytes = bytes.subarray(prog.offset, prog.offset + prog.length);
  const desc = schemaDescriptor();
  const rootPos = verifyBuffer(programBytes, desc.root, rootIdentifier(), opts, { file, section: sectionName(prog) });
  const f = new Pt2fFile(bytes, container, rootPos, programBytes, opts);
  checkPackageHeader(f, file);
  if (opts.verifyData) f.verifyData();
  return f;
}

/** The package's format version and required features must agree with the header. */
function checkPackageHeader(f: Pt2fFile, file?: string): void {
  const pkg = f.package();
  const fv = pkg.formatVersion()!;
  const h = f.header;
  if (fv.major() !== h.formatMajor || fv.minor() !== h.formatMinor) {
    throw new ValidationError('Package.format_version differs from the header', { file, path: 'format_version',
      expected: `${h.formatMajor}.${h.formatMinor}`, got: `${fv.major()}.${fv.minor()}` });
  }
  const features = pkg.requiredFeatures();
  if ((features & ~KNOWN_FEATURES) !== 0n) {
    throw new UnsupportedFeatureError('package requires features this reader does not know', { file, path: 'required_features',
      expected: `bits within 0x${KNOWN_FEATURES.toString(16)}`, got: `0x${features.toString(16)}` });
  }
}


function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function hexBytes(a: Uint8Array): string {
  return Array.from(a, (x) => x.toString(16).padStart(2, '0')).join('');
}
