/**
 * The FlatBuffers verifier: proves a program buffer is safe to read before any accessor runs.
 *
 * The JavaScript FlatBuffers runtime has no verifier, so this walks the buffer
 * with the schema descriptor the way flatc's C++ Verifier does: every offset,
 * vtable, string and vector is bounds-checked, offsets and lengths must be
 * aligned, strings NUL-terminated, required fields present, and nesting depth
 * and the number of tables visited are capped so that hostile input (cycles,
 * shared subtrees, huge vectors) ends in a typed error, never a hang. Like
 * pt2format's Python reader it also requires every field to lie inside its
 * table, rejects a union type without its value or unknown to this schema,
 * and rejects vtables of 32 KiB or more, whose entries the JS runtime would
 * read as negative offsets.
 */
import { EncodingError, LimitError, Pt2fError, VersionError } from './errors.js';
import { ElemDesc, FieldDesc, SCALAR_SIZE, StructDesc, TableDesc } from './descriptor.js';
import { MAX_DEPTH, VERIFIER_BYTES_PER_TABLE, VERIFIER_MIN_TABLES } from './generated/limits.js';

export interface VerifyLimits {
  /** Deepest table nesting allowed, the root being depth 1. */
  maxDepth?: number;
  /** Most table visits allowed; defaults to the schema's bound: the larger of VERIFIER_MIN_TABLES and one per
   *  VERIFIER_BYTES_PER_TABLE bytes of buffer (generated/limits.ts). */
  maxTables?: number;
}

/** As pt2format's Python reader (`read(..., max_depth)`): the schema's max_depth (generated/limits.ts). */
export const DEFAULT_MAX_DEPTH = MAX_DEPTH;
const MAX_BUFFER = 0x7fffffff;

class Walker {
  private readonly view: DataView;
  private readonly len: number;
  private tables = 0;
  private readonly maxTables: number;
  private readonly maxDepth: number;

  constructor(private readonly buf: Uint8Array, limits: VerifyLimits, private readonly ctx: { file?: string; section?: string }) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    this.len = buf.length;
    this.maxDepth = limits.maxDepth ?? DEFAULT_MAX_DEPTH;
    // The schema's bound (pt2f_limits), as the C++ reader's flatbuffers::Verifier max_tables.
    this.maxTables = limits.maxTables ?? Math.max(VERIFIER_MIN_TABLES, Math.floor(buf.length / VERIFIER_BYTES_PER_TABLE));
  }

  err(msg: string, offset: number, path: string, expected?: unknown, got?: unknown): never {
    throw new EncodingError(msg, { ...this.ctx, offset, path: path || undefined, expected, got });
  }

  /** [pos, pos + size) lies in the buffer and pos is aligned to `align` (relative to the buffer start). */
  check(pos: number, size: number, align: number, what: string, path: string): void {
    if (pos < 0 || size < 0 || pos > this.len || size > this.len - pos) {
      this.err(`${what} is out of bounds`, pos, path, `[0, ${this.len})`, `[${pos}, ${pos + size})`);
    }
    if (align > 1 && pos % align !== 0) this.err(`${what} is misaligned`, pos, path, `multiple of ${align}`, pos);
  }

  /** Follows the uoffset at `pos` (C++ VerifyOffset): non-zero, non-negative as int32, target in bounds. */
  offset(pos: number, what: string, path: string): number {
    this.check(pos, 4, 4, `offset to ${what}`, path);
    const o = this.view.getUint32(pos, true);
    if (o === 0) this.err(`offset to ${what} is zero`, pos, path, '> 0', 0);
    if (o > 0x7fffffff) this.err(`offset to ${what} is negative as int32`, pos, path, '< 2^31', o);
    const target = pos + o;
    this.check(target, 1, 1, what, path);
    return target;
  }

  /** A length-prefixed run of `n` elements of `elemSize` bytes at `pos`; returns n. */
  vectorLength(pos: number, elemSize: number, what: string, path: string): number {
    this.check(pos, 4, 4, `${what} length`, path);
    const n = this.view.getUint32(pos, true);
    if (n >= Math.floor(MAX_BUFFER / Math.max(elemSize, 1))) this.err(`${what} is too long`, pos, path, 'fits in the buffer', n);
    this.check(pos + 4, n * elemSize, 1, `${what} of ${n} elements`, path);
    return n;
  }

  string(pos: number, path: string): void {
    const n = this.vectorLength(pos, 1, 'string', path);
    this.check(pos + 4 + n, 1, 1, 'string terminator', path);
    if (this.buf[pos + 4 + n] !== 0) this.err('string is not NUL-terminated', pos + 4 + n, path, 0, this.buf[pos + 4 + n]);
  }

  table(pos: number, desc: TableDesc, depth: number, path: string): void {
    if (depth > this.maxDepth) {
      throw new LimitError('tables are nested too deeply', { ...this.ctx, offset: pos, path, expected: `depth <= ${this.maxDepth}`, got: depth });
    }
    if (++this.tables > this.maxTables) {
      throw new LimitError('too many tables', { ...this.ctx, offset: pos, path, expected: `<= ${this.maxTables}`, got: this.tables });
    }
    this.check(pos, 4, 4, `${desc.name} table`, path);
    const vtable = pos - this.view.getInt32(pos, true);
    this.check(vtable, 4, 2, `${desc.name} vtable`, path);
    const vsize = this.view.getUint16(vtable, true);
    if (vsize & 1 || vsize < 4 || vsize >= 0x8000) this.err(`${desc.name} vtable size is invalid`, vtable, path, 'even, 4..32766', vsize);
    this.check(vtable, vsize, 2, `${desc.name} vtable`, path);
    const tsize = this.view.getUint16(vtable + 2, true);
    if (tsize < 4) this.err(`${desc.name} table size is invalid`, vtable + 2, path, '>= 4', tsize);
    this.check(pos, tsize, 4, `${desc.name} table`, path);
    for (const f of desc.fields) this.field(pos, vtable, vsize, tsize, f, depth, path);
  }

  /** The field offset in vtable slot `vt` (0 when absent); the field's `size` bytes must lie inside the table. */
  private slot(pos: number, vtable: number, vsize: number, tsize: number, vt: number, size: number, path: string): number {
    if (vt >= vsize) return 0;
    const o = this.view.getUint16(vtable + vt, true);
    if (o === 0) return 0;
    if (o < 4 || o + size > tsize) this.err('field lies outside its table', pos + o, path, `4..${tsize - size}`, o);
    if (o >= 0x8000) this.err('field offset too large for the JS runtime', vtable + vt, path, '< 32768', o);
    return o;
  }

  private field(pos: number, vtable: number, vsize: number, tsize: number, f: FieldDesc, depth: number, parent: string): void {
    const path = parent ? `${parent}.${f.name}` : f.name;
    const size = f.kind === 'scalar' ? SCALAR_SIZE[f.scalar] : f.kind === 'struct' ? f.struct.size : 4;
    const o = this.slot(pos, vtable, vsize, tsize, f.vt, size, path);
    if (f.kind === 'union') {
      const to = this.slot(pos, vtable, vsize, tsize, f.typeVt, 1, `${path}_type`);
      const type = to ? this.buf[pos + to]! : 0;
      if (type === 0) return;
      const member = f.members[type];
      if (!member) {
        // The model cannot hold it and dropping it would change the program (SPEC.md §8).
        throw new VersionError('union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)',
          { ...this.ctx, offset: pos + to, path: `${path}_type`, expected: `0..${f.members.length - 1}`, got: type });
      }
      if (!o) this.err(`union ${f.name} has a type but no value`, pos, path, member.name, 'absent');
      this.table(this.offset(pos + o, `${f.name} value`, path), member, depth + 1, path);
      return;
    }
    if (!o) {
      if (f.required) this.err(`required field ${f.name} is missing`, pos, path, 'present', 'absent');
      return;
    }
    const at = pos + o;
    switch (f.kind) {
      case 'scalar': this.check(at, size, size, `${f.name} field`, path); return;
      case 'struct': this.check(at, size, f.struct.align, `${f.name} struct`, path); return;
      case 'string': this.string(this.offset(at, 'string', path), path); return;
      case 'table': this.table(this.offset(at, f.table.name, path), f.table, depth + 1, path); return;
      case 'vector': this.vector(this.offset(at, 'vector', path), f.elem, depth, path); return;
    }
  }

  private vector(pos: number, elem: ElemDesc, depth: number, path: string): void {
    const size = elemSize(elem);
    const n = this.vectorLength(pos, size, 'vector', path);
    if (elem.kind === 'string') {
      for (let i = 0; i < n; i++) {
        this.count(pos, path);
        this.string(this.offset(pos + 4 + 4 * i, 'string', `${path}[${i}]`), `${path}[${i}]`);
      }
    } else if (elem.kind === 'table') {
      for (let i = 0; i < n; i++) {
        const p = `${path}[${i}]`;
        this.table(this.offset(pos + 4 + 4 * i, elem.table.name, p), elem.table, depth + 1, p);
      }
    }
  }

  /** Strings count as table visits so vectors of shared strings cannot amplify work without bound. */
  private count(pos: number, path: string): void {
    if (++this.tables > this.maxTables) {
      throw new LimitError('too many objects', { ...this.ctx, offset: pos, path, expected: `<= ${this.maxTables}`, got: this.tables });
    }
  }
}

export function elemSize(e: ElemDesc): number {
  switch (e.kind) {
    case 'scalar': return SCALAR_SIZE[e.scalar];
    case 'struct': return (e.struct as StructDesc).size;
    default: return 4;
  }
}

/**
 * Verifies `buf` as a FlatBuffers buffer whose root is `root` with file
 * identifier `identifier`; returns the root table's position.
 */
export function verifyBuffer(buf: Uint8Array, root: TableDesc, identifier: string, limits: VerifyLimits = {},
  ctx: { file?: string; section?: string } = {}): number {
  const w = new Walker(buf, limits, ctx);
  if (buf.length > MAX_BUFFER) throw new LimitError('program buffer is larger than 2 GiB', { ...ctx, expected: `<= ${MAX_BUFFER}`, got: buf.length });
  if (buf.length < 8) w.err('buffer is too short for a root offset and file identifier', 0, '', '>= 8 bytes', buf.length);
  const ident = String.fromCharCode(buf[4]!, buf[5]!, buf[6]!, buf[7]!);
  if (ident !== identifier) w.err('wrong FlatBuffers file identifier', 4, '', identifier, JSON.stringify(ident));
  const rootPos = w.offset(0, `${root.name} root`, '');
  try {
    w.table(rootPos, root, 1, '');
  } catch (e) {
    if (e instanceof Pt2fError) throw e;
    throw new EncodingError(`verifier failed: ${String(e)}`, ctx);
  }
  return rootPos;
}
