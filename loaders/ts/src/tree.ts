/**
 * The decoded program tree: one view of a Package whatever its encoding.
 *
 * FLATBUFFERS, MSGPACK and JSON programs all decode into this tree
 * (src/fbtree.ts, src/msgpack.ts, src/json.ts), and the canonical dump, the
 * validation of SPEC.md and the tensor views all read it, so the three
 * encodings cannot be treated differently past decoding. A table is a plain
 * object keyed by schema field name holding every field the reader's schema
 * defines, absent ones filled in (scalars with their default, strings/tables
 * with null, vectors with []); its descriptor is under the DESC symbol. Values:
 *
 * - 8- to 32-bit integers and enums: number; 64-bit integers: bigint (exact);
 * - floats (32 and 64 bit): bigint, the IEEE-754 binary64 bit pattern, so NaN
 *   payloads and -0.0 survive every encoding (float32 widened as C does);
 * - bools: boolean; strings: string (already checked against their class);
 * - a union field: its member table (whose DESC names the member) or null.
 */
import { FieldDesc, TableDesc } from './descriptor.js';

export const DESC = Symbol('pt2format.table');

/** A decoded table or struct: field name -> value. */
export interface TTable {
  [DESC]?: TableDesc;
  [field: string]: TValue;
}

export type TValue = number | bigint | boolean | string | null | TTable | TValue[];

const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** The binary64 bit pattern of a JS number. */
export function numberBits(x: number): bigint {
  f64[0] = x;
  return u64[0]!;
}

/** The JS number of a binary64 bit pattern (NaN payloads are not kept in numbers: use the bits). */
export function bitsNumber(b: bigint): number {
  u64[0] = b;
  return f64[0]!;
}

const ABSENT_SCALAR = new WeakMap<FieldDesc, TValue>();

/** The value an absent field takes in the tree (a scalar's default is computed once per field). */
export function absentValue(f: FieldDesc): TValue {
  switch (f.kind) {
    case 'scalar': {
      let v = ABSENT_SCALAR.get(f);
      if (v === undefined) ABSENT_SCALAR.set(f, (v = scalarDefault(f)));
      return v;
    }
    case 'vector': return [];
    default: return null;
  }
}

function scalarDefault(f: FieldDesc): TValue {
  switch (f.kind) {
    case 'scalar': {
      const d = f.defaultValue;
      if (f.scalar === 'bool') return Boolean(d);
      if (f.scalar === 'float32' || f.scalar === 'float64') return numberBits(Number(d));
      if (f.scalar === 'int64' || f.scalar === 'uint64') return BigInt(d as number | bigint);
      return Number(d);
    }
    case 'vector': return [];
    default: return null;
  }
}

const PROTOS = new WeakMap<TableDesc, object>();

/** A fresh table object of `desc` (its descriptor inherited from a per-table prototype: cheap to create). */
export function newTable(desc: TableDesc): TTable {
  let proto = PROTOS.get(desc);
  if (!proto) {
    proto = Object.create(Object.prototype, { [DESC]: { value: desc, enumerable: false } }) as object;
    PROTOS.set(desc, proto);
  }
  return Object.create(proto) as TTable;
}

export function descOf(o: TTable): TableDesc {
  return o[DESC]!;
}

/** Integer ranges of the scalar kinds, for the MessagePack and JSON decoders. */
export const INT_RANGE: Record<string, [bigint, bigint]> = {
  int8: [-(1n << 7n), (1n << 7n) - 1n], uint8: [0n, (1n << 8n) - 1n],
  int16: [-(1n << 15n), (1n << 15n) - 1n], uint16: [0n, (1n << 16n) - 1n],
  int32: [-(1n << 31n), (1n << 31n) - 1n], uint32: [0n, (1n << 32n) - 1n],
  int64: [-(1n << 63n), (1n << 63n) - 1n], uint64: [0n, (1n << 64n) - 1n],
};
