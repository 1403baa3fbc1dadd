/**
 * The MSGPACK program encoding (SPEC.md section 4) into the decoded tree.
 *
 * A strict small decoder rather than an npm package (`@msgpack/msgpack`): the
 * dump needs float bit patterns as they are in the file (a JS number may lose
 * a NaN payload), strings must be refused on invalid UTF-8 (the package
 * substitutes U+FFFD), 64-bit integers must stay exact whatever their width in
 * the file, and every failure must be a typed pt2format error. Unpacking keeps
 * integers as bigint, floats as binary64 bits, strings, bin as Uint8Array,
 * maps and ext only to be ignored in positions the reader does not know (or
 * refused as the wrong type where it does). Then the positional tree (a table
 * is an array indexed by field id, a union's type at id - 1) is checked
 * against the schema descriptor exactly as pt2format/_codecs/msgpack.py does.
 */
import { ElemDesc, FieldDesc, ScalarKind, StructDesc, TableDesc } from './descriptor.js';
import { EncodingError, LimitError, VersionError } from './errors.js';
import { MAX_MSGPACK_DEPTH } from './generated/limits.js';
import { checkStringClass, stringClassOf } from './strings.js';
import { absentValue, INT_RANGE, newTable, numberBits, TTable, TValue } from './tree.js';
import { widenFloat32Bits } from './dump.js';

/** msgpack-python's unpacker stack (nesting of arrays and maps). */
const MAX_CONTAINER_DEPTH = MAX_MSGPACK_DEPTH;

class MpFloat { constructor(readonly bits: bigint) {} }
class MpMap { constructor(readonly size: number) {} }
class MpExt { constructor(readonly type: number) {} }
type Mp = null | boolean | bigint | MpFloat | string | Uint8Array | Mp[] | MpMap | MpExt;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class Unpacker {
  private pos = 0;
  private readonly view: DataView;
  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private need(n: number): number {
    if (n > this.buf.length - this.pos) throw new EncodingError('malformed msgpack: data ends inside an object', { offset: this.pos, expected: `${n} more bytes`, got: this.buf.length - this.pos });
    const at = this.pos;
    this.pos += n;
    return at;
  }

  private u8(): number { return this.view.getUint8(this.need(1)); }
  private u16(): number { return this.view.getUint16(this.need(2)); }
  private u32(): number { return this.view.getUint32(this.need(4)); }

  private str(n: number): string {
    const at = this.need(n);
    try {
      return utf8.decode(this.buf.subarray(at, at + n));
    } catch {
      throw new EncodingError('string is not valid UTF-8', { offset: at, expected: 'UTF-8' });
    }
  }

  private bin(n: number): Uint8Array { const at = this.need(n); return this.buf.subarray(at, at + n); }

  private array(n: number, depth: number): Mp[] {
    if (n > this.buf.length - this.pos) throw new EncodingError('malformed msgpack: array longer than the data', { offset: this.pos, got: n });
    if (n > 0 && depth >= MAX_CONTAINER_DEPTH) throw new LimitError('msgpack nesting too deep', { offset: this.pos, expected: `<= ${MAX_CONTAINER_DEPTH}` });
    const out: Mp[] = new Array(n);
    for (let i = 0; i < n; i++) out[i] = this.value(depth + 1);
    return out;
  }

  private map(n: number, depth: number): MpMap {
    if (n > this.buf.length - this.pos) throw new EncodingError('malformed msgpack: map longer than the data', { offset: this.pos, got: n });
    if (n > 0 && depth >= MAX_CONTAINER_DEPTH) throw new LimitError('msgpack nesting too deep', { offset: this.pos, expected: `<= ${MAX_CONTAINER_DEPTH}` });
    for (let i = 0; i < n; i++) {
      const at = this.pos;
      const k = this.value(depth + 1);
      if (typeof k !== 'string' && !(k instanceof Uint8Array)) {
        throw new EncodingError('malformed msgpack: map key is not str or bin', { offset: at });
      }
      this.value(depth + 1);
    }
    return new MpMap(n);
  }

  private ext(n: number): MpExt {
    const type = this.view.getInt8(this.need(1));
    this.need(n);
    if (type === -1 && n !== 4 && n !== 8 && n !== 12) {
      throw new EncodingError('malformed msgpack: timestamp extension of a bad length', { offset: this.pos - n, expected: '4, 8 or 12 bytes', got: n });
    }
    return new MpExt(type);
  }

  value(depth: number): Mp {
    const at = this.pos;
    const b = this.u8();
    if (b <= 0x7f) return BigInt(b);
    if (b >= 0xe0) return BigInt(b - 0x100);
    if (b >= 0xa0 && b <= 0xbf) return this.str(b & 0x1f);
    if (b >= 0x90 && b <= 0x9f) return this.array(b & 0x0f, depth);
    if (b >= 0x80 && b <= 0x8f) return this.map(b & 0x0f, depth);
    const v = this.view;
    switch (b) {
      case 0xc0: return null;
      case 0xc2: return false;
      case 0xc3: return true;
      case 0xc4: return this.bin(this.u8());
      case 0xc5: return this.bin(this.u16());
      case 0xc6: return this.bin(this.u32());
      case 0xc7: return this.ext(this.u8());
      case 0xc8: return this.ext(this.u16());
      case 0xc9: return this.ext(this.u32());
      case 0xca: return new MpFloat(widenFloat32Bits(v.getUint32(this.need(4))));
      case 0xcb: return new MpFloat(v.getBigUint64(this.need(8)));
      case 0xcc: return BigInt(this.u8());
      case 0xcd: return BigInt(this.u16());
      case 0xce: return BigInt(this.u32());
      case 0xcf: return v.getBigUint64(this.need(8));
      case 0xd0: return BigInt(v.getInt8(this.need(1)));
      case 0xd1: return BigInt(v.getInt16(this.need(2)));
      case 0xd2: return BigInt(v.getInt32(this.need(4)));
      case 0xd3: return v.getBigInt64(this.need(8));
      case 0xd4: return this.ext(1);
      case 0xd5: return this.ext(2);
      case 0xd6: return this.ext(4);
      case 0xd7: return this.ext(8);
      case 0xd8: return this.ext(16);
      case 0xd9: return this.str(this.u8());
      case 0xda: return this.str(this.u16());
      case 0xdb: return this.str(this.u32());
      case 0xdc: return this.array(this.u16(), depth);
      case 0xdd: return this.array(this.u32(), depth);
      case 0xde: return this.map(this.u16(), depth);
      case 0xdf: return this.map(this.u32(), depth);
    }
    throw new EncodingError('malformed msgpack: reserved type byte 0xc1', { offset: at, got: '0xc1' });
  }

  whole(): Mp {
    const v = this.value(0);
    if (this.pos !== this.buf.length) {
      throw new EncodingError('trailing bytes after the msgpack object', { offset: this.pos, expected: `${this.pos} bytes`, got: this.buf.length });
    }
    return v;
  }
}

function typeName(v: Mp): string {
  if (v === null) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'string') return 'str';
  if (v instanceof MpFloat) return 'float';
  if (v instanceof Uint8Array) return 'bytes';
  if (Array.isArray(v)) return 'list';
  if (v instanceof MpMap) return 'dict';
  return 'ExtType';
}

function wrong(path: string, expected: string, v: Mp): EncodingError {
  return new EncodingError('wrong type', { path, expected, got: typeName(v) });
}

/** An integer of `kind`, as check_int: exact int (not bool, not float), in range. */
export function checkInt(v: Mp, kind: ScalarKind, path: string): number | bigint {
  if (typeof v !== 'bigint') throw wrong(path, `integer (${kind})`, v);
  return intInRange(v, kind, path);
}

export function intInRange(v: bigint, kind: ScalarKind, path: string): number | bigint {
  const [lo, hi] = INT_RANGE[kind]!;
  if (v < lo || v > hi) throw new EncodingError('integer out of range', { path, expected: `${kind} in [${lo}, ${hi}]`, got: v });
  return kind === 'int64' || kind === 'uint64' ? v : Number(v);
}

class TreeBuilder {
  constructor(private readonly maxDepth: number) {}

  scalar(v: Mp, kind: ScalarKind, path: string): TValue {
    if (kind === 'float32' || kind === 'float64') {
      if (v instanceof MpFloat) return v.bits;
      if (typeof v === 'bigint') return numberBits(Number(v));
      throw wrong(path, 'float', v);
    }
    if (kind === 'bool') {
      if (typeof v === 'boolean') return v;
      throw wrong(path, 'bool', v);
    }
    return checkInt(v, kind, path);
  }

  private string(v: Mp, where: string, path: string): string {
    if (typeof v !== 'string') throw wrong(path, 'string', v);
    const [table, field] = where.split('.') as [string, string];
    const cls = stringClassOf(table, field);
    if (cls !== undefined) checkStringClass(v, cls, where, path);
    return v;
  }

  struct(v: Mp, desc: StructDesc, path: string): TTable {
    if (!Array.isArray(v)) throw wrong(path, `array (${desc.name})`, v);
    if (v.length !== desc.fields.length) {
      throw new EncodingError('struct has the wrong number of fields', { path, expected: desc.fields.length, got: v.length });
    }
    const o: TTable = {};
    desc.fields.forEach((f, i) => {
      const p = `${path}.${f.name}`;
      if (f.struct) throw new EncodingError('nested struct in MessagePack is not supported', { path: p });
      o[f.name] = this.scalar(v[i]!, f.scalar!, p);
    });
    return o;
  }

  table(v: Mp, desc: TableDesc, path: string, depth: number): TTable {
    if (depth > this.maxDepth) throw new LimitError('nesting deeper than max_depth', { path, expected: `<= ${this.maxDepth}`, got: depth });
    if (!Array.isArray(v)) throw wrong(path, `array (${desc.name})`, v);
    const o = newTable(desc);
    const n = v.length;
    for (const f of desc.fields) {
      const id = (f.vt - 4) / 2;
      const x = id < n ? v[id]! : null;
      const p = path ? `${path}.${f.name}` : f.name;
      if (f.kind === 'union') {
        const t = id - 1 < n ? v[id - 1]! : null;
        o[f.name] = this.union(t, x, f, p, path, depth);
      } else if (x === null) {
        if (f.required) throw new EncodingError('required field is missing', { path: p, expected: f.name, got: 'nil' });
        o[f.name] = absentValue(f);
      } else {
        o[f.name] = this.field(x, f, desc.name, p, depth);
      }
    }
    return o;
  }

  private union(t: Mp, v: Mp, f: Extract<FieldDesc, { kind: 'union' }>, p: string, parent: string, depth: number): TValue {
    const tpath = parent ? `${parent}.${f.name}_type` : `${f.name}_type`;
    // Python's `t is None or t == 0`: False and 0.0 equal 0 there too.
    const isZero = t === false || t === 0n || (t instanceof MpFloat && (t.bits === 0n || t.bits === 1n << 63n));
    if (t === null || isZero) {
      if (t === null && v !== null) throw new EncodingError('union member without a type', { path: tpath, expected: 'type index', got: 'nil' });
      return null;
    }
    if (typeof t !== 'bigint') throw wrong(tpath, 'union type index', t);
    if (t < 0n || t > 255n) throw new EncodingError('union type index out of range', { path: tpath, expected: '0..255', got: t });
    const member = f.members[Number(t)];
    if (!member) {
      throw new VersionError('union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)',
        { path: tpath, expected: `0..${f.members.length - 1}`, got: t });
    }
    if (v === null) throw new EncodingError('union type without a member', { path: p, expected: member.name, got: 'nil' });
    return this.table(v, member, p, depth + 1);
  }

  private field(x: Mp, f: FieldDesc, table: string, p: string, depth: number): TValue {
    switch (f.kind) {
      case 'scalar': return this.scalar(x, f.scalar, p);
      case 'string': return this.string(x, `${table}.${f.name}`, p);
      case 'table': return this.table(x, f.table, p, depth + 1);
      case 'struct': return this.struct(x, f.struct, p);
      case 'vector': return this.vector(x, f.elem, `${table}.${f.name}`, p, depth);
      default: throw new Error('unreachable');
    }
  }

  private vector(v: Mp, elem: ElemDesc, where: string, path: string, depth: number): TValue[] {
    if (elem.kind === 'scalar' && elem.scalar === 'uint8' && !elem.enumDesc) {
      if (v instanceof Uint8Array) return Array.from(v);
      if (!Array.isArray(v)) throw wrong(path, 'bin', v);
      return v.map((x, i) => checkInt(x, 'uint8', `${path}[${i}]`));
    }
    if (!Array.isArray(v)) throw wrong(path, 'array', v);
    switch (elem.kind) {
      case 'string':
        v.forEach((x, i) => { if (typeof x !== 'string') throw wrong(`${path}[${i}]`, 'string', x); });
        return v.map((x, i) => this.string(x, where, `${path}[${i}]`));
      case 'table': return v.map((x, i) => this.table(x, elem.table, `${path}[${i}]`, depth + 1));
      case 'struct': return v.map((x, i) => this.struct(x, elem.struct, `${path}[${i}]`));
      case 'scalar': return v.map((x, i) => this.scalar(x, elem.scalar, `${path}[${i}]`));
    }
  }
}

/** Decodes a MSGPACK program section into the tree; EncodingError/LimitError/VersionError on anything wrong. */
export function decodeMsgpack(buf: Uint8Array, root: TableDesc, maxDepth: number): TTable {
  const doc = new Unpacker(buf).whole();
  return new TreeBuilder(maxDepth).table(doc, root, '', 1);
}
