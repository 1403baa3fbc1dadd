/**
 * A generic, schema-driven decoder: a verified FlatBuffers program into plain
 * JavaScript objects, keyed by the schema's field names (as the canonical dump
 * is), walking the reader's schema descriptor. It knows no table or field by
 * name, so schema additions flow through untouched.
 *
 * Same tree as `JSON.parse(dump)`, with three differences made for speed:
 * floats are numbers (not bit-pattern strings), 64-bit integers are numbers
 * (exact up to 2^53; the viewer only displays them), and strings are decoded
 * leniently (the reader's verifier has already checked the structure).
 */
import { bitsNumber, descOf, schemaDescriptor } from '../../src/index.js';
import type { TTable } from '../../src/index.js';
import type { ElemDesc, FieldDesc, StructDesc, TableDesc } from '../../src/descriptor.js';

const utf8 = new TextDecoder('utf-8');
type Obj = Record<string, unknown>;

export class TreeDecoder {
  private view: DataView;
  private strings = new Map<number, string>();
  /** `lazy`: field names decoded only when read (getters), for big fields most views never show. */
  constructor(private buf: Uint8Array, private lazy: ReadonlySet<string> = new Set()) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  /** The root table. */
  root(): Obj {
    return this.table(this.view.getUint32(0, true), schemaDescriptor().root);
  }

  private scalar(pos: number, kind: string, enumDesc?: { values: Record<string | number, string | number> }): unknown {
    const v = this.view;
    let x: number | boolean;
    switch (kind) {
      case 'bool': return v.getUint8(pos) !== 0;
      case 'int8': x = v.getInt8(pos); break;
      case 'uint8': x = v.getUint8(pos); break;
      case 'int16': x = v.getInt16(pos, true); break;
      case 'uint16': x = v.getUint16(pos, true); break;
      case 'int32': x = v.getInt32(pos, true); break;
      case 'uint32': x = v.getUint32(pos, true); break;
      case 'int64': x = Number(v.getBigInt64(pos, true)); break;
      case 'uint64': x = Number(v.getBigUint64(pos, true)); break;
      case 'float32': return v.getFloat32(pos, true);
      case 'float64': return v.getFloat64(pos, true);
      default: return null;
    }
    if (enumDesc) { const name = enumDesc.values[x as number]; return typeof name === 'string' ? name : x; }
    return x;
  }

  private string(pos: number): string {
    const target = pos + this.view.getUint32(pos, true);
    const hit = this.strings.get(target);
    if (hit !== undefined) return hit;
    const n = this.view.getUint32(target, true);
    const s = utf8.decode(this.buf.subarray(target + 4, target + 4 + n));
    this.strings.set(target, s);
    return s;
  }

  private struct(pos: number, desc: StructDesc): Obj {
    const o: Obj = {};
    for (const f of desc.fields) o[f.name] = f.struct ? this.struct(pos + f.offset, f.struct) : this.scalar(pos + f.offset, f.scalar!, f.enumDesc);
    return o;
  }

  table(pos: number, desc: TableDesc): Obj {
    const v = this.view;
    const vtable = pos - v.getInt32(pos, true);
    const vsize = v.getUint16(vtable, true);
    const slot = (vt: number) => (vt < vsize ? v.getUint16(vtable + vt, true) : 0);
    const o: Obj = {};
    for (const { key, field: f, unionType } of desc.keyOrder) {
      if (f.kind === 'union') {
        const to = slot(f.typeVt);
        const type = to ? v.getUint8(pos + to) : 0;
        if (unionType) { o[key] = type === 0 ? 'NONE' : (f.enumDesc.values[type] ?? type); continue; }
        const member = f.members[type] ?? null;
        const off = slot(f.vt);
        o[key] = member && off ? this.table(pos + off + v.getUint32(pos + off, true), member) : null;
        continue;
      }
      const off = slot(f.vt);
      if (off && this.lazy.has(key)) {
        let memo: unknown, done = false;
        Object.defineProperty(o, key, { enumerable: true, get: () => { if (!done) { memo = this.field(pos + off, f); done = true; } return memo; } });
        continue;
      }
      o[key] = off ? this.field(pos + off, f) : absent(f);
    }
    return o;
  }

  private field(at: number, f: FieldDesc): unknown {
    switch (f.kind) {
      case 'scalar': return this.scalar(at, f.scalar, f.enumDesc);
      case 'struct': return this.struct(at, f.struct);
      case 'string': return this.string(at);
      case 'table': return this.table(at + this.view.getUint32(at, true), f.table);
      case 'vector': return this.vector(at + this.view.getUint32(at, true), f.elem);
      default: return null;
    }
  }

  private vector(pos: number, elem: ElemDesc): unknown[] {
    const n = this.view.getUint32(pos, true);
    const size = elem.kind === 'struct' ? elem.struct.size : elem.kind === 'scalar' ? SIZES[elem.scalar]! : 4;
    const out: unknown[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const at = pos + 4 + i * size;
      switch (elem.kind) {
        case 'scalar': out[i] = this.scalar(at, elem.scalar, elem.enumDesc); break;
        case 'struct': out[i] = this.struct(at, elem.struct); break;
        case 'string': out[i] = this.string(at); break;
        case 'table': out[i] = this.table(at + this.view.getUint32(at, true), elem.table); break;
      }
    }
    return out;
  }
}

const SIZES: Record<string, number> = { bool: 1, int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, float32: 4, float64: 8 };

function absent(f: FieldDesc): unknown {
  switch (f.kind) {
    case 'scalar': {
      const d = f.defaultValue;
      if (typeof d === 'boolean') return d;
      const x = Number(d);
      if (f.enumDesc) { const name = f.enumDesc.values[x]; return typeof name === 'string' ? name : x; }
      return x;
    }
    case 'vector': return [];
    default: return null;
  }
}

/**
 * The same plain objects from the reader's decoded tree (`file.tree()`), for MSGPACK and JSON
 * programs, which have no FlatBuffers bytes to walk: enums by name, numbers as numbers.
 */
export function fromTree(root: TTable): Obj {
  return convertTable(root, schemaDescriptor().root);
}

function convertScalar(v: unknown, kind: string, enumDesc?: { values: Record<string | number, string | number> }): unknown {
  if (kind === 'bool') return v;
  if (kind === 'float32' || kind === 'float64') return bitsNumber(v as bigint);
  const x = Number(v as number | bigint);
  if (enumDesc) { const name = enumDesc.values[x]; return typeof name === 'string' ? name : x; }
  return x;
}

function convertStruct(o: TTable, desc: StructDesc): Obj {
  const out: Obj = {};
  for (const f of desc.fields) out[f.name] = f.struct ? convertStruct(o[f.name] as TTable, f.struct) : convertScalar(o[f.name], f.scalar!, f.enumDesc);
  return out;
}

function convertTable(o: TTable, desc: TableDesc): Obj {
  const out: Obj = {};
  for (const { key, field: f, unionType } of desc.keyOrder) {
    const v = o[f.name] ?? null;
    if (f.kind === 'union') {
      out[key] = unionType ? (v === null ? 'NONE' : descOf(v as TTable).name) : v === null ? null : convertTable(v as TTable, descOf(v as TTable));
      continue;
    }
    out[key] = v === null ? null : convertField(v, f);
  }
  return out;
}

function convertField(v: unknown, f: FieldDesc): unknown {
  switch (f.kind) {
    case 'scalar': return convertScalar(v, f.scalar, f.enumDesc);
    case 'struct': return convertStruct(v as TTable, f.struct);
    case 'string': return v;
    case 'table': return convertTable(v as TTable, f.table);
    case 'vector': return (v as unknown[]).map((x) => convertElem(x, f.elem));
    default: return null;
  }
}

function convertElem(x: unknown, e: ElemDesc): unknown {
  switch (e.kind) {
    case 'scalar': return convertScalar(x, e.scalar, e.enumDesc);
    case 'struct': return convertStruct(x as TTable, e.struct);
    case 'string': return x;
    case 'table': return convertTable(x as TTable, e.table);
  }
}
