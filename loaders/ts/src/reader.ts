/**
 * Opens a .pt2f file held in memory: checks, verifies, and hands out zero-copy views.
 *
 * Runs anywhere JavaScript does (browser, Node, Deno): no Node APIs here.
 * `readPt2f` checks the header and section table and the PROGRAM CRC-32,
 * decodes the program in any of its three encodings (FLATBUFFERS after the
 * structural verifier, MSGPACK, JSON) into one tree (src/tree.ts), checking
 * every string's class while decoding, then runs the validation of SPEC.md
 * (src/validate.ts, the rules of pt2format/_validate.py) before returning.
 * The tree (`file.tree()`) is what the dump, storages and tensors read; for a
 * FlatBuffers program the flatc-generated accessors (`file.package()`) are
 * safe to use too. Storages and tensors are `Uint8Array` views into the
 * caller's buffer, never copies.
 */
import * as flatbuffers from 'flatbuffers';
import { ChecksumKind, Package, ScalarType } from './_build/classes.js';
import { Container, KNOWN_FEATURES, parseContainer, ProgramEncoding, Section, SectionKind, sectionName, verifySectionChecksum, ENCODING_NAMES } from './container.js';
import { crc32, crc32Hex } from './crc32.js';
import { rootIdentifier, schemaDescriptor } from './descriptor.js';
import { renderDump, TreeDumper } from './dump.js';
import { ChecksumError, HeaderError, LimitError, Pt2fError, VersionError, SegmentError, StaleShardError, UnsupportedEncodingError, UnsupportedFeatureError, ValidationError } from './errors.js';
import { FbTreeDecoder } from './fbtree.js';
import { decodeJson } from './json.js';
import { decodeMsgpack } from './msgpack.js';
import { TTable, TValue } from './tree.js';
import { ITEMSIZE_BY_NAME, validatePackage } from './validate.js';
import { checkLabel } from './validate/label.js';
import { DEFAULT_MAX_DEPTH, verifyBuffer, VerifyLimits } from './verify.js';
import { SCHEMA_VERSION } from './generated/minors.js';

export interface ReadOptions extends VerifyLimits {
  /** File name used in error messages. */
  file?: string;
  /**
   * Run the invariant checks of SPEC.md section 7 (src/validate.ts) after decoding; default true.
   * false only for tools comparing the decoder alone with Python's `_codecs.decode`: decoding and
   * string classes still run, the Package-vs-header checks and `verifyData` do not.
   */
  validate?: boolean;
  /**
   * The file's DATA sections were left out on purpose (the viewer's page without weights): storages
   * are then not checked against this file's sections, as Python's `validate_package(...,
   * data_section_lengths=None)`; every other rule still applies. Tensor views and the dump fail.
   */
  dataLeftOut?: boolean;
  /** Also check the CRC-32 of every DATA section (as `pt2format.read(..., verify_data=True)`). */
  verifyData?: boolean;
  /** Returns the bytes of a sibling shard file named in `Package.shard_files` (Node: read from the same directory). */
  loadShard?: (name: string) => Uint8Array;
}

/** Bytes per element of each dtype with data, by ScalarType name (generated from the schema's pt2f_itemsize). */
export const DTYPE_ITEMSIZE = ITEMSIZE_BY_NAME;

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

type T = TTable;
const arr = (v: TValue) => v as TValue[];
const num = (v: TValue) => Number(v as number | bigint);

export class Pt2fFile {
  readonly programBytes: Uint8Array;
  private readonly bb: flatbuffers.ByteBuffer | null;
  private readonly rootPos: number;
  private readonly shards = new Map<number, Loaded>();

  constructor(readonly bytes: Uint8Array, readonly container: Container, rootPos: number, programBytes: Uint8Array,
    private readonly opts: ReadOptions, private readonly root: TTable) {
    this.programBytes = programBytes;
    this.rootPos = rootPos;
    this.bb = container.sections[0]!.encoding === ProgramEncoding.FLATBUFFERS ? new flatbuffers.ByteBuffer(programBytes) : null;
  }

  get header() { return this.container.header; }
  get sections(): Section[] { return this.container.sections; }
  /** The program encoding's name: FLATBUFFERS, MSGPACK or JSON. */
  get encoding(): string { return ENCODING_NAMES[this.sections[0]!.encoding]!; }

  /** The decoded, validated `Package` tree (src/tree.ts), the same for every program encoding. */
  tree(): TTable { return this.root; }

  /** The root `Package` table, read with the flatc-generated accessors (zero-copy); FLATBUFFERS programs only. */
  package(): Package {
    if (!this.bb) {
      throw new UnsupportedEncodingError('flatc accessors need a FLATBUFFERS program; use tree() for MSGPACK and JSON',
        { file: this.opts.file, section: sectionName(this.sections[0]!), expected: 'FLATBUFFERS', got: this.encoding });
    }
    return new Package().__init(this.rootPos, this.bb);
  }

  /**
   * The bytes of `Package.storages[i]`, as a view into the file (or shard) buffer. A storage without
   * data (`meta_nbytes` > 0, `size` 0) gives an empty view, as pt2format.read's storage_view does.
   */
  storageBytes(i: number): Uint8Array {
    const pkg = this.root;
    const storages = arr(pkg['storages']!);
    const n = storages.length;
    const path = `storages[${i}]`;
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new ValidationError('storage index out of range', { file: this.opts.file, path, expected: `< ${n}`, got: i });
    const st = storages[i] as T;
    const segIndex = num(st['segment']!);
    const segments = arr(pkg['segments']!);
    if (segIndex >= segments.length) throw new ValidationError('storage names a missing segment', { file: this.opts.file, path: `${path}.segment`, expected: `< ${segments.length}`, got: segIndex });
    const seg = segments[segIndex] as T;
    if (seg['external'] !== undefined && num(seg['external']) !== 0) {
      throw new SegmentError('storage lives in an external data file, which this reader does not open', { file: this.opts.file, path: `segments[${segIndex}].external`, got: num(seg['external']) });
    }
    const where = this.fileOf(num(seg['file']!), `segments[${segIndex}].file`);
    const secIndex = num(seg['section']!);
    const sec = where.container.sections[secIndex];
    if (!sec || sec.kind !== SectionKind.DATA) {
      throw new SegmentError('segment names a section that is not a DATA section', { file: where.file, path: `segments[${segIndex}].section`, expected: 'a DATA section index', got: secIndex });
    }
    const off = st['offset'] as bigint;
    const size = st['size'] as bigint;
    if (off + size > BigInt(sec.length)) {
      throw new SegmentError('storage runs past the end of its segment', { file: where.file, section: sectionName(sec), path, expected: `end <= ${sec.length}`, got: off + size });
    }
    const start = sec.offset + Number(off);
    return where.bytes.subarray(start, start + Number(size));
  }

  /**
   * `Package.tensors[i]` with a zero-copy view of its storage; every byte it can reach is checked to lie in the storage.
   * A tensor on a storage without data (a meta-device tensor) has no bytes: refused with a ValidationError.
   */
  tensor(i: number): TensorView {
    const tensors = arr(this.root['tensors']!);
    const path = `tensors[${i}]`;
    const n = tensors.length;
    if (!Number.isInteger(i) || i < 0 || i >= n) throw new ValidationError('tensor index out of range', { file: this.opts.file, path, expected: `< ${n}`, got: i });
    const t = tensors[i] as T;
    const layout = t['layout'] === null || t['layout'] === undefined ? 1 : num(t['layout']!);
    if (layout !== 1 || (t['subclass'] !== null && t['subclass'] !== undefined)) {
      throw new ValidationError('tensor is built from other tensor rows (a sparse layout or a wrapper subclass); read its parts', { file: this.opts.file, path, expected: 'a strided tensor', got: layout === 1 ? 'a subclass' : `layout ${layout}` });
    }
    const dtypeValue = num(t['dtype']!);
    const dtype = ScalarType[dtypeValue] ?? String(dtypeValue);
    const itemsize = DTYPE_ITEMSIZE[dtype];
    if (!itemsize) throw new ValidationError('tensor has no known dtype', { file: this.opts.file, path: `${path}.dtype`, expected: 'a dtype with data', got: dtype });
    const sizes = arr(t['sizes']!).map((x) => BigInt(x as bigint));
    const strides = arr(t['strides']!).map((x) => BigInt(x as bigint));
    if (sizes.length !== strides.length) throw new ValidationError('sizes and strides differ in length', { file: this.opts.file, path, expected: sizes.length, got: strides.length });
    const si = num(t['storage']!);
    const st = arr(this.root['storages']!)[si] as T | undefined;
    if (st && st['meta_nbytes'] !== undefined && st['meta_nbytes'] !== null && num(st['meta_nbytes']) !== 0) {
      throw new ValidationError('tensor is a meta-device tensor: its storage holds no data (Storage.meta_nbytes); read its metadata only',
        { file: this.opts.file, path: `${path}.storage`, expected: 'a storage with data', got: `storages[${si}] without data` });
    }
    const storage = this.storageBytes(si);
    const so = BigInt(t['storage_offset'] as bigint);
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
    const segments = arr(this.root['segments']!);
    segments.forEach((seg, i) => { if (!num((seg as T)['external'] ?? 0)) this.fileOf(num((seg as T)['file']!), `segments[${i}].file`); });
    for (const s of this.container.sections) if (s.kind === SectionKind.DATA) verifySectionChecksum(this.bytes, s, this.opts.file);
    for (const shard of this.shards.values()) for (const s of shard.container.sections) verifySectionChecksum(shard.bytes, s, shard.file);
    arr(this.root['storages']!).forEach((x, i) => {
      const st = x as T;
      if (num(st['checksum_kind']!) !== ChecksumKind.CRC32) return;
      const seg = segments[num(st['segment']!)] as T | undefined;
      if (seg && num(seg['external'] ?? 0)) return;
      const got = crc32(this.storageBytes(i));
      if (got !== num(st['checksum']!)) {
        throw new ChecksumError('storage checksum mismatch', { file: this.opts.file, path: `storages[${i}]`,
          expected: crc32Hex(num(st['checksum']!)), got: crc32Hex(got) });
      }
    });
  }

  /** The canonical dump (SPEC.md §6) of the whole file, newline included. */
  dump(): string {
    const d = schemaDescriptor();
    const tree = new TreeDumper({ file: this.opts.file, section: sectionName(this.sections[0]!) },
      this.header.formatMinor).table(this.root, d.root, '');
    const crcs: string[] = [];
    const n = arr(this.root['storages']!).length;
    for (let i = 0; i < n; i++) crcs.push(crc32Hex(crc32(this.storageBytes(i))));
    return renderDump(tree, crcs);
  }

  private fileOf(k: number, path: string): Loaded {
    if (k === 0) return { bytes: this.bytes, container: this.container, file: this.opts.file ?? '<memory>' };
    const have = this.shards.get(k);
    if (have) return have;
    const shardFiles = arr(this.root['shard_files']!);
    const n = shardFiles.length;
    if (k > n) throw new ValidationError('segment names a missing shard file', { file: this.opts.file, path, expected: `<= ${n}`, got: k });
    const entry = shardFiles[k - 1] as T;
    const name = (entry['name'] as string | null) ?? '';
    if (name === '' || name.includes('/') || name.includes('\\') || name === '..' || name === '.') {
      throw new ValidationError('shard file name must be a plain file name', { file: this.opts.file, path: `shard_files[${k - 1}].name`, expected: "no '/', '\\\\' or '..'", got: JSON.stringify(name) });
    }
    if (!this.opts.loadShard) throw new SegmentError('data lives in a shard file but no shard loader was given', { file: this.opts.file, path, got: name });
    const bytes = this.opts.loadShard(name);
    if (BigInt(bytes.length) !== BigInt(entry['size'] as bigint)) {
      throw new HeaderError('shard file has the wrong size', { file: name, expected: entry['size'], got: bytes.length });
    }
    const container = parseContainer(bytes, { file: name, role: 'shard' });
    // A shard from another save (same name, even same size) carries another package id: refuse it.
    const mainId = this.container.header.packageId;
    const recorded = Uint8Array.from(arr(entry['package_id']!) as number[]);
    let want = mainId;
    if (recorded.length !== 0) {
      if (!sameBytes(recorded, mainId)) {
        throw new StaleShardError("shard_files entry names another save than this file's header", { file: this.opts.file, path: `shard_files[${k - 1}].package_id`, expected: hexBytes(mainId), got: hexBytes(recorded) });
      }
      want = recorded;
    }
    if (!sameBytes(container.header.packageId, want)) {
      throw new StaleShardError('shard file belongs to another save (package_id differs)', { file: name, section: 'header', offset: 44, path: `shard_files[${k - 1}].package_id`, expected: hexBytes(want), got: hexBytes(container.header.packageId) });
    }
    const h = this.container.header;
    if (container.header.formatMajor !== h.formatMajor || container.header.formatMinor !== h.formatMinor) {
      throw new HeaderError("shard file format version differs from the main file's", { file: name,
        expected: `${h.formatMajor}.${h.formatMinor}`, got: `${container.header.formatMajor}.${container.header.formatMinor}` });
    }
    const loaded = { bytes, container, file: name };
    if (this.opts.verifyData) for (const s of container.sections) verifySectionChecksum(bytes, s, name);
    this.shards.set(k, loaded);
    return loaded;
  }
}

/** Decodes the program section in its encoding into the tree; returns it and the FlatBuffers root position. */
function decodeProgram(programBytes: Uint8Array, encoding: number, opts: ReadOptions, ctx: { file?: string; section: string },
  fileVersion: [number, number]): { root: TTable; rootPos: number } {
  const desc = schemaDescriptor();
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  try {
    switch (encoding) {
      case ProgramEncoding.FLATBUFFERS: {
        const rootPos = verifyBuffer(programBytes, desc.root, rootIdentifier(), opts, ctx);
        return { root: new FbTreeDecoder(programBytes, ctx).table(rootPos, desc.root, ''), rootPos };
      }
      case ProgramEncoding.MSGPACK: return { root: decodeMsgpack(programBytes, desc.root, maxDepth), rootPos: -1 };
      case ProgramEncoding.JSON: return { root: decodeJson(programBytes, desc.root, maxDepth), rootPos: -1 };
    }
  } catch (e) {
    if (e instanceof VersionError) {
      // SPEC.md 8.2: a VersionError raised by decoding names the file's format version and the reader's.
      e.detail += `; the file is format ${fileVersion[0]}.${fileVersion[1]}, this reader reads ${SCHEMA_VERSION[0]}.${SCHEMA_VERSION[1]}`;
    }
    if (e instanceof Pt2fError) throw e.withContext(ctx);
    if (e instanceof RangeError) throw new LimitError(`program nested too deeply for this reader: ${e.message}`, ctx);
    throw e;
  }
  throw new UnsupportedEncodingError(`encoding not supported by this reader: ${ENCODING_NAMES[encoding]}`,
    { ...ctx, expected: 'FLATBUFFERS, MSGPACK or JSON', got: encoding });
}

/** Reads and checks a .pt2f file from memory; throws a Pt2fError subclass on damaged, invalid or unsupported input. */
export function readPt2f(data: ArrayBuffer | Uint8Array, opts: ReadOptions = {}): Pt2fFile {
  const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
  const file = opts.file;
  const container = parseContainer(bytes, { file, role: 'main' });
  const prog = container.sections[0]!;
  verifySectionChecksum(bytes, prog, file);
  const programBytes = bytes.subarray(prog.offset, prog.offset + prog.length);
  const ctx = { file, section: sectionName(prog) };
  const { root, rootPos } = decodeProgram(programBytes, prog.encoding, opts, ctx,
    [container.header.formatMajor, container.header.formatMinor]);
  const f = new Pt2fFile(bytes, container, rootPos, programBytes, opts, root);
  if (opts.validate === false) return f;
  checkPackageHeader(f, file);
  const lengths = new Map<number, number>();
  for (const s of container.sections) if (s.kind === SectionKind.DATA) lengths.set(s.index, s.length);
  try {
    validatePackage(root, { dataSectionLengths: opts.dataLeftOut ? undefined : lengths, maxDepth: opts.maxDepth ?? DEFAULT_MAX_DEPTH });
  } catch (e) {
    if (e instanceof Pt2fError) throw e.withContext(ctx);
    throw e;
  }
  if (opts.verifyData) f.verifyData();
  return f;
}

/** The package's format version, shard ids and required features must agree with the header (as Python's read). */
function checkPackageHeader(f: Pt2fFile, file?: string): void {
  const pkg = f.tree();
  const section = sectionName(f.sections[0]!);
  const fv = pkg['format_version'] as T | null;
  const h = f.header;
  if (fv === null) throw new ValidationError('required field is missing', { file, section, path: 'format_version' });
  if (fv['major'] !== h.formatMajor || fv['minor'] !== h.formatMinor) {
    throw new ValidationError("Package.format_version differs from the header's", { file, section, path: 'format_version',
      expected: `${h.formatMajor}.${h.formatMinor}`, got: `${String(fv['major'])}.${String(fv['minor'])}` });
  }
  arr(pkg['shard_files']!).forEach((x, i) => {
    const id = Uint8Array.from(arr((x as T)['package_id']!) as number[]);
    if (id.length && !sameBytes(id, h.packageId)) {
      throw new StaleShardError("shard_files entry names another save than this file's header", { file, section,
        path: `shard_files[${i}].package_id`, expected: hexBytes(h.packageId), got: hexBytes(id) });
    }
  });
  const features = pkg['required_features'] as bigint;
  if (features !== h.requiredFeatures) {
    throw new ValidationError("Package.required_features differs from the header's", { file, section, path: 'required_features',
      expected: `0x${h.requiredFeatures.toString(16)}`, got: `0x${features.toString(16)}` });
  }
  if ((features & ~KNOWN_FEATURES) !== 0n) {
    throw new UnsupportedFeatureError('package requires features this reader does not know', { file, section, path: 'required_features',
      expected: `bits within 0x${KNOWN_FEATURES.toString(16)}`, got: `0x${features.toString(16)}` });
  }
  try {
    checkLabel(pkg);  // no name newer than the label (SPEC.md 8.1), as the writer refuses
  } catch (e) {
    if (e instanceof Pt2fError) throw e.withContext({ file, section });
    throw e;
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
