/**
 * The invariants of a decoded Package (SPEC.md section 7), as pt2format/_validate.py checks them.
 *
 * Runs on every read, after decoding, in every encoding, so the TS reader
 * neither dumps a file the Python reader refuses nor refuses one it accepts:
 * indices in range, shard/external names plain and unique, segments,
 * storages inside their sections and never overlapping, tensors inside their
 * storages, sorted and unique names, value names declared in their graph,
 * the sym-expression pool acyclic with the right arity, reserved `extra`
 * metadata keys, identifier dict keys in tree specs and example inputs.
 * Same error classes as Python; paths name the field (`programs[0].graph...`).
 * The symbolic pool is evaluated within the bounds of SPEC.md 11.6
 * (src/symeval.ts, the rules of pt2format/_symeval.py).
 */
import { DTYPE_ITEMSIZE } from './generated/itemsize.js';
import { MAX_DEPTH, MAX_EXTRA_FILE_NAME_BYTES, MAX_TENSOR_NESTING } from './generated/limits.js';
import { checkFieldRules } from './generated/rules.js';
import { ScalarType, StateKind, SymExprKind, SymOp, SymbolKind, TreeSpecKind } from './_build/classes.js';
import { KNOWN_FEATURES } from './container.js';
import { LimitError, Pt2fError, SegmentError, UnsupportedFeatureError, ValidationError, VersionError } from './errors.js';
import { checkExtraMetaKey, checkStringClass } from './strings.js';
import { bitsNumber, descOf, TTable, TValue } from './tree.js';
import { READER_FORMAT_MAJOR } from './container.js';
import { evaluatePool, expandedSizes, SYM_FREE_SIZE, SymBudget, SymValue, UNKNOWN } from './symeval.js';

type T = TTable;
const DATA_ALIGNMENT = 64n;
const PACKAGE_ID_SIZE = 16;
const FEATURE_SHARD_FILES = 1n;
const FEATURE_EXTERNAL_FILES = 2n;
const FEATURE_META_STORAGES = 4n;

/** Bytes per element of each dtype with data, by ScalarType name: the schema's pt2f_itemsize, generated. */
export const ITEMSIZE_BY_NAME: Readonly<Record<string, number>> = DTYPE_ITEMSIZE;

/** Arity of each SymOp by name: [min, max (null: any), even count]; ops not listed take one or more. */
const OP_ARITY: Record<string, [number, number | null, boolean]> = {};
for (const op of ['POW', 'FLOOR_DIV', 'PYTHON_MOD', 'MOD', 'CLEAN_DIV', 'EQ', 'NE', 'LT', 'LE', 'GT', 'GE', 'POW_BY_NATURAL',
  'FLOAT_POW', 'INT_TRUE_DIV', 'FLOAT_TRUE_DIV', 'ROUND_DECIMAL', 'BITWISE_AND', 'BITWISE_OR', 'BITWISE_XOR', 'IS_MULTIPLE']) OP_ARITY[op] = [2, 2, false];
for (const op of ['NOT', 'TRUNC_TO_INT', 'TRUNC_TO_FLOAT', 'FLOOR_TO_INT', 'CEIL_TO_INT', 'ROUND_TO_INT', 'TO_FLOAT', 'IDENTITY',
  'ABS', 'CEILING', 'FLOOR', 'LOG2', 'SQRT', 'EXP', 'LOG', 'SIN', 'COS', 'TAN', 'ASIN', 'ACOS', 'ATAN', 'SINH', 'COSH', 'TANH',
  'ASINH']) OP_ARITY[op] = [1, 1, false];
OP_ARITY['WHERE'] = [3, 3, false];
OP_ARITY['MODULAR_INDEXING'] = [3, 3, false];
OP_ARITY['PIECEWISE'] = [2, null, true];
OP_ARITY['IS_NON_OVERLAPPING_AND_DENSE'] = [2, null, true];

const enumNames = (e: Record<string | number, string | number>) => e as Record<number, string>;

const arr = (v: TValue | undefined) => (v ?? []) as TValue[];
const big = (v: TValue | undefined) => BigInt((v ?? 0) as number | bigint);
const num = (v: TValue | undefined) => Number((v ?? 0) as number | bigint);
const str = (v: TValue | undefined) => (v ?? null) as string | null;
const kind = (v: TValue | undefined) => (v === null || v === undefined ? null : descOf(v as T).name);

function fail(message: string, path?: string, expected?: unknown, got?: unknown): ValidationError {
  return new ValidationError(message, { path, expected, got });
}

/** Runs `f`, adding `prefix` to the path of a Pt2fError it throws. */
function within<R>(prefix: string, f: () => R): R {
  try {
    return f();
  } catch (e) {
    if (e instanceof Pt2fError) throw e.withContext({ pathPrefix: prefix });
    throw e;
  }
}

function checkShardName(name: string | null): void {
  if (name === null || name === '' || name === '.' || name.includes('..') || /[/\\\0]/.test(name)) {
    throw fail("shard file name must be a plain file name (no '/', '\\', '..' or NUL)", 'name', 'plain file name', JSON.stringify(name));
  }
}

export interface ValidateOptions {
  /** DATA section index of the main file -> its length; storages in the main file are checked against it. */
  dataSectionLengths?: Map<number, number>;
  maxDepth?: number;
}

/** Throws a Pt2fError (mostly ValidationError) on the first broken invariant of `pkg`. */
export function validatePackage(pkg: T, opts: ValidateOptions = {}): void {
  const maxDepth = opts.maxDepth ?? MAX_DEPTH;
  const fv = pkg['format_version'] as T | null;
  if (fv === null) throw fail('required field is missing', 'format_version');
  const major = num(fv['major']);
  if (major > READER_FORMAT_MAJOR || major === 0) {
    throw new VersionError(`format version ${major}.${num(fv['minor'])} is not readable by this reader`,
      { path: 'format_version', expected: `major ${READER_FORMAT_MAJOR}`, got: major });
  }
  const features = big(pkg['required_features']);
  if (features & ~KNOWN_FEATURES) {
    throw new UnsupportedFeatureError(`file requires unknown features 0x${(features & ~KNOWN_FEATURES).toString(16)}`,
      { path: 'required_features', expected: `bits within 0x${KNOWN_FEATURES.toString(16)}`, got: `0x${features.toString(16)}` });
  }
  // Every pt2f_required, pt2f_index and pt2f_keys field of the schema, generated; the checks below rely on them.
  checkFieldRules(pkg, (message, path, expected, got) => { throw fail(message, path, expected, got); }, (o) => descOf(o as T).name);
  checkData(pkg, opts.dataSectionLengths);
  checkExtraFiles(pkg);
  const nTensors = arr(pkg['tensors']).length;
  const budget = new SymBudget();  // one per file: SPEC.md 11.6, "Expanded size of a file"
  arr(pkg['programs']).forEach((p, i) => {
    within(`programs[${i}]`, () => new ProgramCheck(p as T, nTensors, maxDepth, arr(pkg['tensors']) as T[], budget).check());
  });
  const values = new ValueCheck(nTensors, maxDepth);
  arr(pkg['operators']).forEach((op, i) => within(`operators[${i}]`, () => {
    for (const group of ['parameters', 'returns']) {
      arr((op as T)[group]).forEach((p, j) => {
        const dv = (p as T)['default_value'] as T | null;
        if (dv !== null && dv !== undefined) within(`${group}[${j}].default_value`, () => values.check(dv, 0));
      });
    }
  }));
}

/** `Package.extra_files` (pt2format/_extras.py): names 1-255 UTF-8 bytes without control characters (sorted, unique, storages: checkFieldRules). */
function checkExtraFiles(pkg: T): void {
  arr(pkg['extra_files']).forEach((e, i) => {
    const name = str((e as T)['name']);
    let problem: string | null = null;
    if (name === null) problem = 'must be a str, got NoneType';
    else {
      const n = new TextEncoder().encode(name).length;
      if (n < 1 || n > MAX_EXTRA_FILE_NAME_BYTES) problem = `must be 1 to ${MAX_EXTRA_FILE_NAME_BYTES} bytes of UTF-8, got ${n}`;
      else if (/[\x00-\x1f\x7f]/.test(name)) problem = 'must not contain NUL or other control characters';
    }
    if (problem !== null) throw fail(`extra file name ${problem}`, `extra_files[${i}].name`, undefined, JSON.stringify(name).slice(0, 80));
  });
}

function checkData(pkg: T, lengths: Map<number, number> | undefined): void {
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

/** A dict key that torch turns into Python source: a string key must be an identifier. */
function checkIdentifierKey(key: T, path: string): void {
  const v = key['value'] as T | null;
  if (kind(v) === 'StringValue') checkStringClass(str(v!['value']) ?? '', 'identifier', 'dict key', path);
}

/** 1.1: an nn.Module input's keys name its parameters and buffers: attribute paths such as `lin.weight`. */
function checkModuleKey(key: T, path: string): void {
  const v = key['value'] as T | null;
  if (kind(v) !== 'StringValue') throw fail("an nn.Module input's keys are parameter and buffer names", path, 'a string');
  checkStringClass(str(v!['value']) ?? '', 'attr_path', 'parameter or buffer name', `${path}.value`);
}

/** Generic `Value` trees: union set, tensor references in range, bounded depth. */
class ValueCheck {
  constructor(private readonly nTensors: number, private readonly maxDepth: number) {}

  /** `objects`: EnumValue and ObjectValue may appear (1.1: a tensor subclass's context only). */
  check(value: T, depth: number, identifierKeys = false, objects = false): void {
    if (depth > this.maxDepth) throw new LimitError('value nested too deeply', { expected: `depth <= ${this.maxDepth}`, got: depth });
    const v = value['value'] as T | null;
    if (v === null || v === undefined) throw fail('union value is missing', 'value');
    const k = kind(v);
    if (k === 'ListValue') {
      arr(v['items']).forEach((item, i) => within(`value.items[${i}]`, () => this.check(item as T, depth + 1, identifierKeys, objects)));
    } else if (k === 'MapValue') {
      within('value', () => this.checkMap(v, depth + 1, identifierKeys, objects));
    } else if (k === 'TensorRefValue') {
      const t = num(v['tensor']);
      if (t >= this.nTensors) throw fail('tensor index out of range', 'value.tensor', `< ${this.nTensors}`, t);
    } else if (k === 'EnumValue' || k === 'ObjectValue') {
      if (!objects) throw fail("enum and object values appear only in a tensor subclass's context", 'value', 'a plain value', k);
      if (k === 'ObjectValue') {
        const names = new Set<string>();
        arr(v['fields']).forEach((field, i) => within(`value.fields[${i}]`, () => {
          const f = field as T;
          const name = str(f['name']) ?? '';
          if (names.has(name)) throw fail('object field names must be unique', 'name', undefined, JSON.stringify(name));
          names.add(name);
          const fv = (f['value'] ?? null) as T | null;
          if (fv === null) throw fail('required field is missing', 'value');
          this.check(fv, depth + 1, identifierKeys, true);
        }));
      }
    }
  }

  checkMap(mapping: T, depth: number, identifierKeys = false, objects = false): void {
    arr(mapping['entries']).forEach((entry, i) => {
      for (const part of ['key', 'value']) {
        within(`entries[${i}].${part}`, () => {
          const item = (entry as T)[part] as T | null;
          if (item === null || item === undefined) throw fail('required field is missing');
          this.check(item, depth, identifierKeys, objects);
          if (part === 'key' && identifierKeys) checkIdentifierKey(item, 'value');
        });
      }
    });
  }
}

class ProgramCheck {
  readonly nSymbols: number;
  readonly nExprs: number;
  readonly values: ValueCheck;
  sizes: number[] = [];

  constructor(readonly p: T, readonly nTensors: number, readonly maxDepth: number, readonly tensors: T[] = [],
    readonly budget: SymBudget = new SymBudget()) {
    this.nSymbols = arr(p['symbols']).length;
    this.nExprs = arr(p['sym_exprs']).length;
    this.values = new ValueCheck(nTensors, maxDepth);
  }

  check(): void {
    const p = this.p;
    this.checkSymbols();
    arr(p['range_constraints']).forEach((rc, i) => this.use(num((rc as T)['expr']), `range_constraints[${i}].expr`));
    arr(p['input_guards']).forEach((g, i) => this.use(num(g), `input_guards[${i}]`));
    const graph = p['graph'] as T | null;
    const scope = within('graph', () => new GraphCheck(this, graph!, 0).check());
    this.checkSignature(scope);
    this.checkStateMatchesPlaceholders();
    (arr(p['state']) as T[]).forEach((e, i) => {
      const path = `state[${i}]`;
      if (num(e['kind']) === StateKind.UNSPECIFIED) throw fail('state kind is UNSPECIFIED', `${path}.kind`);
    });
    (arr(p['custom_objects']) as T[]).forEach((o, i) => {
      this.checkValue(o['state'] as T | null, `custom_objects[${i}].state`);
    });
    const ex = p['example_inputs'] as T | null;
    if (ex !== null && ex !== undefined) within('example_inputs', () => this.values.check(ex, 0, true));
    (arr(p['module_call_graph']) as T[]).forEach((entry, i) => {
      const sig = entry['signature'] as T | null;
      if (sig === null || sig === undefined) return;
      for (const group of ['inputs', 'outputs']) {
        arr(sig[group]).forEach((a, j) => {
          if (a === null || (a as T)['value'] === null) throw fail('union value is missing', `module_call_graph[${i}].signature.${group}[${j}].value`);
        });
      }
      for (const part of ['in_spec', 'out_spec']) {
        const spec = sig[part] as T | null;
        if (spec !== null && spec !== undefined) within(`module_call_graph[${i}].signature.${part}`, () => this.checkTreeSpec(spec, 0));
      }
    });
  }

  checkValue(value: T | null | undefined, path: string): void {
    if (value === null || value === undefined) return;
    within(path, () => this.values.check(value, 0));
  }

  checkTreeSpec(spec: T, depth: number): void {
    if (depth > this.maxDepth) throw new LimitError('tree spec nested too deeply', { expected: `depth <= ${this.maxDepth}`, got: depth });
    arr(spec['keys']).forEach((key, i) => {
      this.checkValue(key as T, `keys[${i}]`);
      if (enumNames(TreeSpecKind)[num(spec['kind'])] === 'MODULE') within(`keys[${i}]`, () => checkModuleKey(key as T, 'value'));
      else within(`keys[${i}]`, () => checkIdentifierKey(key as T, 'value'));
    });
    this.checkValue(spec['context'] as T | null, 'context');
    arr(spec['children']).forEach((c, i) => within(`children[${i}]`, () => this.checkTreeSpec(c as T, depth + 1)));
  }

  /** The pool's rows (symbol names unique: pt2f_keys, checkFieldRules). */
  checkSymbols(): void {
    const opNames = enumNames(SymOp);
    (arr(this.p['sym_exprs']) as T[]).forEach((e, i) => {
      const k = num(e['kind']);
      // k declared and not UNSPECIFIED: pt2f_value, checkFieldRules
      if (k === SymExprKind.SYMBOL) {
        const s = num(e['symbol']);
        if (s >= this.nSymbols) throw fail('symbol index out of range', `sym_exprs[${i}].symbol`, `< ${this.nSymbols}`, s);
      } else if (k === SymExprKind.RATIONAL) {
        const d = big(e['denominator']);
        if (d <= 1n) throw fail('rational denominator must be > 1', `sym_exprs[${i}].denominator`, undefined, d);
      } else if (k === SymExprKind.APPLY) {
        const op = num(e['op']);
        const opName = op === 0 ? undefined : opNames[op];
        if (opName === undefined) throw fail('APPLY needs a known op', `sym_exprs[${i}].op`, undefined, op);
        const args = arr(e['args']);
        if (!args.length) throw fail('APPLY needs arguments', `sym_exprs[${i}].args`);
        args.forEach((a, j) => {
          if (num(a) >= i) throw fail('argument must refer to an earlier expression (the pool is acyclic)', `sym_exprs[${i}].args[${j}]`, `< ${i}`, num(a));
        });
        if (opName === 'IS_MULTIPLE') throw fail('IS_MULTIPLE is reserved and never written', `sym_exprs[${i}].op`, undefined, 'IS_MULTIPLE');
        const [lo, hi, even] = OP_ARITY[opName] ?? [1, null, false];
        const n = args.length;
        if (n < lo || (hi !== null && n > hi) || (even && n % 2)) {
          throw fail('wrong number of operands', `sym_exprs[${i}].args`, lo === hi ? `${lo}` : `>= ${lo}` + (even ? ', even' : ''), n);
        }
      }
    });
    this.checkSymbolBounds();
  }

  /** Float ranges and hints are finite; the pool evaluates within the bounds of SPEC.md 11.6 (src/symeval.ts). */
  checkSymbolBounds(): void {
    const hints: SymValue[] = [];
    (arr(this.p['symbols']) as T[]).forEach((sym, i) => {
      const isFloat = num(sym['kind']) === SymbolKind.FLOAT;
      const r = sym['range'] as T | null;
      if (isFloat && r !== null && r !== undefined) {
        for (const [side, has] of [['float_lower', 'has_lower'], ['float_upper', 'has_upper']] as const) {
          const v = bitsNumber(r[side] as bigint);
          if (r[has] && !Number.isFinite(v)) throw fail('a present float bound must be finite', `symbols[${i}].range.${side}`, undefined, v);
        }
      }
      if (isFloat && sym['has_hint'] && Number.isNaN(bitsNumber(sym['float_hint'] as bigint))) {
        throw fail('float hint is NaN', `symbols[${i}].float_hint`, undefined, 'nan');
      }
      hints.push(!sym['has_hint'] ? UNKNOWN : isFloat ? bitsNumber(sym['float_hint'] as bigint) : big(sym['hint']));
    });
    evaluatePool(arr(this.p['sym_exprs']) as T[], hints);
    this.sizes = expandedSizes(arr(this.p['sym_exprs']) as T[]);
    this.sizes.forEach((size, i) => this.budget.charge(size, `sym_exprs[${i}]`));
  }

  /** Charges a use of pool node `i` (an index already checked) to the file's budget (SPEC.md 11.6). */
  use(i: number, path: string): void {
    if (i >= 0 && this.sizes[i]! > SYM_FREE_SIZE) this.budget.charge(this.sizes[i]!, path);
  }

  checkSignature(scope: GraphCheck): void {
    const sig = this.p['signature'] as T | null;
    const graph = this.p['graph'] as T;
    for (const [group, what, argsKey] of [['input_specs', 'input', 'inputs'], ['output_specs', 'output', 'outputs']] as const) {
      const specs = arr(sig![group]) as T[];
      const args = arr(graph[argsKey]);
      if (specs.length !== args.length) throw fail(`one spec per graph ${what} required`, `signature.${group}`, args.length, specs.length);
      specs.forEach((spec, i) => {
        const path = `signature.${group}[${i}]`;
        const s = spec['spec'] as T;  // set: pt2f_value, checkFieldRules
        if (kind(s) === 'InputToConstantInputSpec') {
          this.checkValue(s['value'] as T | null, `${path}.spec.value`);
          return;
        }
        const arg = s['arg'] as T | null;
        within(`${path}.spec.arg`, () => {
          if (arg === null || arg === undefined) throw fail('required field is missing');
          scope.checkArgument(kind(arg) === 'Argument' ? (arg['value'] as T | null) : arg);
        });
      });
    }
  }

  /** A stored parameter, buffer or constant has its placeholder's dtype and concrete sizes (SPEC.md §5), as Python. */
  checkStateMatchesPlaceholders(): void {
    const meta = new Map<string, T | null>();
    for (const tv of arr((this.p['graph'] as T)['tensor_values']) as T[]) {
      const name = str(tv['name']);
      if (name !== null) meta.set(name, (tv['meta'] ?? null) as T | null);
    }
    const state = new Map<string, number>();
    for (const e of arr(this.p['state']) as T[]) {
      const name = str(e['name']);
      if (name !== null) state.set(name, num(e['tensor']));
    }
    const fqnField: Record<string, string> = {
      InputToParameterSpec: 'parameter_name', InputToBufferSpec: 'buffer_name', InputToTensorConstantSpec: 'tensor_constant_name',
    };
    (arr((this.p['signature'] as T)['input_specs']) as T[]).forEach((spec, i) => {
      const s = spec['spec'] as T | null;
      if (s === null || s === undefined) return;
      const field = fqnField[kind(s) ?? ''];
      if (field === undefined) return;
      const fqn = str(s[field]);
      const arg = (s['arg'] ?? null) as T | null;
      const argName = arg === null ? null : str(arg['name']);
      if (fqn === null || argName === null || !state.has(fqn)) return;
      const m = meta.get(argName);
      const t = state.get(fqn)!;
      if (m === null || m === undefined || num(m['layout'] ?? 1) !== 1 || t >= this.tensors.length) return;
      const tensor = this.tensors[t]!;
      const path = `signature.input_specs[${i}]`;
      if (num(tensor['dtype']) !== num(m['dtype'])) {
        throw fail(`state tensor '${fqn}' has another dtype than its placeholder '${argName}'`, path,
          enumNames(ScalarType)[num(m['dtype'])] ?? num(m['dtype']), enumNames(ScalarType)[num(tensor['dtype'])] ?? num(tensor['dtype']));
      }
      const declared = arr(m['sizes']) as T[];
      const stored = arr(tensor['sizes']);
      const same = declared.length === stored.length && declared.every((d, k) =>
        num(d['expr']) !== -1 || BigInt(d['value'] as number | bigint) === BigInt(stored[k] as number | bigint));
      if (!same) throw fail(`state tensor '${fqn}' has other sizes than its placeholder '${argName}'`, path);
    });
  }

  /** Charges a SymInt/SymFloat/SymBool use (its index already checked by the field rules) to the budget. */
  checkSym(sym: T | null | undefined, path: string): void {
    if (sym === null || sym === undefined) return;
    this.use(num(sym['expr']), `${path}.expr`);
  }
}

const OPTIONAL_NAME: Record<string, [keyof GraphScopes, string]> = {
  OptionalTensorArgument: ['tensors', 'tensor'], SymIntArgument: ['symInts', 'SymInt'],
  SymFloatArgument: ['symFloats', 'SymFloat'], SymBoolArgument: ['symBools', 'SymBool'],
};
const OPTIONAL_NAME_LIST: Record<string, [keyof GraphScopes, string]> = {
  OptionalTensorListArgument: ['tensors', 'tensor'], SymIntListArgument: ['symInts', 'SymInt'],
  SymFloatListArgument: ['symFloats', 'SymFloat'], SymBoolListArgument: ['symBools', 'SymBool'],
};

interface GraphScopes { tensors: Set<string>; symInts: Set<string>; symFloats: Set<string>; symBools: Set<string>; customObjs: Set<string> }

function undeclared(what: string, name: string | null, path: string): ValidationError {
  return fail(`${what} ${JSON.stringify(name)} is not declared in this graph`, path, "a name from the graph's values", JSON.stringify(name));
}

/** One graph and its subgraphs; value names are scoped to the graph that declares them. */
class GraphCheck implements GraphScopes {
  tensors: Set<string>;
  symInts: Set<string>;
  symFloats: Set<string>;
  symBools: Set<string>;
  customObjs: Set<string>;

  constructor(private readonly prog: ProgramCheck, private readonly g: T, private readonly depth: number) {
    if (depth > prog.maxDepth) throw new LimitError('subgraphs nested too deeply', { expected: `depth <= ${prog.maxDepth}`, got: depth });
    this.tensors = GraphCheck.names(arr(g['tensor_values']), 'tensor_values');
    this.symInts = GraphCheck.names(arr(g['sym_int_values']), 'sym_int_values');
    this.symFloats = GraphCheck.names(arr(g['sym_float_values']), 'sym_float_values');
    this.symBools = GraphCheck.names(arr(g['sym_bool_values']), 'sym_bool_values');
    this.customObjs = GraphCheck.names(arr(g['custom_obj_values']), 'custom_obj_values');
  }

  private static names(values: TValue[], path: string): Set<string> {
    const names = new Set<string>();
    values.forEach((v, i) => {
      const n = str((v as T)['name']);
      names.add(n!);
    });
    if (names.size !== values.length) throw fail('duplicate value names', path, `${values.length} unique names`, names.size);
    return names;
  }

  check(): GraphCheck {
    const g = this.g;
    const prog = this.prog;
    (arr(g['tensor_values']) as T[]).forEach((tv, i) => {
      const meta = tv['meta'] as T | null;
      const path = `tensor_values[${i}].meta`;
      // dtype not UNSPECIFIED: pt2f_value, checkFieldRules
      arr(meta!['sizes']).forEach((s, d) => prog.checkSym(s as T, `${path}.sizes[${d}]`));
      arr(meta!['strides']).forEach((s, d) => prog.checkSym(s as T, `${path}.strides[${d}]`));
      prog.checkSym(meta!['storage_offset'] as T | null, `${path}.storage_offset`);
    });
    for (const group of ['sym_int_values', 'sym_float_values', 'sym_bool_values']) {
      arr(g[group]).forEach((v, i) => prog.checkSym((v as T)['value'] as T | null, `${group}[${i}].value`));
    }
    for (const group of ['inputs', 'outputs']) {
      arr(g[group]).forEach((a, i) => within(`${group}[${i}].value`, () => this.checkArgument((a as T)['value'] as T | null)));
    }
    arr(g['input_metadata']).forEach((m, i) => this.checkMetadata(m as T, `input_metadata[${i}]`));
    this.checkMetadata(g['output_metadata'] as T | null, 'output_metadata');
    const nodeNames = new Set<string | null>();
    const nodes = arr(g['nodes']) as T[];
    nodes.forEach((node, i) => {
      within(`nodes[${i}]`, () => this.checkNode(node));
      nodeNames.add(str(node['name']));
    });
    if (nodeNames.size !== nodes.length) throw fail('duplicate node names', 'nodes', `${nodes.length} unique names`, nodeNames.size);
    return this;
  }

  private checkNode(node: T): void {
    for (const group of ['inputs', 'outputs']) {
      arr(node[group]).forEach((a, j) => within(`${group}[${j}].value`, () => this.checkArgument((a as T)['value'] as T | null)));
    }
    this.checkMetadata(node['metadata'] as T | null, 'metadata');
    arr(node['unpack_metadata']).forEach((u, j) => this.checkMetadata((u as T)['metadata'] as T | null, `unpack_metadata[${j}].metadata`));
  }

  checkMetadata(meta: T | null | undefined, path: string): void {
    if (meta === null || meta === undefined) return;
    const custom = meta['custom'] as T | null;
    if (custom !== null && custom !== undefined) within(`${path}.custom`, () => this.prog.values.checkMap(custom, 1));
    const extra = arr(meta['extra']);  // sorted by key: pt2f_keys, checkFieldRules
    extra.forEach((e, j) => checkExtraMetaKey(str((e as T)['key'])!, `${path}.extra[${j}].key`));
  }

  /** One ArgumentValue member: set, and every name it uses declared in this graph. */
  checkArgument(v: T | null): void {
    const k = kind(v);
    if (k === 'TensorArgument') {
      const name = str(v!['name']);
      if (name === null || !this.tensors.has(name)) throw undeclared('tensor', name, 'name');
    } else if (v === null || v === undefined) {
      throw fail('union value is missing');
    } else if (k! in OPTIONAL_NAME) {
      const [scope, what] = OPTIONAL_NAME[k!]!;
      const name = str(v['name']);
      if (name !== null && !this[scope].has(name)) throw undeclared(what, name, 'name');
    } else if (k! in OPTIONAL_NAME_LIST) {
      const [scope, what] = OPTIONAL_NAME_LIST[k!]!;
      arr(v['items']).forEach((item, i) => {
        const name = str((item as T)['name']);
        if (name !== null && !this[scope].has(name)) throw undeclared(what, name, `items[${i}].name`);
      });
    } else if (k === 'TensorListArgument') {
      arr(v['names']).forEach((name, i) => { if (!this.tensors.has(name as string)) throw undeclared('tensor', name as string, `names[${i}]`); });
    } else if (k === 'NestedTensorListArgument') {
      arr(v['lists']).forEach((l, i) => arr((l as T)['names']).forEach((name, j) => {
        if (!this.tensors.has(name as string)) throw undeclared('tensor', name as string, `lists[${i}].names[${j}]`);
      }));
    } else if (k === 'CustomObjArgument') {
      const name = str(v['name']);
      if (name === null || !this.customObjs.has(name)) throw undeclared('custom object', name, 'name');
    } else if (k === 'TokenArgument') {
    } else if (k === 'GraphArgument') {
      const graph = v['graph'] as T | null;
      this.checkMetadata(v['metadata'] as T | null, 'metadata');
      within('graph', () => new GraphCheck(this.prog, graph!, this.depth + 1).check());
    } else if (k === 'TreeSpecArgument') {  // 1.1: a flat_apply node's spec, fetched with get_attr
      const spec = v['spec'] as T | null;
      this.checkMetadata(v['metadata'] as T | null, 'metadata');
      within('spec', () => this.prog.checkTreeSpec(spec!, 0));
    } else if (k === 'StringToArgumentMapArgument') {
      arr(v['entries']).forEach((entry, i) => within(`entries[${i}].value`, () => {
        const val = (entry as T)['value'] as T | null;
        if (val === null || val === undefined) throw fail('required field is missing');
        this.checkArgument(val['value'] as T | null);
      }));
    }
  }
}
