/**
 * The canonical dump (SPEC.md §6): the language-neutral JSON text of a whole file.
 *
 * Walks every field of every table generically with the schema descriptor,
 * reading the verified buffer directly: 64-bit integers stay exact (bigint),
 * floats are printed as their binary64 bit pattern (read from the bytes, so
 * NaN payloads survive), keys are sorted by code point and strings escaped as
 * Python's `json.dumps(..., ensure_ascii=False)` does. The text must equal the
 * Python `pt2format dump` output byte for byte. Only what the file's own minor
 * defines is rendered (generated/minors.ts, derived from schema/history/): a
 * newer minor's field is left out, its enum values are integers, its union
 * members are a VersionError, as a reader of the file's minor would do.
 */
import { ElemDesc, FieldDesc, ScalarKind, SCALAR_SIZE, StructDesc, TableDesc, EnumDesc } from './descriptor.js';
import { elemSize } from './verify.js';
import { EncodingError, VersionError } from './errors.js';
import { ENUM_VALUE_MINOR, FIELD_MINOR, SCHEMA_VERSION, UNION_MEMBER_MINOR } from './generated/minors.js';

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** Escapes a string exactly as Python's json.dumps(ensure_ascii=False). */
export function jsonString(s: string): string {
  let out = '"';
  let start = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 0x22 && c !== 0x5c) continue;
    out += s.slice(start, i);
    start = i + 1;
    switch (c) {
      case 0x22: out += '\\"'; break;
      case 0x5c: out += '\\\\'; break;
      case 0x0a: out += '\\n'; break;
      case 0x0d: out += '\\r'; break;
      case 0x09: out += '\\t'; break;
      case 0x08: out += '\\b'; break;
      case 0x0c: out += '\\f'; break;
      default: out += '\\u' + c.toString(16).padStart(4, '0');
    }
  }
  return out + s.slice(start) + '"';
}

/** "0x" + 16 lowercase hex digits of a binary64 bit pattern. */
function bitsHex(bits: bigint): string {
  return '"0x' + bits.toString(16).padStart(16, '0') + '"';
}

/** The binary64 bit pattern of a JS number (used for schema defaults only). */
function numberBits(x: number): bigint {
  f64[0] = x;
  return u64[0]!;
}

/**
 * Widens float32 bits to float64 bits in integer arithmetic, as a C
 * `(double)f` does on x86-64 and ARM (what CPython's struct module uses):
 * exact for numbers, signaling NaNs come out quiet with their payload kept.
 */
export function widenFloat32Bits(b: number): bigint {
  const sign = BigInt(b >>> 31) << 63n;
  const exp = (b >>> 23) & 0xff;
  let frac = b & 0x7fffff;
  if (exp === 0xff) {
    if (frac === 0) return sign | (0x7ffn << 52n);
    frac |= 0x400000; // quiet the NaN
    return sign | (0x7ffn << 52n) | (BigInt(frac) << 29n);
  }
  if (exp === 0) {
    if (frac === 0) return sign;
    let e = -126;
    while ((frac & 0x800000) === 0) { frac <<= 1; e--; }
    frac &= 0x7fffff;
    return sign | (BigInt(e + 1023) << 52n) | (BigInt(frac) << 29n);
  }
  return sign | (BigInt(exp - 127 + 1023) << 52n) | (BigInt(frac) << 29n);
}

export class Dumper {
  private readonly view: DataView;
  constructor(private readonly buf: Uint8Array, private readonly ctx: { file?: string; section?: string } = {},
              private readonly minor: number = SCHEMA_VERSION[1]) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private enumName(e: EnumDesc, valueText: string): string {
    return (ENUM_VALUE_MINOR[e.name]?.[valueText] ?? 0) > this.minor ? valueText : enumName(e, valueText);
  }

  scalar(pos: number, kind: ScalarKind, enumDesc?: EnumDesc): string {
    const v = this.view;
    let text: string;
    switch (kind) {
      case 'bool': return v.getUint8(pos) !== 0 ? 'true' : 'false';
      case 'int8': text = String(v.getInt8(pos)); break;
      case 'uint8': text = String(v.getUint8(pos)); break;
      case 'int16': text = String(v.getInt16(pos, true)); break;
      case 'uint16': text = String(v.getUint16(pos, true)); break;
      case 'int32': text = String(v.getInt32(pos, true)); break;
      case 'uint32': text = String(v.getUint32(pos, true)); break;
      case 'int64': text = v.getBigInt64(pos, true).toString(); break;
      case 'uint64': text = v.getBigUint64(pos, true).toString(); break;
      case 'float32': return bitsHex(widenFloat32Bits(v.getUint32(pos, true)));
      case 'float64': return bitsHex(v.getBigUint64(pos, true));
    }
    return enumDesc ? this.enumName(enumDesc, text) : text;
  }

  defaultScalar(f: Extract<FieldDesc, { kind: 'scalar' }>): string {
    const d = f.defaultValue;
    if (f.scalar === 'bool') return d ? 'true' : 'false';
    if (f.scalar === 'float32' || f.scalar === 'float64') return bitsHex(numberBits(Number(d)));
    const text = typeof d === 'bigint' ? d.toString() : String(Number(d));
    return f.enumDesc ? this.enumName(f.enumDesc, text) : text;
  }

  string(pos: number, path: string): string {
    const target = pos + this.view.getUint32(pos, true);
    const n = this.view.getUint32(target, true);
    let s: string;
    try {
      s = utf8.decode(this.buf.subarray(target + 4, target + 4 + n));
    } catch {
      throw new EncodingError('string is not valid UTF-8', { ...this.ctx, offset: target, path });
    }
    return jsonString(s);
  }

  struct(pos: number, desc: StructDesc): string {
    const parts = desc.fields.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((f) =>
      jsonString(f.name) + ':' + (f.struct ? this.struct(pos + f.offset, f.struct) : this.scalar(pos + f.offset, f.scalar!, f.enumDesc)));
    return '{' + parts.join(',') + '}';
  }

  table(pos: number, desc: TableDesc, path: string): string {
    const v = this.view;
    const vtable = pos - v.getInt32(pos, true);
    const vsize = v.getUint16(vtable, true);
    const slot = (vt: number) => (vt < vsize ? v.getUint16(vtable + vt, true) : 0);
    const parts: string[] = [];
    const newer = FIELD_MINOR[desc.name];
    for (const { key, field: f, unionType } of desc.keyOrder) {
      if (newer && (newer[f.name] ?? 0) > this.minor) continue;
      const fpath = path ? `${path}.${key}` : key;
      let text: string;
      if (f.kind === 'union') {
        const to = slot(f.typeVt);
        const type = to ? v.getUint8(pos + to) : 0;
        const member = f.members[type] ?? null;
        if (type !== 0 && (UNION_MEMBER_MINOR[f.enumDesc.name]?.[String(type)] ?? 0) > this.minor) {
          throw new VersionError('union member defined by a minor newer than the file\'s (SPEC.md section 8)',
            { ...this.ctx, path: `${fpath}_type`, expected: `a member of minor <= ${this.minor}`, got: type });
        }
        if (unionType) {
          text = type === 0 ? '"NONE"' : enumName(f.enumDesc, String(type));
        } else {
          const o = slot(f.vt);
          text = member && o ? this.table(pos + o + v.getUint32(pos + o, true), member, fpath) : 'null';
        }
      } else {
        const o = slot(f.vt);
        text = o ? this.field(pos + o, f, fpath) : this.absent(f);
      }
      parts.push(jsonString(key) + ':' + text);
    }
    return '{' + parts.join(',') + '}';
  }

  private absent(f: FieldDesc): string {
    switch (f.kind) {
      case 'scalar': return this.defaultScalar(f);
      case 'vector': return '[]';
      default: return 'null';
    }
  }

  private field(at: number, f: FieldDesc, path: string): string {
    switch (f.kind) {
      case 'scalar': return this.scalar(at, f.scalar, f.enumDesc);
      case 'struct': return this.struct(at, f.struct);
      case 'string': return this.string(at, path);
      case 'table': return this.table(at + this.view.getUint32(at, true), f.table, path);
      case 'vector': return this.vector(at + this.view.getUint32(at, true), f.elem, path);
      default: throw new Error('unreachable');
    }
  }

  private vector(pos: number, elem: ElemDesc, path: string): string {
    const n = this.view.getUint32(pos, true);
    const size = elemSize(elem);
    const parts: string[] = new Array(n);
    for (let i = 0; i < n; i++) {
      const at = pos + 4 + i * size;
      switch (elem.kind) {
        case 'scalar': parts[i] = this.scalar(at, elem.scalar, elem.enumDesc); break;
        case 'struct': parts[i] = this.struct(at, elem.struct); break;
        case 'string': parts[i] = this.string(at, `${path}[${i}]`); break;
        case 'table': parts[i] = this.table(at + this.view.getUint32(at, true), elem.table, `${path}[${i}]`); break;
      }
    }
    return '[' + parts.join(',') + ']';
  }
}

function enumName(e: EnumDesc, valueText: string): string {
  const name = e.values[valueText];
  return typeof name === 'string' ? jsonString(name) : valueText;
}

/** The whole dump: `{"package":...,"storage_crc32":[...]}` plus a newline. */
export function renderDump(packageJson: string, storageCrcs: string[]): string {
  return '{"package":' + packageJson + ',"storage_crc32":[' + storageCrcs.map((c) => jsonString(c)).join(',') + ']}\n';
}

export { SCALAR_SIZE };
