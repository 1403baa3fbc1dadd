/**
 * The schema descriptor: every table's fields with vtable offsets, widths and defaults.
 *
 * Nothing here is a hand-kept copy of the schema. Field names, kinds and
 * references come from the generated JSON Schema (embedded at build time in
 * src/_build/schema.ts); vtable offsets, scalar widths, struct layouts and
 * defaults come from the flatc-generated TypeScript classes themselves: each
 * accessor is called once on a recording stand-in for flatbuffers.ByteBuffer,
 * which reveals exactly which slot it reads, how, and what it returns when the
 * field is absent. Any shape the probe does not recognise throws at startup,
 * so a schema change that needs new reader code cannot pass silently.
 */
import * as generated from './_build/classes.js';
import { JSON_SCHEMA } from './_build/schema.js';
import { alternatives, enumNames, Json, refOf } from './shapes.js';

export type ScalarKind =
  | 'bool' | 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64';

export const SCALAR_SIZE: Record<ScalarKind, number> = {
  bool: 1, int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, float32: 4, float64: 8,
};

/** A TypeScript enum object: name -> value and value -> name. */
export type EnumObject = Record<string | number, string | number>;

export interface EnumDesc { name: string; values: EnumObject }

export interface StructDesc {
  kind: 'struct';
  name: string;
  size: number;
  align: number;
  fields: StructField[];
}

export interface StructField {
  name: string;
  offset: number;
  scalar?: ScalarKind;
  enumDesc?: EnumDesc;
  struct?: StructDesc;
}

export interface TableDesc {
  kind: 'table';
  name: string;
  /** The generated class, e.g. `Package`. */
  cls: new () => unknown;
  fields: FieldDesc[];
  /** Dump keys in code point order, each with its field and role. */
  keyOrder: { key: string; field: FieldDesc; unionType: boolean }[];
}

export type ElemDesc =
  | { kind: 'scalar'; scalar: ScalarKind; enumDesc?: EnumDesc }
  | { kind: 'string' }
  | { kind: 'table'; table: TableDesc }
  | { kind: 'struct'; struct: StructDesc };

export type FieldDesc = { name: string; vt: number; required: boolean } & (
  | { kind: 'scalar'; scalar: ScalarKind; enumDesc?: EnumDesc; defaultValue: number | bigint | boolean }
  | { kind: 'string' }
  | { kind: 'table'; table: TableDesc }
  | { kind: 'struct'; struct: StructDesc }
  | { kind: 'vector'; elem: ElemDesc }
  | { kind: 'union'; typeName: string; typeVt: number; enumDesc: EnumDesc; members: (TableDesc | null)[] }
);

export interface SchemaDesc {
  root: TableDesc;
  tables: Map<string, TableDesc>;
  structs: Map<string, StructDesc>;
}

// ---------------------------------------------------------------------------
// The recording stand-in for flatbuffers.ByteBuffer
// ---------------------------------------------------------------------------

const BASE = 1000; // bb_pos of the probed object
const FIELD = 40; // what __offset answers when the probe says "present"
const VEC = 5000; // where __vector says vector data starts
const IND = 9000; // where __indirect / __union point

type Event = [op: string, pos: number, extra?: number | string];

class ProbeBuffer {
  events: Event[] = [];
  present = true;
  __offset(pos: number, vt: number): number { this.events.push(['offset', pos, vt]); return this.present ? FIELD : 0; }
  __indirect(pos: number): number { this.events.push(['indirect', pos]); return IND; }
  __vector(pos: number): number { this.events.push(['vector', pos]); return VEC; }
  __vector_len(pos: number): number { this.events.push(['vector_len', pos]); return 0; }
  __string(pos: number): string { this.events.push(['string', pos]); return ''; }
  __union(obj: { bb_pos: number; bb: unknown }, pos: number): unknown {
    this.events.push(['union', pos]); obj.bb_pos = IND; obj.bb = this; return obj;
  }
  bytes(): Uint8Array { return new Uint8Array(0); }
  private read(kind: ScalarKind, pos: number): number | bigint {
    this.events.push(['read', pos, kind]);
    return kind === 'int64' || kind === 'uint64' ? BigInt(0) : 0;
  }
  readInt8(p: number) { return this.read('int8', p); }
  readUint8(p: number) { return this.read('uint8', p); }
  readInt16(p: number) { return this.read('int16', p); }
  readUint16(p: number) { return this.read('uint16', p); }
  readInt32(p: number) { return this.read('int32', p); }
  readUint32(p: number) { return this.read('uint32', p); }
  readInt64(p: number) { return this.read('int64', p); }
  readUint64(p: number) { return this.read('uint64', p); }
  readFloat32(p: number) { return this.read('float32', p); }
  readFloat64(p: number) { return this.read('float64', p); }
}

class DescriptorError extends Error {}

function fail(where: string, what: string): never {
  throw new DescriptorError(`pt2format TS reader: cannot derive the schema descriptor at ${where}: ${what}`);
}

/** flatc's snake_case -> lowerCamelCase accessor naming. */
function camel(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const c = name[i]!;
    if (i === 0) out += c === '_' ? c : c.toLowerCase();
    else if (c === '_' && i + 1 < name.length) out += name[++i]!.toUpperCase();
    else out += c;
  }
  return out;
}

const exportsByName = generated as unknown as Record<string, unknown>;

// ---------------------------------------------------------------------------
// Building the descriptor
// ---------------------------------------------------------------------------

class Builder {
  private defs: Record<string, Json>;
  tables = new Map<string, TableDesc>();
  structs = new Map<string, StructDesc>();
  private enums = new Map<string, EnumDesc>();

  constructor(schema: Json) {
    this.defs = (schema['definitions'] ?? fail('schema', 'no definitions')) as Record<string, Json>;
  }

  /** The generated export for a JSON Schema definition key such as `pt2format_Tensor`. */
  exportFor(defKey: string): { name: string; value: unknown } {
    let best: string | null = null;
    for (const name of Object.keys(exportsByName)) {
      if ((defKey === name || defKey.endsWith('_' + name)) && (best === null || name.length > best.length)) best = name;
    }
    if (best === null) fail(defKey, 'no generated TypeScript export of that name');
    return { name: best, value: exportsByName[best] };
  }

  defKey(ref: unknown, where: string): string {
    if (typeof ref !== 'string' || !ref.startsWith('#/definitions/')) fail(where, `unsupported $ref ${String(ref)}`);
    const key = ref.slice('#/definitions/'.length);
    if (!(key in this.defs)) fail(where, `unknown definition ${key}`);
    return key;
  }

  isEnumDef(key: string): boolean { return enumNames(this.defs[key]!) !== null; }

  /** The definition key a property (or vector item) refers to, or null when it refers to none. */
  refKey(p: Json, where: string): string | null {
    const ref = refOf(p);
    return ref === null ? null : this.defKey(ref, where);
  }

  /** Like refKey, for properties that must refer to a definition. */
  needRef(p: Json, where: string): string {
    return this.refKey(p, where) ?? fail(where, 'expected a $ref to a definition');
  }

  /** The enum a scalar (or scalar vector element) is typed with, if any; a reference to a non-enum fails. */
  scalarEnum(p: Json, where: string): EnumDesc | undefined {
    const k = this.refKey(p, where);
    if (k === null) {
      if (enumNames(p) !== null) fail(where, 'enum inlined into the property: no generated enum to name it');
      return undefined;
    }
    if (!this.isEnumDef(k)) fail(where, `scalar read for a reference to ${k}, which is not an enum`);
    return this.enumDesc(k);
  }

  /** A union property: anyOf/oneOf whose every branch refers to a table definition (not floats' number|nan). */
  isUnionProp(p: Json): boolean {
    const alts = alternatives(p);
    if (!alts || alts.length === 0) return false;
    return alts.every((a) => {
      const ref = refOf(a);
      if (ref === null || !ref.startsWith('#/definitions/')) return false;
      const def = this.defs[ref.slice('#/definitions/'.length)];
      return !!def && def['type'] === 'object';
    });
  }

  /**
   * Union members by type index (index 0, NONE, is null). The index of each
   * member comes from the generated code, not from the JSON Schema's branch
   * order: flatc's `unionTo<Union>(type, accessor)` names the class it builds
   * for each value of the generated union enum.
   */
  unionMembers(enumDesc: EnumDesc, tables: TableDesc[], where: string): (TableDesc | null)[] {
    const unionTo = exportsByName[`unionTo${enumDesc.name}`];
    if (typeof unionTo !== 'function') fail(where, `no generated unionTo${enumDesc.name}()`);
    const byClass = new Map<unknown, TableDesc>(tables.map((t) => [t.cls, t]));
    const members: (TableDesc | null)[] = [];
    const indices = Object.values(enumDesc.values).filter((v): v is number => typeof v === 'number');
    const max = Math.max(0, ...indices);
    if (max > 255) fail(where, `union ${enumDesc.name} has a type index above 255`);
    const seen = new Set<TableDesc>();
    for (let i = 0; i <= max; i++) {
      let built: unknown = null;
      (unionTo as (t: number, a: (o: unknown) => unknown) => unknown)(i, (o) => { built = o; return o; });
      const cls = built === null ? null : (built as { constructor: unknown }).constructor;
      if (i === 0) {
        if (cls !== null) fail(where, `union ${enumDesc.name}: type 0 is not NONE`);
        members.push(null);
        continue;
      }
      const t = cls === null ? null : byClass.get(cls) ?? fail(where, `union ${enumDesc.name} member ${i} is not listed in the JSON Schema`);
      // The dump names the type by its table (as Python's does), so the enum name must be that table's.
      if (t && enumDesc.values[i] !== t.name) fail(where, `union ${enumDesc.name} type ${i} is named ${String(enumDesc.values[i])}, not ${t.name}`);
      if (t) seen.add(t);
      members.push(t);
    }
    if (seen.size !== tables.length) fail(where, `union ${enumDesc.name}: the JSON Schema lists members the generated code does not build`);
    return members;
  }

  enumDesc(key: string): EnumDesc {
    let e = this.enums.get(key);
    if (!e) {
      const exp = this.exportFor(key);
      const values = exp.value as EnumObject;
      if (typeof values !== 'object' || values === null) fail(key, 'generated enum is not an object');
      const names = enumNames(this.defs[key]!) ?? fail(key, 'definition is not an enum (no list of names)');
      for (const n of names) if (typeof values[n] !== 'number') fail(key, `enum value ${n} missing from generated code`);
      e = { name: exp.name, values };
      this.enums.set(key, e);
    }
    return e;
  }

  table(key: string): TableDesc {
    const have = this.tables.get(key);
    if (have) return have;
    const exp = this.exportFor(key);
    const cls = exp.value as (new () => Record<string, unknown>) & { sizeOf?: unknown };
    if (typeof cls !== 'function' || typeof cls.sizeOf === 'function') fail(key, 'expected a generated table class');
    const desc: TableDesc = { kind: 'table', name: exp.name, cls, fields: [], keyOrder: [] };
    this.tables.set(key, desc); // before recursing: tables may refer to themselves
    const def = this.defs[key]!;
    const props = (def['properties'] ?? {}) as Record<string, Json>;
    const required = new Set((def['required'] ?? []) as string[]);
    const unionTypeProps = new Set<string>();
    for (const [pname, p] of Object.entries(props)) {
      if (this.isUnionProp(p)) {
        const tname = `${pname}_type`;
        if (!(tname in props)) fail(`${key}.${pname}`, 'union without a _type property');
        unionTypeProps.add(tname);
      }
    }
    for (const [pname, p] of Object.entries(props)) {
      if (unionTypeProps.has(pname)) continue;
      const where = `${exp.name}.${pname}`;
      const field = this.probeTableField(cls, where, pname, p, props, required.has(pname));
      desc.fields.push(field);
    }
    for (const f of desc.fields) {
      if (f.kind === 'union') {
        desc.keyOrder.push({ key: f.typeName, field: f, unionType: true });
      }
      desc.keyOrder.push({ key: f.name, field: f, unionType: false });
    }
    desc.keyOrder.sort((a, b) => compareCodePoints(a.key, b.key));
    return desc;
  }

  struct(key: string): StructDesc {
    const have = this.structs.get(key);
    if (have) return have;
    const exp = this.exportFor(key);
    const cls = exp.value as (new () => Record<string, unknown>) & { sizeOf?: () => number };
    if (typeof cls !== 'function' || typeof cls.sizeOf !== 'function') fail(key, 'expected a generated struct class');
    const desc: StructDesc = { kind: 'struct', name: exp.name, size: cls.sizeOf(), align: 1, fields: [] };
    const props = (this.defs[key]!['properties'] ?? {}) as Record<string, Json>;
    for (const [pname, p] of Object.entries(props)) {
      const where = `${exp.name}.${pname}`;
      const { inst, bb, method } = instance(cls, pname, where);
      const r = method.call(inst) as { bb_pos?: number; constructor?: unknown } | undefined;
      const ev = bb.events;
      if (ev.length === 1 && ev[0]![0] === 'read') {
        const scalar = ev[0]![2] as ScalarKind;
        const f: StructField = { name: pname, offset: ev[0]![1] - BASE, scalar: fixBool(scalar, r) };
        const enumDesc = this.scalarEnum(p, where);
        if (enumDesc) f.enumDesc = enumDesc;
        desc.fields.push(f);
        desc.align = Math.max(desc.align, SCALAR_SIZE[scalar]);
      } else if (ev.length === 0 && r && typeof r.bb_pos === 'number' && refOf(p) !== null) {
        const sub = this.struct(this.needRef(p, where));
        desc.fields.push({ name: pname, offset: r.bb_pos - BASE, struct: sub });
        desc.align = Math.max(desc.align, sub.align);
      } else {
        fail(where, `unrecognised struct accessor (events ${JSON.stringify(ev)})`);
      }
    }
    for (const f of desc.fields) {
      const size = f.scalar ? SCALAR_SIZE[f.scalar] : f.struct!.size;
      if (f.offset < 0 || f.offset + size > desc.size) fail(`${desc.name}.${f.name}`, 'field outside the struct');
    }
    this.structs.set(key, desc);
    return desc;
  }

  private probeTableField(cls: new () => Record<string, unknown>, where: string, pname: string, p: Json,
    props: Record<string, Json>, required: boolean): FieldDesc {
    const isArray = p['type'] === 'array';
    const isUnion = this.isUnionProp(p);
    const { inst, bb, method } = instance(cls, pname, where);
    const r = method.call(inst, isArray ? 1 : isUnion ? {} : undefined) as { bb_pos?: number; constructor?: unknown } | null;
    const ev = bb.events;
    const first = ev[0];
    if (!first || first[0] !== 'offset' || first[1] !== BASE) fail(where, 'accessor does not start with __offset');
    const vt = first[2] as number;
    if (vt < 4 || vt % 2) fail(where, `odd vtable offset ${vt}`);
    const base = { name: pname, vt, required };
    const rest = ev.slice(1);
    const at = BASE + FIELD;

    if (isUnion) {
      if (rest.length !== 1 || rest[0]![0] !== 'union' || rest[0]![1] !== at) fail(where, 'unrecognised union accessor');
      const typeName = `${pname}_type`;
      const tp = props[typeName]!;
      const tkey = this.needRef(tp, `${where}_type`);
      const enumDesc = this.enumDesc(tkey);
      const t = instance(cls, typeName, where);
      t.method.call(t.inst);
      const tev = t.bb.events;
      if (tev.length !== 2 || tev[0]![0] !== 'offset' || tev[1]![0] !== 'read' || tev[1]![2] !== 'uint8') fail(where, 'unrecognised union type accessor');
      const tables = alternatives(p)!.map((m) => this.table(this.needRef(m, where)));
      const members = this.unionMembers(enumDesc, tables, where);
      return { ...base, kind: 'union', typeName, typeVt: tev[0]![2] as number, enumDesc, members };
    }
    if (isArray) {
      if (rest[0]?.[0] !== 'vector' || rest[0][1] !== at) fail(where, 'unrecognised vector accessor');
      const items = p['items'] as Json;
      const e = rest.slice(1);
      let elem: ElemDesc;
      if (e.length === 1 && e[0]![0] === 'read') {
        const scalar = fixBool(e[0]![2] as ScalarKind, r);
        if (e[0]![1] !== VEC + SCALAR_SIZE[scalar]) fail(where, 'vector element stride is not the scalar size');
        elem = { kind: 'scalar', scalar };
        const enumDesc = this.scalarEnum(items, `${where}[]`);
        if (enumDesc) elem.enumDesc = enumDesc;
      } else if (e.length === 1 && e[0]![0] === 'string' && e[0]![1] === VEC + 4) {
        elem = { kind: 'string' };
      } else if (e.length === 1 && e[0]![0] === 'indirect' && e[0]![1] === VEC + 4) {
        elem = { kind: 'table', table: this.table(this.needRef(items, where)) };
      } else if (e.length === 0 && r && typeof r.bb_pos === 'number') {
        const struct = this.struct(this.needRef(items, where));
        if (r.bb_pos !== VEC + struct.size) fail(where, 'struct vector stride is not the struct size');
        elem = { kind: 'struct', struct };
      } else {
        fail(where, `unrecognised vector element access (events ${JSON.stringify(e)})`);
      }
      return { ...base, kind: 'vector', elem };
    }
    if (rest.length === 1 && rest[0]![0] === 'read' && rest[0]![1] === at) {
      const scalar = fixBool(rest[0]![2] as ScalarKind, r);
      bb.present = false;
      bb.events = [];
      const dflt = method.call(inst) as number | bigint | boolean;
      const enumDesc = this.scalarEnum(p, where);
      return { ...base, kind: 'scalar', scalar, enumDesc, defaultValue: dflt };
    }
    if (rest.length === 1 && rest[0]![0] === 'string' && rest[0]![1] === at) return { ...base, kind: 'string' };
    if (rest.length === 1 && rest[0]![0] === 'indirect' && rest[0]![1] === at) {
      return { ...base, kind: 'table', table: this.table(this.needRef(p, where)) };
    }
    if (rest.length === 0 && r && r.bb_pos === at) {
      return { ...base, kind: 'struct', struct: this.struct(this.needRef(p, where)) };
    }
    return fail(where, `unrecognised accessor (events ${JSON.stringify(ev)})`);
  }
}

/** A bool is read with readInt8 and returned as a boolean. */
function fixBool(kind: ScalarKind, result: unknown): ScalarKind {
  return typeof result === 'boolean' ? 'bool' : kind;
}

function instance(cls: new () => Record<string, unknown>, pname: string, where: string) {
  const inst = new cls();
  const bb = new ProbeBuffer();
  inst['bb'] = bb;
  inst['bb_pos'] = BASE;
  const name = camel(pname);
  const method = (inst[name] ?? inst[name + '_']) as ((...a: unknown[]) => unknown) | undefined;
  if (typeof method !== 'function') fail(where, `no generated accessor ${name}()`);
  return { inst, bb, method };
}

/** Orders strings by Unicode code point, as Python's sort does. */
export function compareCodePoints(a: string, b: string): number {
  const ia = a[Symbol.iterator]();
  const ib = b[Symbol.iterator]();
  for (;;) {
    const x = ia.next();
    const y = ib.next();
    if (x.done || y.done) return x.done ? (y.done ? 0 : -1) : 1;
    const cx = x.value.codePointAt(0)!;
    const cy = y.value.codePointAt(0)!;
    if (cx !== cy) return cx - cy;
  }
}

/**
 * Derives the descriptor from a JSON Schema of the program tree and the
 * generated classes. The reader uses the embedded generated schema
 * (schemaDescriptor); tests pass reshaped copies to show the derivation does
 * not depend on one post-processing of it.
 */
export function deriveDescriptor(schema: unknown): SchemaDesc {
  if (typeof schema !== 'object' || schema === null) fail('schema', 'not a JSON object');
  const b = new Builder(schema as Json);
  const rootKey = b.defKey((schema as Json)['$ref'], 'root');
  const root = b.table(rootKey);
  // Derive every definition, also those the root does not reach.
  for (const [key, def] of Object.entries(((schema as Json)['definitions'] ?? {}) as Record<string, Json>)) {
    if (def['type'] !== 'object') continue;
    const cls = b.exportFor(key).value as { sizeOf?: unknown };
    if (typeof cls.sizeOf === 'function') b.struct(key); else b.table(key);
  }
  return { root, tables: b.tables, structs: b.structs };
}

let cached: SchemaDesc | null = null;

/** The descriptor of the schema this reader was built with (derived once). */
export function schemaDescriptor(): SchemaDesc {
  if (!cached) cached = deriveDescriptor(JSON_SCHEMA);
  return cached;
}

/** The file identifier of the root type, from the generated `bufferHasIdentifier`. */
export function rootIdentifier(desc: SchemaDesc = schemaDescriptor()): string {
  const root = desc.root.cls as unknown as { bufferHasIdentifier?: (bb: unknown) => boolean };
  if (typeof root.bufferHasIdentifier !== 'function') fail('root', 'no bufferHasIdentifier in generated code');
  let seen = '';
  root.bufferHasIdentifier({ __has_identifier: (id: string) => { seen = id; return true; } });
  if (seen.length !== 4) fail('root', 'generated file identifier is not 4 characters');
  return seen;
}

/** A JSON-friendly view of the descriptor, for tests that cross-check it against other generators. */
export function describeSchema(d: SchemaDesc = schemaDescriptor()): unknown {
  const elem = (e: ElemDesc) => e.kind === 'scalar' ? { kind: 'scalar', scalar: e.scalar, enum: e.enumDesc?.name ?? null }
    : e.kind === 'string' ? { kind: 'string' } : e.kind === 'table' ? { kind: 'table', ref: e.table.name } : { kind: 'struct', ref: e.struct.name };
  const tables: Record<string, unknown> = {};
  for (const t of d.tables.values()) {
    tables[t.name] = t.fields.map((f) => {
      const base = { name: f.name, id: (f.vt - 4) / 2, required: f.required };
      switch (f.kind) {
        case 'scalar': return { ...base, kind: 'scalar', scalar: f.scalar, enum: f.enumDesc?.name ?? null,
          default: typeof f.defaultValue === 'bigint' ? f.defaultValue.toString() : f.defaultValue };
        case 'string': return { ...base, kind: 'string' };
        case 'table': return { ...base, kind: 'table', ref: f.table.name };
        case 'struct': return { ...base, kind: 'struct', ref: f.struct.name };
        case 'vector': return { ...base, kind: 'vector', element: elem(f.elem) };
        case 'union': return { ...base, kind: 'union', type_id: (f.typeVt - 4) / 2, enum: f.enumDesc.name,
          members: f.members.slice(1).map((m) => m && m.name) };
      }
    });
  }
  const structs: Record<string, unknown> = {};
  for (const s of d.structs.values()) {
    structs[s.name] = { size: s.size, align: s.align,
      fields: s.fields.map((f) => ({ name: f.name, offset: f.offset, scalar: f.scalar ?? null, ref: f.struct?.name ?? null, enum: f.enumDesc?.name ?? null })) };
  }
  return { root: d.root.name, identifier: rootIdentifier(d), tables, structs };
}
