/**
 * The JSON program encoding (SPEC.md section 4) into the decoded tree.
 *
 * `JSON.parse` cannot be used: it rounds integers past 2^53, keeps the last of
 * duplicate keys, and cannot tell `1` from `1.0` (an integer field refuses the
 * latter). So a strict parser of RFC 8259 text, accepting exactly what
 * Python's json module does (no bare NaN/Infinity, no trailing commas, no raw
 * control characters in strings), keeps integers as bigint and floats as
 * numbers parsed from their text (correctly rounded, -0.0 kept), refuses
 * duplicate keys, and keeps lone surrogates from `\uD800` escapes, which the
 * string-class check then refuses (EncodingError) as Python does. An integer
 * of more than 4300 digits (what Python's int() parses) is a LimitError, any
 * other out-of-range integer an EncodingError. The document is then checked
 * against the schema descriptor as pt2format/_codecs/json.py does: enums and
 * union types by name (a name unknown to this reader is a VersionError), NaN
 * and infinities as "nan"/"inf"/"-inf", unknown keys ignored (SPEC.md 8.2).
 */
import { EnumDesc, ElemDesc, FieldDesc, ScalarKind, StructDesc, TableDesc } from './descriptor.js';
import { EncodingError, LimitError, VersionError } from './errors.js';
import { MAX_JSON_DEPTH, MAX_JSON_INT_DIGITS } from './generated/limits.js';
import { checkStringClass, stringClassOf } from './strings.js';
import { absentValue, INT_RANGE, newTable, numberBits, TTable, TValue } from './tree.js';

/** Python's default int max str digits. */
const MAX_INT_DIGITS = MAX_JSON_INT_DIGITS;
/** Containers nested deeper than this are refused before the schema walk (Python's recursion limit). */
const MAX_CONTAINER_DEPTH = MAX_JSON_DEPTH;

class JFloat { constructor(readonly value: number) {} }
type J = null | boolean | bigint | JFloat | string | J[] | Map<string, J>;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

class Parser {
  private i = 0;
  constructor(private readonly s: string) {}

  private fail(msg: string): never {
    throw new EncodingError(`malformed JSON: ${msg}`, { offset: this.i });
  }

  private ws(): void {
    const s = this.s;
    while (this.i < s.length) {
      const c = s.charCodeAt(this.i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) this.i++;
      else break;
    }
  }

  whole(): J {
    this.ws();
    const v = this.value(0);
    this.ws();
    if (this.i !== this.s.length) this.fail('extra data');
    return v;
  }

  private value(depth: number): J {
    const s = this.s;
    if (this.i >= s.length) this.fail('expecting value');
    const c = s[this.i]!;
    if (c === '{') return this.object(depth + 1);
    if (c === '[') return this.array(depth + 1);
    if (c === '"') return this.string();
    if (c === '-' || (c >= '0' && c <= '9')) return this.number();
    if (s.startsWith('true', this.i)) { this.i += 4; return true; }
    if (s.startsWith('false', this.i)) { this.i += 5; return false; }
    if (s.startsWith('null', this.i)) { this.i += 4; return null; }
    this.fail('expecting value');
  }

  private enter(depth: number): void {
    if (depth > MAX_CONTAINER_DEPTH) throw new LimitError('JSON nesting too deep', { offset: this.i, expected: `<= ${MAX_CONTAINER_DEPTH}` });
  }

  private object(depth: number): Map<string, J> {
    this.enter(depth);
    this.i++;
    const out = new Map<string, J>();
    this.ws();
    if (this.s[this.i] === '}') { this.i++; return out; }
    for (;;) {
      this.ws();
      if (this.s[this.i] !== '"') this.fail('expecting property name enclosed in double quotes');
      const k = this.string();
      this.ws();
      if (this.s[this.i] !== ':') this.fail("expecting ':' delimiter");
      this.i++;
      this.ws();
      const v = this.value(depth);
      if (out.has(k)) throw new EncodingError('duplicate key in a JSON object', { offset: this.i, expected: 'unique keys', got: JSON.stringify(k) });
      out.set(k, v);
      this.ws();
      const d = this.s[this.i];
      this.i++;
      if (d === '}') return out;
      if (d !== ',') { this.i--; this.fail("expecting ',' delimiter"); }
    }
  }

  private array(depth: number): J[] {
    this.enter(depth);
    this.i++;
    const out: J[] = [];
    this.ws();
    if (this.s[this.i] === ']') { this.i++; return out; }
    for (;;) {
      this.ws();
      out.push(this.value(depth));
      this.ws();
      const d = this.s[this.i];
      this.i++;
      if (d === ']') return out;
      if (d !== ',') { this.i--; this.fail("expecting ',' delimiter"); }
    }
  }

  private string(): string {
    const s = this.s;
    this.i++;
    let out = '';
    let start = this.i;
    for (;;) {
      if (this.i >= s.length) this.fail('unterminated string');
      const c = s.charCodeAt(this.i);
      if (c === 0x22) { out += s.slice(start, this.i); this.i++; return out; }
      if (c < 0x20) this.fail('invalid control character in string');
      if (c !== 0x5c) { this.i++; continue; }
      out += s.slice(start, this.i);
      const e = s[this.i + 1];
      this.i += 2;
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const h = s.slice(this.i, this.i + 4);
          if (!/^[0-9a-fA-F]{4}$/.test(h)) this.fail('invalid \\uXXXX escape');
          out += String.fromCharCode(parseInt(h, 16));
          this.i += 4;
          break;
        }
        default: this.i -= 2; this.fail('invalid escape');
      }
      start = this.i;
    }
  }

  private number(): bigint | JFloat {
    const s = this.s;
    const m = /-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?/y;
    m.lastIndex = this.i;
    const r = m.exec(s);
    if (!r) this.fail('expecting value');
    const text = r[0];
    this.i += text.length;
    if (r[1] === undefined && r[2] === undefined) {
      const digits = text.length - (text.startsWith('-') ? 1 : 0);
      if (digits > MAX_INT_DIGITS) {
        throw new LimitError('JSON number too large: more digits than Python parses', { offset: this.i - text.length, expected: 'integers within 64 bits', got: `${digits} digits` });
      }
      return BigInt(text);
    }
    const value = Number(text);
    // The infinities have one spelling, "inf"/"-inf" (SPEC.md section 4): 1e400 is not another.
    if (!Number.isFinite(value)) {
      throw new EncodingError('JSON number beyond the largest finite float', { offset: this.i - text.length, expected: 'a number within binary64 range', got: text });
    }
    return new JFloat(value);
  }
}

function typeName(v: J): string {
  if (v === null) return 'NoneType';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'bigint') return 'int';
  if (typeof v === 'string') return 'str';
  if (v instanceof JFloat) return 'float';
  if (Array.isArray(v)) return 'list';
  return 'dict';
}

function wrong(path: string, expected: string, v: J): EncodingError {
  return new EncodingError('wrong type', { path, expected, got: typeName(v) });
}

const NON_FINITE: Record<string, number> = { nan: NaN, inf: Infinity, '-inf': -Infinity };

/**
 * SPEC.md §4: a NaN other than the canonical quiet one is "nan:0x" + its 16 lowercase hex bits, so JSON
 * keeps NaN payloads; the bits, or null when `s` is not such a spelling (one spelling per value).
 */
function nanOfSpelling(s: string): bigint | null {
  if (!/^nan:0x[0-9a-f]{16}$/.test(s)) return null;
  const b = BigInt('0x' + s.slice(6));
  const isNan = (b & 0x7ff0000000000000n) === 0x7ff0000000000000n && (b & 0x000fffffffffffffn) !== 0n;
  return isNan && b !== 0x7ff8000000000000n ? b : null;
}

function checkInt(v: J, kind: ScalarKind, path: string): number | bigint {
  if (typeof v !== 'bigint') throw wrong(path, `integer (${kind})`, v);
  const [lo, hi] = INT_RANGE[kind]!;
  if (v < lo || v > hi) throw new EncodingError('integer out of range', { path, expected: `${kind} in [${lo}, ${hi}]`, got: v });
  return kind === 'int64' || kind === 'uint64' ? v : Number(v);
}

function enumValue(e: EnumDesc, name: string): number | undefined {
  if (!Object.prototype.hasOwnProperty.call(e.values, name)) return undefined;
  const v = e.values[name];
  return typeof v === 'number' ? v : undefined;
}

class TreeBuilder {
  constructor(private readonly maxDepth: number) {}

  scalar(v: J, kind: ScalarKind, path: string, enumDesc?: EnumDesc): TValue {
    if (kind === 'float32' || kind === 'float64') {
      if (typeof v === 'string') {
        if (Object.prototype.hasOwnProperty.call(NON_FINITE, v)) return numberBits(NON_FINITE[v]!);
        const bits = nanOfSpelling(v);
        if (bits === null) throw new EncodingError('wrong float spelling', { path, expected: '"nan", "nan:0x<16 hex digits>", "inf" or "-inf"', got: JSON.stringify(v) });
        return bits;
      }
      if (v instanceof JFloat) return numberBits(v.value);
      if (typeof v === 'bigint') {
        const x = Number(v);
        if (!Number.isFinite(x)) throw new EncodingError('integer too large for a float', { path, expected: 'float', got: v });
        return numberBits(x);
      }
      throw wrong(path, 'float', v);
    }
    if (kind === 'bool') {
      if (typeof v === 'boolean') return v;
      throw wrong(path, 'bool', v);
    }
    if (enumDesc && typeof v === 'string') {
      const x = enumValue(enumDesc, v);
      if (x === undefined) {
        throw new VersionError('enum value name unknown to this reader: defined by a newer minor (SPEC.md section 8)',
          { path, expected: `a value of ${enumDesc.name}`, got: JSON.stringify(v) });
      }
      return x;
    }
    return checkInt(v, kind, path);
  }

  private string(v: J, where: string, path: string): string {
    if (typeof v !== 'string') throw wrong(path, 'string', v);
    const [table, field] = where.split('.') as [string, string];
    const cls = stringClassOf(table, field);
    if (cls !== undefined) checkStringClass(v, cls, where, path);
    return v;
  }

  struct(v: J, desc: StructDesc, path: string): TTable {
    if (!(v instanceof Map)) throw wrong(path, `object (${desc.name})`, v);
    const o: TTable = {};
    for (const f of desc.fields) {
      const p = `${path}.${f.name}`;
      if (!v.has(f.name)) throw new EncodingError('struct field is missing', { path: p, expected: f.name, got: null });
      o[f.name] = f.struct ? this.struct(v.get(f.name)!, f.struct, p) : this.scalar(v.get(f.name)!, f.scalar!, p, f.enumDesc);
    }
    if (v.size !== desc.fields.length) {
      const known = new Set(desc.fields.map((f) => f.name));
      throw new EncodingError('unknown struct field', { path, expected: desc.fields.map((f) => f.name).join(', '), got: [...v.keys()].filter((k) => !known.has(k)).sort().join(', ') });
    }
    return o;
  }

  table(v: J, desc: TableDesc, path: string, depth: number): TTable {
    if (depth > this.maxDepth) throw new LimitError('nesting deeper than max_depth', { path, expected: `<= ${this.maxDepth}`, got: depth });
    if (!(v instanceof Map)) throw wrong(path, `object (${desc.name})`, v);
    const o = newTable(desc);
    for (const f of desc.fields) {
      const p = path ? `${path}.${f.name}` : f.name;
      if (f.kind === 'union') {
        o[f.name] = this.union(v.get(`${f.name}_type`) ?? null, v.get(f.name) ?? null, f, p, path, depth);
        continue;
      }
      const x = v.get(f.name) ?? null;
      if (x === null) {
        if (f.required) throw new EncodingError('required field is missing', { path: p, expected: f.name, got: null });
        o[f.name] = absentValue(f);
      } else {
        o[f.name] = this.field(x, f, desc.name, p, depth);
      }
    }
    // Keys this schema does not define are a newer minor's fields: ignored (SPEC.md section 8).
    return o;
  }

  private union(t: J, v: J, f: Extract<FieldDesc, { kind: 'union' }>, p: string, parent: string, depth: number): TValue {
    const tpath = parent ? `${parent}.${f.name}_type` : `${f.name}_type`;
    if (t === null) {
      if (v !== null) throw new EncodingError('union member without its _type key', { path: tpath, expected: 'member name', got: null });
      return null;
    }
    let idx: number;
    if (typeof t === 'string') {
      if (t === 'NONE') idx = 0;
      else {
        idx = f.members.findIndex((m, i) => i > 0 && m !== null && m.name === t);
        if (idx < 0) {
          throw new VersionError('union member unknown to this reader: defined by a newer minor (SPEC.md section 8)',
            { path: tpath, expected: `a member of ${f.enumDesc.name}`, got: JSON.stringify(t) });
        }
      }
    } else if (typeof t === 'bigint') {
      if (t < 0n || t > 255n) throw new EncodingError('union type index out of range', { path: tpath, expected: '0..255', got: t });
      idx = Number(t);
      if (idx >= f.members.length) {
        throw new VersionError('union member unknown to this reader: defined by a newer minor (SPEC.md section 8)',
          { path: tpath, expected: `0..${f.members.length - 1}`, got: t });
      }
    } else {
      throw wrong(tpath, 'union member name', t);
    }
    if (idx === 0) {
      if (v !== null) throw new EncodingError('union member given with type NONE', { path: p, got: typeName(v) });
      return null;
    }
    const member = f.members[idx]!;
    if (v === null) throw new EncodingError('union type without a member', { path: p, expected: member.name, got: null });
    return this.table(v, member, p, depth + 1);
  }

  private field(x: J, f: FieldDesc, table: string, p: string, depth: number): TValue {
    switch (f.kind) {
      case 'scalar': return this.scalar(x, f.scalar, p, f.enumDesc);
      case 'string': return this.string(x, `${table}.${f.name}`, p);
      case 'table': return this.table(x, f.table, p, depth + 1);
      case 'struct': return this.struct(x, f.struct, p);
      case 'vector': return this.vector(x, f.elem, `${table}.${f.name}`, p, depth);
      default: throw new Error('unreachable');
    }
  }

  private vector(v: J, elem: ElemDesc, where: string, path: string, depth: number): TValue[] {
    if (!Array.isArray(v)) throw wrong(path, 'array', v);
    switch (elem.kind) {
      case 'string':
        v.forEach((x, i) => { if (typeof x !== 'string') throw wrong(`${path}[${i}]`, 'string', x); });
        return v.map((x, i) => this.string(x, where, `${path}[${i}]`));
      case 'table': return v.map((x, i) => this.table(x, elem.table, `${path}[${i}]`, depth + 1));
      case 'struct': return v.map((x, i) => this.struct(x, elem.struct, `${path}[${i}]`));
      case 'scalar': return v.map((x, i) => this.scalar(x, elem.scalar, `${path}[${i}]`, elem.enumDesc));
    }
  }
}

/** Decodes a JSON program section into the tree; EncodingError/LimitError/VersionError on anything wrong. */
export function decodeJson(buf: Uint8Array, root: TableDesc, maxDepth: number): TTable {
  let text: string;
  try {
    text = utf8.decode(buf);
  } catch {
    throw new EncodingError('JSON text is not valid UTF-8', { expected: 'UTF-8' });
  }
  const doc = new Parser(text).whole();
  return new TreeBuilder(maxDepth).table(doc, root, '', 1);
}
