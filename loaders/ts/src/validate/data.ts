/**
 * The data of a Package: shard and external files (plain, unique names), segments, storages inside their
 * sections and never overlapping, tensor rows inside their storages, composite rows (quantization
 * parameters and parts naming earlier rows, nested at most MAX_TENSOR_NESTING deep).
 */
import { DTYPE_ITEMSIZE } from '../generated/itemsize.js';
import { MAX_DEPTH, MAX_TENSOR_NESTING } from '../generated/limits.js';
import { ScalarType } from '../_build/classes.js';
import { SegmentError } from '../errors.js';
import { arr, big, enumNames, fail, num, str, T, within } from './common.js';
import { ValueCheck } from './values.js';

const DATA_ALIGNMENT = 64n;
const PACKAGE_ID_SIZE = 16;
const FEATURE_SHARD_FILES = 1n;
const FEATURE_EXTERNAL_FILES = 2n;
const FEATURE_META_STORAGES = 4n;

/** Bytes per element of each dtype with data, by ScalarType name: the schema's pt2f_itemsize, generated. */
export const ITEMSIZE_BY_NAME: Readonly<Record<string, number>> = DTYPE_ITEMSIZE;

function checkShardName(name: string | null): void {
  if (name === null || name === '' || name === '.' || name.includes('..') || /[/\\\0]/.test(name)) {
    throw fail("shard file name must be a plain file name (no '/', '\\', '..' or NUL)", 'name', 'plain file name', JSON.stringify(name));
  }
}

export function checkData(pkg: T, lengths: Map<number, number> | undefined): void {
  const features = big(pkg['required_features']);
  const shards = arr(pkg['shard_files']) as T[];
  const shardNames = new Set<string>();  // names unique within each vector: pt2f_keys, checkFieldRules
  shards.forEach((sh, i) => {
    const name = str(sh['name']);
    within(`shard_files[${i}]`, () => checkShardName(name));
    shardNames.add(name!);
    const idLen = arr(sh['package_id']).length;
    if (idLen !== 0 && idLen !== PACKAGE_ID_SIZE) {
      throw fail(`shard package_id must be ${PACKAGE_ID_SIZE} bytes`, `shard_files[${i}].package_id`, `0 or ${PACKAGE_ID_SIZE}`, idLen);
    }
  });
  const externals = arr(pkg['external_files']) as T[];
  externals.forEach((ext, i) => {
    const name = str(ext['name']);
    within(`external_files[${i}]`, () => checkShardName(name));
    // One directory holds both kinds of data file.
    if (shardNames.has(name!)) throw fail('duplicate data file name', `external_files[${i}].name`, undefined, JSON.stringify(name));
  });
  const segments = arr(pkg['segments']) as T[];
  segments.forEach((seg, i) => {
    const external = num(seg['external']);
    const file = num(seg['file']);
    const section = num(seg['section']);
    if (external) {
      if (!(features & FEATURE_EXTERNAL_FILES)) {
        throw fail('segment in an external file but required_features lacks bit 1 (external files)', `segments[${i}].external`, undefined, external);
      }
      if (file || section) throw fail('a segment in an external file has file and section 0', `segments[${i}]`, 'file 0, section 0', `file ${file}, section ${section}`);
      return;
    }
    if (file > 0 && !(features & FEATURE_SHARD_FILES)) {
      throw fail('segment in a shard file but required_features lacks bit 0 (shard files)', `segments[${i}].file`, undefined, file);
    }
    if (file === 0 && lengths !== undefined && !lengths.has(section)) {
      throw new SegmentError('segment does not name a DATA section of this file', { path: `segments[${i}].section`,
        expected: `one of ${JSON.stringify([...lengths.keys()].sort((a, b) => a - b))}`, got: section });
    }
  });
  const storages = arr(pkg['storages']) as T[];
  storages.forEach((st, i) => {
    const segIndex = num(st['segment']);
    const seg = segments[segIndex]!;
    const offset = big(st['offset']);
    const size = big(st['size']);
    const external = num(seg['external']);
    if (external) {
      const extSize = big(externals[external - 1]!['size']);
      if (offset > extSize || size > extSize - offset) {
        throw new SegmentError('storage ends past its external file', { path: `storages[${i}]`, expected: `offset + size <= ${extSize}`, got: offset + size });
      }
    } else if (offset % DATA_ALIGNMENT) {
      throw new SegmentError(`storage offset is not a multiple of ${DATA_ALIGNMENT}`, { path: `storages[${i}].offset`, expected: `multiple of ${DATA_ALIGNMENT}`, got: offset });
    }
    const metaNbytes = big(st['meta_nbytes']);
    if (metaNbytes) {
      if (size) throw fail('a storage without data (meta_nbytes) holds bytes', `storages[${i}].size`, 0, size);
      if (!(features & FEATURE_META_STORAGES)) {
        throw fail('storage without data but required_features lacks bit 2 (meta storages)', `storages[${i}].meta_nbytes`, undefined, metaNbytes);
      }
    }
    if (num(seg['file']) === 0 && !external && lengths !== undefined) {
      const limit = BigInt(lengths.get(num(seg['section']))!);
      if (offset + size > limit) throw new SegmentError('storage ends past its segment', { path: `storages[${i}]`, expected: `offset + size <= ${limit}`, got: offset + size });
    }
  });
  checkNoOverlap(storages);
  const nesting = new Array<number>(arr(pkg['tensors']).length).fill(0);
  (arr(pkg['tensors']) as T[]).forEach((t, i) => within(`tensors[${i}]`, () => {
    if (checkComposite(pkg, t, i, nesting)) return;
    const si = num(t['storage']);
    if (si >= storages.length) throw fail('tensor storage index out of range', 'storage', `< ${storages.length}`, si);
    const need = tensorNbytes(num(t['dtype']), arr(t['sizes']).map(big), arr(t['strides']).map(big), big(t['storage_offset']));
    const st = storages[si]!;
    let size = big(st['size']);
    const metaNbytes = big(st['meta_nbytes']);
    if (metaNbytes) {
      // A storage without data (bit 2): its tensors are meta-device tensors, bounded by meta_nbytes.
      const device = t['device'] as T | null | undefined;
      const type = device ? str(device['type']) : null;
      if (type !== 'meta') throw fail('a tensor on a storage without data must be on the meta device', 'device', 'meta', device ? type : null);
      size = metaNbytes;
    }
    if (need > size) throw fail('tensor reaches past the end of its storage', undefined, `<= ${size} bytes`, `${need} bytes`);
  }));
}

/** Storages never share bytes (SPEC.md section 5): aliasing tensors share one storage instead. */
function checkNoOverlap(storages: T[]): void {
  const bySegment = new Map<number, [bigint, bigint, number][]>();
  storages.forEach((st, i) => {
    const size = big(st['size']);
    if (!size) return;
    const seg = num(st['segment']);
    const off = big(st['offset']);
    let l = bySegment.get(seg);
    if (!l) bySegment.set(seg, (l = []));
    l.push([off, off + size, i]);
  });
  for (const ranges of bySegment.values()) {
    ranges.sort((a, b) => (a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1) : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1) : a[2] - b[2]));
    for (let k = 1; k < ranges.length; k++) {
      const [, a1, ai] = ranges[k - 1]!;
      const [b0, , bi] = ranges[k]!;
      if (b0 < a1) {
        throw new SegmentError('storages overlap; tensors that alias must share one storage',
          { path: `storages[${bi}]`, expected: `offset >= ${a1} (end of storages[${ai}])`, got: b0 });
      }
    }
  }
}

const QUANTIZED = new Set(['QUINT8', 'QINT8', 'QINT32']);
const FEATURE_COMPOSITE_TENSORS = 8n;

/** 1.1 rows (quantized, sparse, subclass), as pt2format/_validate.py _check_composite; true when the row has no storage view. */
function checkComposite(pkg: T, t: T, i: number, nesting: number[], maxDepth = MAX_DEPTH): boolean {
  const q = (t['quantization'] ?? null) as T | null;
  const sub = (t['subclass'] ?? null) as T | null;
  const quantized = QUANTIZED.has(enumNames(ScalarType)[num(t['dtype'])] ?? '');
  if (quantized !== (q !== null) && sub === null) {
    throw fail('quantized dtypes, and only they, carry quantization parameters', 'quantization',
      quantized ? 'present' : 'absent', q === null ? 'absent' : 'present');
  }
  if (q !== null && num(q['qscheme']) !== 1) {
    for (const name of ['scales', 'zero_points']) {
      const k = num(q[name]);
      if (k >= i) throw fail('per-channel parameters must refer to an earlier tensor row', `quantization.${name}`, `< ${i}`, k);
      nesting[i] = Math.max(nesting[i]!, nesting[k]! + 1);
    }
    if (nesting[i]! > MAX_TENSOR_NESTING) throw fail('tensor parts nest too deeply', 'quantization', `<= ${MAX_TENSOR_NESTING} levels`, nesting[i]);
  }
  const layout = num(t['layout'] ?? 1);
  const composite = sub !== null || layout !== 1;
  const parts = arr(t['parts']) as T[];
  if (parts.length > 0 && !composite) throw fail('only sparse and subclass tensors have parts', 'parts', undefined, parts.length);
  if (!composite) return false;
  if ((BigInt(pkg['required_features'] as number | bigint ?? 0) & FEATURE_COMPOSITE_TENSORS) === 0n) {
    throw fail('a sparse or subclass tensor needs required_features bit 3', 'required_features',
      `bit 0x${FEATURE_COMPOSITE_TENSORS.toString(16)} set`, `0x${BigInt(pkg['required_features'] as number | bigint ?? 0).toString(16)}`);
  }
  const ctx = sub === null ? null : ((sub['context'] ?? null) as T | null);
  // 0 tensors: a subclass context never holds tensor references.
  if (ctx !== null) within('subclass.context', () => new ValueCheck(0, maxDepth).check(ctx, 0, false, true));
  parts.forEach((part, j) => {  // names unique: pt2f_keys, checkFieldRules
    const k = num(part['tensor']);
    if (k >= i) throw fail('a part must refer to an earlier tensor row', `parts[${j}].tensor`, `< ${i}`, k);
    nesting[i] = Math.max(nesting[i]!, nesting[k]! + 1);
  });
  if (nesting[i]! > MAX_TENSOR_NESTING) throw fail('tensor parts nest too deeply', 'parts', `<= ${MAX_TENSOR_NESTING} levels`, nesting[i]);
  return true;
}

/** Bytes of storage a strided tensor can reach, from byte 0 of its storage; 0 when it has no elements. */
export function tensorNbytes(dtype: number, sizes: bigint[], strides: bigint[], storageOffset: bigint): bigint {
  const name = enumNames(ScalarType)[dtype];
  const itemsize = name === undefined ? undefined : ITEMSIZE_BY_NAME[name];
  if (itemsize === undefined) throw fail('dtype is unspecified or unknown', 'dtype', undefined, dtype);
  if (sizes.length !== strides.length) throw fail('sizes and strides differ in length', 'strides', sizes.length, strides.length);
  if (storageOffset < 0n) throw fail('negative storage_offset', 'storage_offset', undefined, storageOffset);
  let last = storageOffset;
  for (let d = 0; d < sizes.length; d++) {
    const size = sizes[d]!;
    const stride = strides[d]!;
    if (size < 0n) throw fail('negative size', `sizes[${d}]`, undefined, size);
    if (stride < 0n) throw fail('negative stride', `strides[${d}]`, undefined, stride);
    if (size === 0n) return 0n;
    last += (size - 1n) * stride;
  }
  return (last + 1n) * BigInt(itemsize);
}
