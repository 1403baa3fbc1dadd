/**
 * Bounded evaluation of a program's sym_exprs pool (SPEC.md 11.6), as pt2format/_symeval.py.
 *
 * The reader runs it at validation to refuse, with the same LimitError as the
 * Python and C++ readers, a pool that breaks the bounds: every exact value
 * (integers, rational numerators and denominators) within 64 bits, the
 * structural degree at most 64, expanded size at most 2^12, at most 2^22
 * evaluation steps. Values follow
 * the Python reference: bool, exact integers (bigint) and rationals, and
 * IEEE-754 doubles; a node depending on a symbol without a hint is UNKNOWN, a
 * domain error (division by zero, ...) is a Failure carried to its users (not
 * an error of the file). Float functions use JavaScript's Math, whose last
 * bit may differ from the C library's; that can only change a float value,
 * never whether an exact value overflows.
 */
import { SymExprKind as K, SymOp as O } from './_build/classes.js';
import { LimitError } from './errors.js';
import * as limits from './generated/limits.js';
import { bitsNumber, TTable, TValue } from './tree.js';

const INT64_MIN = -(1n << 63n);
const INT64_MAX = (1n << 63n) - 1n;
export const MAX_SYM_DEGREE = limits.MAX_SYM_DEGREE;
export const MAX_SYM_EVAL_STEPS = limits.MAX_SYM_EVAL_STEPS;
/** Largest expanded size of an expression: its node count as a tree, a shared operand counted at each use. */
export const MAX_SYM_EXPANDED_SIZE = limits.MAX_SYM_EXPANDED_SIZE;
/** The file's budget (SPEC.md 11.6): every pool node and every use of one may be this large for free ... */
export const SYM_FREE_SIZE = limits.SYM_FREE_SIZE;
/** ... and the excess over SYM_FREE_SIZE, summed over every node and use of the file, is at most this. */
export const MAX_SYM_FILE_EXCESS = limits.MAX_SYM_FILE_EXCESS;

/**
 * The expanded size one file spends beyond SYM_FREE_SIZE per pool node and per use (SPEC.md 11.6): code
 * outside the readers builds each node it reaches and walks each use as a tree, so bounding the sum keeps
 * that work linear in the file.
 */
export class SymBudget {
  spent = 0;
  constructor(readonly limit: number = MAX_SYM_FILE_EXCESS) {}

  /** Counts one node or use of expanded size `size`; a LimitError naming `path` when the budget is spent. */
  charge(size: number, path: string): void {
    if (size <= SYM_FREE_SIZE) return;
    this.spent += size - SYM_FREE_SIZE;
    if (this.spent > this.limit) {
      throw new LimitError('symbolic expressions of the file are too large in total', {
        path, expected: `<= ${this.limit} of expanded size beyond ${SYM_FREE_SIZE} per pool node and use`, got: `> ${this.limit}`,
      });
    }
  }
}

/** Expanded size of every node of a validated pool (operands earlier), each at most the bound. */
export function expandedSizes(exprs: readonly TTable[]): number[] {
  const size: number[] = new Array(exprs.length).fill(1);
  exprs.forEach((e, i) => {
    if (Number(e['kind']) !== K.APPLY) return;
    let t = 1;
    for (const k of ((e['args'] ?? []) as TValue[]).map((x) => Number(x as number))) t += k < i ? size[k]! : 1;
    size[i] = t;
  });
  return size;
}

export const UNKNOWN = Symbol('UNKNOWN');
export class Failure { constructor(readonly index: number, readonly reason: string) {} }
/** An exact rational n/d, d > 1, in lowest terms. */
export class Frac { constructor(readonly n: bigint, readonly d: bigint) {} }
export type SymValue = boolean | bigint | Frac | number | typeof UNKNOWN | Failure;
type V = boolean | bigint | Frac | number;

class Fail extends Error {}
class Overflow extends Error {}

const abs = (x: bigint) => (x < 0n ? -x : x);
function gcd(a: bigint, b: bigint): bigint { a = abs(a); b = abs(b); while (b) [a, b] = [b, a % b]; return a; }

/** n/d normalised: a bigint when d divides n. */
function frac(n: bigint, d: bigint): bigint | Frac {
  if (d === 0n) throw new Fail('division by zero');
  if (d < 0n) { n = -n; d = -d; }
  const g = gcd(n, d);
  if (g > 1n) { n /= g; d /= g; }
  return d === 1n ? n : new Frac(n, d);
}
const nOf = (x: bigint | Frac) => (typeof x === 'bigint' ? x : x.n);
const dOf = (x: bigint | Frac) => (typeof x === 'bigint' ? 1n : x.d);
const fAdd = (a: bigint | Frac, b: bigint | Frac) => frac(nOf(a) * dOf(b) + nOf(b) * dOf(a), dOf(a) * dOf(b));
const fSub = (a: bigint | Frac, b: bigint | Frac) => frac(nOf(a) * dOf(b) - nOf(b) * dOf(a), dOf(a) * dOf(b));
const fMul = (a: bigint | Frac, b: bigint | Frac) => frac(nOf(a) * nOf(b), dOf(a) * dOf(b));
/** floor(n / d) for d > 0. */
function floorDiv(n: bigint, d: bigint): bigint {
  const q = n / d;
  return (n % d !== 0n && (n < 0n) !== (d < 0n)) ? q - 1n : q;
}
const fFloor = (x: bigint | Frac) => (typeof x === 'bigint' ? x : floorDiv(x.n, x.d));

function fit<T extends bigint | Frac>(v: T): T {
  if (typeof v === 'bigint') {
    if (v < INT64_MIN || v > INT64_MAX) throw new Overflow();
  } else if (v.n < INT64_MIN || v.n > INT64_MAX || v.d > INT64_MAX) {
    throw new Overflow();
  }
  return v;
}

const isExact = (v: V): v is bigint | Frac => typeof v === 'bigint' || v instanceof Frac;
function num(v: V, w: string): V { if (typeof v === 'boolean') throw new Fail(`${w}: boolean operand where a number is needed`); return v; }
function int(v: V, w: string): bigint { if (typeof v !== 'bigint') throw new Fail(`${w}: integer operand expected`); return v; }
function bool(v: V, w: string): boolean { if (typeof v !== 'boolean') throw new Fail(`${w}: boolean operand expected`); return v; }
function arity(a: V[], lo: number, hi: number, w: string): void { if (a.length < lo || a.length > hi) throw new Fail(`${w}: wrong number of arguments (${a.length})`); }
function toFloat(v: V): number {
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'bigint') return Number(v);
  if (v instanceof Frac) return Number(v.n) / Number(v.d);
  return v;
}
const cmpKey = (v: V): V => (typeof v === 'boolean' ? (v ? 1n : 0n) : v);

/** The exact rational of a finite double. */
function floatExact(x: number): bigint | Frac {
  if (Number.isInteger(x)) return BigInt(x);
  let d = 1n;
  let m = x;
  while (!Number.isInteger(m)) { m *= 2; d *= 2n; }
  return frac(BigInt(m), d);
}

/** Python's comparison of numbers (ints, rationals and floats compared exactly): -1, 0, 1 or NaN. */
function compare(a: V, b: V): number {
  a = cmpKey(a); b = cmpKey(b);
  if (typeof a === 'number' || typeof b === 'number') {
    const x = toFloat(a), y = toFloat(b);
    if (Number.isNaN(x) || Number.isNaN(y)) return NaN;
    if (!Number.isFinite(x) || !Number.isFinite(y)) return x < y ? -1 : x > y ? 1 : 0;
    a = typeof a === 'number' ? floatExact(a) : a;
    b = typeof b === 'number' ? floatExact(b) : b;
  }
  const l = nOf(a as bigint | Frac) * dOf(b as bigint | Frac), r = nOf(b as bigint | Frac) * dOf(a as bigint | Frac);
  return l < r ? -1 : l > r ? 1 : 0;
}

function powerExact(base: bigint | Frac, e: bigint, w: string): bigint | Frac {
  if (e < 0n && nOf(base) === 0n) throw new Fail(`${w}: zero to a negative power`);
  if (abs(e) > 64n && !(dOf(base) === 1n && abs(nOf(base)) <= 1n)) throw new Overflow();
  if (abs(e) > 64n) { // base is -1, 0 or 1
    const b = nOf(base);
    return b === -1n ? (e % 2n === 0n ? 1n : -1n) : b;
  }
  const k = abs(e);
  const n = nOf(base) ** k, d = dOf(base) ** k;
  return fit(e < 0n ? frac(d, n) : frac(n, d));
}

function exactRoot(v: bigint, q: bigint): bigint {
  if (v < 0n || q <= 0n) return -1n;
  if (v < 2n || q === 1n) return v;
  if (q > 63n) return -1n;
  const r = BigInt(Math.round(Number(v) ** (1 / Number(q))));
  for (let c = r > 0n ? r - 1n : 0n; c < r + 2n; c++) if (c ** q === v) return c;
  return -1n;
}

/** Python's math.pow: ValueError -> Fail; OverflowError -> the caller's `overflow` value. */
function mathPow(x: number, y: number, w: string, overflow: () => number): number {
  if (x === 1 || y === 0) return 1;
  if (Number.isNaN(x) || Number.isNaN(y)) return NaN;
  if (x === -1 && !Number.isFinite(y)) return 1;
  if (Number.isFinite(x) && x < 0 && Number.isFinite(y) && !Number.isInteger(y)) throw new Fail(`${w}: math domain error`);
  if (x === 0 && y < 0) throw new Fail(`${w}: math domain error`);
  const r = x ** y;
  if (!Number.isFinite(r) && Number.isFinite(x) && Number.isFinite(y)) return overflow();
  return r;
}

function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const diff = x - f;
  if (diff > 0.5) return f + 1;
  if (diff < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}

function fracRound(x: Frac, mode: 'trunc' | 'floor' | 'ceil' | 'round'): bigint {
  const fl = floorDiv(x.n, x.d);
  switch (mode) {
    case 'floor': return fl;
    case 'ceil': return fl + 1n;
    case 'trunc': return x.n < 0n ? fl + 1n : fl;
    case 'round': {
      const twice = 2n * (x.n - fl * x.d); // 2 * fractional part * d
      if (twice > x.d) return fl + 1n;
      if (twice < x.d) return fl;
      return fl % 2n === 0n ? fl : fl + 1n;
    }
  }
}

function floatDivmod(x: number, y: number): [number, number] {
  let mod = x % y;
  let div = (x - mod) / y;
  if (mod) {
    if ((y < 0) !== (mod < 0)) { mod += y; div -= 1; }
  } else {
    mod = Math.sign(y) < 0 || Object.is(y, -0) ? -0 : 0;
  }
  let fd: number;
  if (div) { fd = Math.floor(div); if (div - fd > 0.5) fd += 1; } else fd = Object.is(x / y, -0) || x / y < 0 ? -0 : 0;
  return [fd, mod];
}

const UNARY_MATH: Record<string, (x: number) => number> = {
  SQRT: Math.sqrt, EXP: Math.exp, LOG: Math.log, LOG2: Math.log2, SIN: Math.sin, COS: Math.cos, TAN: Math.tan,
  ASIN: Math.asin, ACOS: Math.acos, ATAN: Math.atan, SINH: Math.sinh, COSH: Math.cosh, TANH: Math.tanh, ASINH: Math.asinh,
};

function nonOverlappingAndDense(sizes: bigint[], strides: bigint[]): bigint {
  const dim = sizes.length;
  if (dim === 1) return strides[0] === 1n || sizes[0]! < 2n ? 1n : 0n;
  const order = [...Array(dim).keys()].sort((p, q) => (strides[p]! < strides[q]! ? -1 : strides[p]! > strides[q]! ? 1 : p - q));
  let expected = 1n;
  for (const d of order) {
    if (sizes[d] === 1n) continue;
    if (strides[d] !== expected) return 0n;
    expected = fit(expected * sizes[d]!);
  }
  return 1n;
}

const opName = (op: number) => (O as unknown as Record<number, string>)[op] ?? `op ${op}`;

function applyOp(op: number, a: V[], w: string): V {
  const name = opName(op);
  switch (name) {
    case 'ADD': case 'MUL': {
      arity(a, 1, 2 ** 62, w);
      for (const v of a) num(v, w);
      if (a.some((v) => typeof v === 'number')) {
        let r = toFloat(a[0]!);
        for (const v of a.slice(1)) r = name === 'ADD' ? r + toFloat(v) : r * toFloat(v);
        return r;
      }
      let r = a[0] as bigint | Frac;
      for (const v of a.slice(1)) r = fit(name === 'ADD' ? fAdd(r, v as bigint | Frac) : fMul(r, v as bigint | Frac));
      return fit(r);
    }
    case 'POW': {
      arity(a, 2, 2, w);
      const b = num(a[0]!, w), e = num(a[1]!, w);
      if (isExact(b) && typeof e === 'bigint') return powerExact(b, e, w);
      if (typeof b === 'bigint' && e instanceof Frac) {
        const root = exactRoot(b, e.d);
        if (root >= 0n) return powerExact(root, e.n, w);
      }
      const fb = toFloat(b), fe = toFloat(e);
      if (fb === 0 && fe < 0) throw new Fail(`${w}: zero to a negative power`);
      return mathPow(fb, fe, w, () => Infinity);
    }
    case 'FLOOR_DIV': case 'CLEAN_DIV': case 'PYTHON_MOD': case 'MOD': {
      arity(a, 2, 2, w);
      const x = num(a[0]!, w), y = num(a[1]!, w);
      const div = name === 'FLOOR_DIV' || name === 'CLEAN_DIV';
      if (isExact(x) && isExact(y)) {
        if (nOf(y) === 0n) throw new Fail(`${w}: division by zero`);
        const q = fFloor(fMul(x, frac(dOf(y), nOf(y))));
        return div ? fit(q) : fit(fSub(x, fMul(q, y)));
      }
      if (toFloat(y) === 0) throw new Fail('float division by zero');
      return floatDivmod(toFloat(x), toFloat(y))[div ? 0 : 1];
    }
    case 'MIN': case 'MAX': {
      arity(a, 1, 2 ** 62, w);
      let best = a[0]!;
      for (const v of a.slice(1)) if (name === 'MIN' ? compare(v, best) < 0 : compare(v, best) > 0) best = v;
      return best;
    }
    case 'EQ': case 'NE': case 'LT': case 'LE': case 'GT': case 'GE': {
      arity(a, 2, 2, w);
      const c = compare(a[0]!, a[1]!);
      switch (name) {
        case 'EQ': return c === 0;
        case 'NE': return c !== 0;
        case 'LT': return c < 0;
        case 'LE': return c <= 0;
        case 'GT': return c > 0;
        default: return c >= 0;
      }
    }
    case 'AND': case 'OR': {
      arity(a, 1, 2 ** 62, w);
      const vals = a.map((v) => bool(v, w));
      return name === 'AND' ? vals.every(Boolean) : vals.some(Boolean);
    }
    case 'NOT': arity(a, 1, 1, w); return !bool(a[0]!, w);
    case 'POW_BY_NATURAL': {
      arity(a, 2, 2, w);
      const b = int(a[0]!, w), e = int(a[1]!, w);
      if (e < 0n) throw new Fail(`${w}: negative exponent`);
      return powerExact(b, e, w);
    }
    case 'FLOAT_POW': {
      arity(a, 2, 2, w);
      const fb = toFloat(num(a[0]!, w)), fe = toFloat(num(a[1]!, w));
      if (fb === 0 && fe < 0) throw new Fail(`${w}: zero to a negative power`);
      if (fb < 0 && Number.isFinite(fe) && fe !== Math.floor(fe)) throw new Fail(`${w}: negative number to a fractional power`);
      return mathPow(fb, fe, w, () => (((fe % 2) + 2) % 2 === 1 ? (fb < 0 ? -Infinity : Infinity) : Infinity));
    }
    case 'INT_TRUE_DIV': {
      arity(a, 2, 2, w);
      const x = int(a[0]!, w), y = int(a[1]!, w);
      if (y === 0n) throw new Fail(`${w}: division by zero`);
      return Number(x) / Number(y);
    }
    case 'FLOAT_TRUE_DIV': {
      arity(a, 2, 2, w);
      const x = toFloat(num(a[0]!, w)), y = toFloat(num(a[1]!, w));
      if (y === 0) throw new Fail(`${w}: float division by zero`);
      return x / y;
    }
    case 'TRUNC_TO_INT': case 'FLOOR_TO_INT': case 'CEIL_TO_INT': case 'ROUND_TO_INT': case 'FLOOR': case 'CEILING': {
      arity(a, 1, 1, w);
      const x = num(a[0]!, w);
      if (typeof x === 'bigint') return x;
      const mode = name === 'TRUNC_TO_INT' ? 'trunc' : name === 'ROUND_TO_INT' ? 'round'
        : name === 'CEIL_TO_INT' || name === 'CEILING' ? 'ceil' : 'floor';
      if (x instanceof Frac) return fit(fracRound(x, mode));
      const f = x as number;
      if (!Number.isFinite(f)) throw new Fail(`${w}: cannot convert infinity or NaN to an integer`);
      const r = mode === 'trunc' ? Math.trunc(f) : mode === 'round' ? roundHalfEven(f) : mode === 'ceil' ? Math.ceil(f) : Math.floor(f);
      return fit(BigInt(r));
    }
    case 'TRUNC_TO_FLOAT': {
      arity(a, 1, 1, w);
      const x = toFloat(num(a[0]!, w));
      return Number.isFinite(x) ? Math.trunc(x) : x;
    }
    case 'ROUND_DECIMAL': {
      arity(a, 2, 2, w);
      const x = toFloat(num(a[0]!, w)), n = int(a[1]!, w);
      if (!Number.isFinite(x) || n > 308n) return x;
      if (n < -308n) return x < 0 ? -0 : 0;
      const s = 10 ** Number(n);
      return roundHalfEven(x * s) / s;
    }
    case 'TO_FLOAT': arity(a, 1, 1, w); return toFloat(num(a[0]!, w));
    case 'IDENTITY': arity(a, 1, 1, w); return a[0]!;
    case 'ABS': {
      arity(a, 1, 1, w);
      const x = a[0]!;
      if (typeof x === 'bigint') return fit(abs(num(x, w) as bigint));
      if (x instanceof Frac) return fit(new Frac(abs(x.n), x.d));
      return typeof x === 'boolean' ? (x ? 1n : 0n) : Math.abs(x);
    }
    case 'BITWISE_AND': case 'BITWISE_OR': case 'BITWISE_XOR': {
      arity(a, 2, 2, w);
      if (typeof a[0] === 'boolean' && typeof a[1] === 'boolean') {
        const [x, y] = a as [boolean, boolean];
        return name === 'BITWISE_AND' ? x && y : name === 'BITWISE_OR' ? x || y : x !== y;
      }
      const [x, y] = a.map((v) => (typeof v === 'boolean' ? (v ? 1n : 0n) : int(v, w)));
      return name === 'BITWISE_AND' ? x! & y! : name === 'BITWISE_OR' ? x! | y! : x! ^ y!;
    }
    case 'MODULAR_INDEXING': {
      arity(a, 3, 3, w);
      const [x, d, mod] = a.map((v) => int(v, w)) as [bigint, bigint, bigint];
      if (d === 0n || mod === 0n) throw new Fail(`${w}: division by zero`);
      const q = floorDiv(x, d);
      return fit(q - floorDiv(q, mod) * mod);
    }
    case 'IS_NON_OVERLAPPING_AND_DENSE': {
      if (!a.length || a.length % 2) throw new Fail(`${w}: needs sizes and strides of equal length`);
      const n = a.length / 2;
      const vals = a.map((v) => int(v, w));
      return nonOverlappingAndDense(vals.slice(0, n), vals.slice(n));
    }
  }
  const fn = UNARY_MATH[name];
  if (fn) {
    arity(a, 1, 1, w);
    const x = toFloat(num(a[0]!, w));
    if (Number.isNaN(x)) return NaN;
    if ((name === 'LOG' || name === 'LOG2') && x <= 0) throw new Fail(`${w}: math domain error`);
    const r = fn(x);
    if (Number.isNaN(r)) throw new Fail(`${w}: math domain error`);
    if (!Number.isFinite(r) && Number.isFinite(x)) return name === 'SINH' && x < 0 ? -Infinity : Infinity;
    return r;
  }
  throw new Fail(`operation ${op} is unspecified or unknown to this reader`);
}

type Expr = TTable;
const n = (v: TValue | undefined) => Number((v ?? 0) as number | bigint);

function degreeOf(op: number, args: number[], exprs: Expr[], degree: number[]): number {
  if (op === O.MUL) return args.reduce((s, k) => s + degree[k]!, 0);
  if ((op === O.POW || op === O.POW_BY_NATURAL) && args.length === 2) {
    const base = degree[args[0]!]!;
    const ex = exprs[args[1]!]!;
    if (n(ex['kind']) === K.INTEGER) return base ? base * Math.abs(Number(ex['int_value'] as bigint)) : 0;
    const den = BigInt(ex['denominator'] as bigint);
    if (n(ex['kind']) === K.RATIONAL && den > 0n) {
      const num_ = abs(BigInt(ex['int_value'] as bigint));
      return base ? base * Number((num_ + den - 1n) / den) : 0;
    }
    return base + degree[args[1]!]!;
  }
  return args.reduce((m, k) => Math.max(m, degree[k]!), 0);
}

function applyNode(i: number, op: number, args: number[], vals: SymValue[], path: string): SymValue {
  const w = opName(op);
  try {
    if (op === O.PIECEWISE || op === O.WHERE) {
      let pairs: [number, number | null][] | null;
      if (op === O.PIECEWISE) {
        pairs = [];
        for (let k = 0; k + 1 < args.length; k += 2) pairs.push([args[k]!, args[k + 1]!]);
      } else {
        pairs = args.length === 3 ? [[args[1]!, args[0]!], [args[2]!, null]] : null;
      }
      if (!pairs || !pairs.length || (op === O.PIECEWISE && args.length % 2)) throw new Fail(`${w}: wrong number of arguments (${args.length})`);
      for (const [value, cond] of pairs) {
        const c = cond === null ? true : vals[cond]!;
        if (c === UNKNOWN || c instanceof Failure) return c;
        if (typeof c !== 'boolean') throw new Fail(`${w}: boolean operand expected`);
        if (c) return vals[value]!;
      }
      throw new Fail(`${w}: no condition holds`);
    }
    const a = args.map((k) => vals[k]!);
    if (a.some((v) => v === UNKNOWN || v instanceof Failure)) return a.find((v) => v instanceof Failure) ?? UNKNOWN;
    return applyOp(op, a as V[], w);
  } catch (e) {
    if (e instanceof Fail) return new Failure(i, e.message);
    if (e instanceof Overflow) {
      throw new LimitError(`${w}: integer overflow (integers are 64-bit)`, { path: `${path}[${i}]`, expected: `a value in [${INT64_MIN}, ${INT64_MAX}]` });
    }
    if (e instanceof RangeError) return new Failure(i, `${w}: ${e.message}`);
    throw e;
  }
}

/** Values of every node of `exprs` in one forward pass; LimitError (naming `path[i]`) on a broken bound. */
export function evaluatePool(exprs: Expr[], symbolValues: SymValue[], path = 'sym_exprs',
  maxDegree = MAX_SYM_DEGREE, maxSteps = MAX_SYM_EVAL_STEPS, maxSize = MAX_SYM_EXPANDED_SIZE): SymValue[] {
  const vals: SymValue[] = new Array(exprs.length);
  const degree: number[] = new Array(exprs.length).fill(0);
  const size: number[] = new Array(exprs.length).fill(1);
  let steps = 0;
  exprs.forEach((e, i) => {
    const kind = n(e['kind']);
    const args = ((e['args'] ?? []) as TValue[]).map((x) => Number(x as number));
    steps += 1 + args.length;
    if (steps > maxSteps) throw new LimitError('symbolic evaluation budget exhausted', { path: `${path}[${i}]`, expected: `<= ${maxSteps} steps`, got: steps });
    switch (kind) {
      case K.SYMBOL: {
        degree[i] = 1;
        const s = n(e['symbol']);
        vals[i] = s < symbolValues.length ? symbolValues[s]! : UNKNOWN;
        return;
      }
      case K.INTEGER: vals[i] = BigInt(e['int_value'] as bigint); return;
      case K.RATIONAL: {
        const d = BigInt(e['denominator'] as bigint);
        vals[i] = d > 1n ? frac(BigInt(e['int_value'] as bigint), d) : new Failure(i, 'RATIONAL denominator must be greater than 1');
        return;
      }
      case K.FLOAT: vals[i] = bitsNumber(e['float_value'] as bigint); return;
      case K.BOOLEAN: vals[i] = Boolean(e['bool_value']); return;
      case K.POSITIVE_INFINITY: vals[i] = Infinity; return;
      case K.NEGATIVE_INFINITY: vals[i] = -Infinity; return;
      case K.INT_POSITIVE_INFINITY: case K.INT_NEGATIVE_INFINITY: vals[i] = new Failure(i, 'integer infinity is a bound, not a number'); return;
    }
    if (kind !== K.APPLY) { vals[i] = new Failure(i, `expression kind ${kind} is unspecified or unknown to this reader`); return; }
    if (args.some((k) => k >= i)) { vals[i] = new Failure(i, 'operand must come earlier in the pool'); return; }
    const op = n(e['op']);
    const t = args.reduce((s, k) => s + size[k]!, 1);
    if (t > maxSize) throw new LimitError('symbolic expression expanded size is too large', { path: `${path}[${i}]`, expected: `<= ${maxSize}`, got: `> ${maxSize}` });
    size[i] = t;
    degree[i] = degreeOf(op, args, exprs, degree);
    if (degree[i]! > maxDegree) throw new LimitError('symbolic expression degree is too high', { path: `${path}[${i}]`, expected: `<= ${maxDegree}`, got: degree[i] });
    vals[i] = applyNode(i, op, args, vals, path);
  });
  return vals;
}
