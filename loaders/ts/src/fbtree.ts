/**
 * A verified FlatBuffers program into the decoded tree (src/tree.ts).
 *
 * Runs after src/verify.ts has proved every offset, vtable, string and vector
 * in bounds (and capped table visits), so it reads the buffer directly with
 * the schema descriptor. Each string is decoded as strict UTF-8
 * (EncodingError otherwise) and checked against its field's string class
 * (src/strings.ts) as the Python decoders do; a string shared by many offsets
 * is decoded once.
 */
import { ElemDesc, FieldDesc, ScalarKind, StructDesc, TableDesc } from './descriptor.js';
import { elemSize } from './verify.js';
import { EncodingError, VersionError } from './errors.js';
import { widenFloat32Bits } from './dump.js';
import { checkStringClass, StringSlot, stringSlot } from './strings.js';
import { absentValue, newTable, TTable, TValue } from './tree.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class FbTreeDecoder {
  private readonly view: DataView;
  private readonly strings = new Map<number, string>();
  private readonly checked = new Map<string, Set<string>>();

  constructor(private readonly buf: Uint8Array, private readonly ctx: { file?: string; section?: string } = {}) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  scalar(pos: number, kind: ScalarKind): TValue {
    const v = this.view;
    switch (kind) {
      case 'bool': return v.getUint8(pos) !== 0;
      case 'int8': return v.getInt8(pos);
      case 'uint8': return v.getUint8(pos);
      case 'int16': return v.getInt16(pos, true);
      case 'uint16': return v.getUint16(pos, true);
      case 'int32': return v.getInt32(pos, true);
      case 'uint32': return v.getUint32(pos, true);
      case 'int64': return v.getBigInt64(pos, true);
      case 'uint64': return v.getBigUint64(pos, true);
      case 'float32': return widenFloat32Bits(v.getUint32(pos, true));
      case 'float64': return v.getBigUint64(pos, true);
    }
  }

  private string(pos: number, slot: StringSlot, path: string | (() => string)): string {
    const target = pos + this.view.getUint32(pos, true);
    let s = this.strings.get(target);
    if (s === undefined) {
      const n = this.view.getUint32(target, true);
      try {
        s = utf8.decode(this.buf.subarray(target + 4, target + 4 + n));
      } catch {
        throw new EncodingError('string is not valid UTF-8', { ...this.ctx, offset: target, path: typeof path === 'string' ? path : path() });
      }
      this.strings.set(target, s);
    }
    const cls = slot.cls;
    if (cls !== undefined) {
      let ok = this.checked.get(cls);
      if (!ok) this.checked.set(cls, (ok = new Set()));
      if (!ok.has(s)) {
        try {
          checkStringClass(s, cls, slot.where, typeof path === 'string' ? path : path());
        } catch (e) {
          throw (e as EncodingError).withContext(this.ctx);
        }
        if (ok.size < 65536) ok.add(s);
      }
    }
    return s;
  }

  struct(pos: number, desc: StructDesc): TTable {
    const o: TTable = {};
    for (const f of desc.fields) o[f.name] = f.struct ? this.struct(pos + f.offset, f.struct) : this.scalar(pos + f.offset, f.scalar!);
    return o;
  }

  table(pos: number, desc: TableDesc, path: string): TTable {
    const v = this.view;
    const vtable = pos - v.getInt32(pos, true);
    const vsize = v.getUint16(vtable, true);
    const o = newTable(desc);
    // Field paths are built only for fields that can fail or hold tables (not for scalars).
    for (const f of desc.fields) {
      if (f.kind === 'union') {
        const to = f.typeVt < vsize ? v.getUint16(vtable + f.typeVt, true) : 0;
        const type = to ? v.getUint8(pos + to) : 0;
        const member = f.members[type];
        const fpath = path ? `${path}.${f.name}` : f.name;
        if (type !== 0 && !member) {
          throw new VersionError('union member index unknown to this reader: defined by a newer minor (SPEC.md section 8)',
            { ...this.ctx, path: `${fpath}_type`, expected: `0..${f.members.length - 1}`, got: type });
        }
        const off = f.vt < vsize ? v.getUint16(vtable + f.vt, true) : 0;
        o[f.name] = member && off ? this.table(pos + off + v.getUint32(pos + off, true), member, fpath) : null;
        continue;
      }
      const off = f.vt < vsize ? v.getUint16(vtable + f.vt, true) : 0;
      if (!off) o[f.name] = absentValue(f);
      else if (f.kind === 'scalar') o[f.name] = this.scalar(pos + off, f.scalar);
      else o[f.name] = this.field(pos + off, f, desc.name, path ? `${path}.${f.name}` : f.name);
    }
    return o;
  }

  private field(at: number, f: FieldDesc, table: string, path: string): TValue {
    switch (f.kind) {
      case 'scalar': return this.scalar(at, f.scalar);
      case 'struct': return this.struct(at, f.struct);
      case 'string': return this.string(at, stringSlot(table, f.name), path);
      case 'table': return this.table(at + this.view.getUint32(at, true), f.table, path);
      case 'vector': return this.vector(at + this.view.getUint32(at, true), f.elem, stringSlot(table, f.name), path);
      default: throw new Error('unreachable');
    }
  }

  private vector(pos: number, elem: ElemDesc, slot: StringSlot, path: string): TValue[] {
    const n = this.view.getUint32(pos, true);
    const size = elemSize(elem);
    const out: TValue[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const at = pos + 4 + i * size;
      switch (elem.kind) {
        case 'scalar': out[i] = this.scalar(at, elem.scalar); break;
        case 'struct': out[i] = this.struct(at, elem.struct); break;
        case 'string': out[i] = this.string(at, slot, () => `${path}[${i}]`); break;
        case 'table': out[i] = this.table(at + this.view.getUint32(at, true), elem.table, `${path}[${i}]`); break;
      }
    }
    return out;
  }
}
