/**
 * The canonical dump (SPEC.md §6): the language-neutral JSON text of a whole file.
 *
 * Walks every field of the decoded tree (src/tree.ts, the same for all three
 * program encodings) generically with the schema descriptor: 64-bit integers
 * stay exact (bigint), floats are printed as their binary64 bit pattern (kept
 * as bits from the file, so NaN payloads survive), keys are sorted by code point and strings escaped as
 * Python's `json.dumps(..., ensure_ascii=False)` does. The text must equal the
 * Python `pt2format dump` output byte for byte. Only what the file's own minor
 * defines is rendered (generated/minors.ts, derived from schema/history/): a
 * newer minor's field is left out, its enum values are integers, its union
 * members are a VersionError, as a reader of the file's minor would do.
 */
import { ElemDesc, FieldDesc, ScalarKind, SCALAR_SIZE, StructDesc, TableDesc, EnumDesc } from './descriptor.js';
import { VersionError } from './errors.js';
import { descOf, TTable, TValue } from './tree.js';
import { ENUM_VALUE_MINOR, FIELD_MINOR, SCHEMA_VERSION, UNION_MEMBER_MINOR } from './generated/minors.js';


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

/** Renders the decoded tree (src/tree.ts) as the file's minor defines it. */
export class TreeDumper {
  constructor(private readonly ctx: { file?: string; section?: string } = {},
              private readonly minor: number = SCHEMA_VERSION[1]) {}

  private enumName(e: EnumDesc, valueText: string): string {
    return (ENUM_VALUE_MINOR[e.name]?.[valueText] ?? 0) > this.minor ? valueText : enumName(e, valueText);
  }

  scalar(v: TValue, kind: ScalarKind, enumDesc?: EnumDesc): string {
    switch (kind) {
      case 'bool': return v ? 'true' : 'false';
      case 'float32': case 'float64': return bitsHex(v as bigint);
    }
    const text = String(v);
    return enumDesc ? this.enumName(enumDesc, text) : text;
  }

  struct(o: TTable, desc: StructDesc): string {
    const parts = desc.fields.slice().sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((f) =>
      jsonString(f.name) + ':' + (f.struct ? this.struct(o[f.name] as TTable, f.struct) : this.scalar(o[f.name]!, f.scalar!, f.enumDesc)));
    return '{' + parts.join(',') + '}';
  }

  table(o: TTable, desc: TableDesc, path: string): string {
    const parts: string[] = [];
    const newer = FIELD_MINOR[desc.name];
    for (const { key, field: f, unionType } of desc.keyOrder) {
      if (newer && (newer[f.name] ?? 0) > this.minor) continue;
      const fpath = path ? `${path}.${key}` : key;
      const v = o[f.name]!;
      let text: string;
      if (f.kind === 'union') {
        const member = v === null ? null : descOf(v as TTable);
        const type = member === null ? 0 : f.members.indexOf(member);
        if (type !== 0 && (UNION_MEMBER_MINOR[f.enumDesc.name]?.[String(type)] ?? 0) > this.minor) {
          throw new VersionError('union member defined by a minor newer than the file\'s (SPEC.md section 8)',
            { ...this.ctx, path: `${fpath}_type`, expected: `a member of minor <= ${this.minor}`, got: type });
        }
        if (unionType) text = type === 0 ? '"NONE"' : enumName(f.enumDesc, String(type));
        else text = member === null ? 'null' : this.table(v as TTable, member, fpath);
      } else {
        text = this.field(v, f, fpath);
      }
      parts.push(jsonString(key) + ':' + text);
    }
    return '{' + parts.join(',') + '}';
  }

  private field(v: TValue, f: FieldDesc, path: string): string {
    if (v === null) return 'null';
    switch (f.kind) {
      case 'scalar': return this.scalar(v, f.scalar, f.enumDesc);
      case 'struct': return this.struct(v as TTable, f.struct);
      case 'string': return jsonString(v as string);
      case 'table': return this.table(v as TTable, f.table, path);
      case 'vector': return this.vector(v as TValue[], f.elem, path);
      default: throw new Error('unreachable');
    }
  }

  private vector(items: TValue[], elem: ElemDesc, path: string): string {
    const parts: string[] = new Array(items.length);
    for (let i = 0; i < items.length; i++) {
      const x = items[i]!;
      switch (elem.kind) {
        case 'scalar': parts[i] = this.scalar(x, elem.scalar, elem.enumDesc); break;
        case 'struct': parts[i] = this.struct(x as TTable, elem.struct); break;
        case 'string': parts[i] = jsonString(x as string); break;
        case 'table': parts[i] = this.table(x as TTable, elem.table, `${path}[${i}]`); break;
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
