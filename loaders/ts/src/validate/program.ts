/**
 * One program: the symbolic pool (acyclic, known ops with their arity, finite float bounds, evaluated within
 * SPEC.md 11.6, src/symeval.ts) and the file's budget, the graph (src/validate/graph.ts), the signature's
 * one spec per graph input and output, state tensors that match their placeholders, tree specs.
 */
import { ScalarType, StateKind, SymExprKind, SymOp, SymbolKind, TreeSpecKind } from '../_build/classes.js';
import { LimitError } from '../errors.js';
import { MAX_GUARD_SOURCES, MAX_INPUT_GUARDS } from '../generated/limits.js';
import { evaluatePool, expandedSizes, SYM_FREE_SIZE, SymBudget, SymValue, UNKNOWN } from '../symeval.js';
import { bitsNumber } from '../tree.js';
import { arr, big, enumNames, fail, kind, num, str, T, within } from './common.js';
import { GraphCheck } from './graph.js';
import { checkIdentifierKey, checkModuleKey, ValueCheck } from './values.js';

/** Arity of each SymOp by name: [min, max (null: any), even count]; ops not listed take one or more. */
const OP_ARITY: Record<string, [number, number | null, boolean]> = {};
for (const op of ['POW', 'FLOOR_DIV', 'PYTHON_MOD', 'MOD', 'CLEAN_DIV', 'EQ', 'NE', 'LT', 'LE', 'GT', 'GE', 'POW_BY_NATURAL',
  'FLOAT_POW', 'INT_TRUE_DIV', 'FLOAT_TRUE_DIV', 'ROUND_DECIMAL', 'BITWISE_AND', 'BITWISE_OR', 'BITWISE_XOR', 'IS_MULTIPLE']) OP_ARITY[op] = [2, 2, false];
for (const op of ['NOT', 'TRUNC_TO_INT', 'TRUNC_TO_FLOAT', 'FLOOR_TO_INT', 'CEIL_TO_INT', 'ROUND_TO_INT', 'TO_FLOAT', 'IDENTITY',
  'ABS', 'CEILING', 'FLOOR', 'LOG2', 'SQRT', 'EXP', 'LOG', 'SIN', 'COS', 'TAN', 'ASIN', 'ACOS', 'ATAN', 'SINH', 'COSH', 'TANH',
  'ASINH']) OP_ARITY[op] = [1, 1, false];
OP_ARITY['WHERE'] = [3, 3, false];
OP_ARITY['MODULAR_INDEXING'] = [3, 3, false];
OP_ARITY['PIECEWISE'] = [2, null, true];
OP_ARITY['IS_NON_OVERLAPPING_AND_DENSE'] = [2, null, true];

export class ProgramCheck {
  readonly nSymbols: number;
  readonly nExprs: number;
  readonly values: ValueCheck;
  sizes: number[] = [];

  constructor(readonly p: T, readonly nTensors: number, readonly maxDepth: number, readonly tensors: T[] = [],
    readonly budget: SymBudget = new SymBudget()) {
    this.nSymbols = arr(p['symbols']).length;
    this.nExprs = arr(p['sym_exprs']).length;
    this.values = new ValueCheck(nTensors, maxDepth);
  }

  check(): void {
    const p = this.p;
    this.checkSymbols();
    arr(p['range_constraints']).forEach((rc, i) => this.use(num((rc as T)['expr']), `range_constraints[${i}].expr`));
    // SPEC 10: torch compiles every guard; the counts are bounded before any is read.
    for (const [field, most] of [['input_guards', MAX_INPUT_GUARDS], ['guard_sources', MAX_GUARD_SOURCES]] as const) {
      const n = arr(p[field]).length;
      if (n > most) throw new LimitError(`too many ${field}`, { path: field, expected: `<= ${most}`, got: n });
    }
    arr(p['input_guards']).forEach((g, i) => this.use(num(g), `input_guards[${i}]`));
    const graph = p['graph'] as T | null;
    const scope = within('graph', () => new GraphCheck(this, graph!, 0).check());
    this.checkSignature(scope);
    this.checkStateMatchesPlaceholders();
    (arr(p['state']) as T[]).forEach((e, i) => {
      const path = `state[${i}]`;
      if (num(e['kind']) === StateKind.UNSPECIFIED) throw fail('state kind is UNSPECIFIED', `${path}.kind`);
    });
    (arr(p['custom_objects']) as T[]).forEach((o, i) => {
      this.checkValue(o['state'] as T | null, `custom_objects[${i}].state`);
    });
    const ex = p['example_inputs'] as T | null;
    if (ex !== null && ex !== undefined) within('example_inputs', () => this.values.check(ex, 0, true));
    (arr(p['module_call_graph']) as T[]).forEach((entry, i) => {
      const sig = entry['signature'] as T | null;
      if (sig === null || sig === undefined) return;
      for (const group of ['inputs', 'outputs']) {
        arr(sig[group]).forEach((a, j) => {
          if (a === null || (a as T)['value'] === null) throw fail('union value is missing', `module_call_graph[${i}].signature.${group}[${j}].value`);
        });
      }
      for (const part of ['in_spec', 'out_spec']) {
        const spec = sig[part] as T | null;
        if (spec !== null && spec !== undefined) within(`module_call_graph[${i}].signature.${part}`, () => this.checkTreeSpec(spec, 0));
      }
    });
  }

  checkValue(value: T | null | undefined, path: string): void {
    if (value === null || value === undefined) return;
    within(path, () => this.values.check(value, 0));
  }

  checkTreeSpec(spec: T, depth: number): void {
    if (depth > this.maxDepth) throw new LimitError('tree spec nested too deeply', { expected: `depth <= ${this.maxDepth}`, got: depth });
    arr(spec['keys']).forEach((key, i) => {
      this.checkValue(key as T, `keys[${i}]`);
      if (enumNames(TreeSpecKind)[num(spec['kind'])] === 'MODULE') within(`keys[${i}]`, () => checkModuleKey(key as T, 'value'));
      else within(`keys[${i}]`, () => checkIdentifierKey(key as T, 'value'));
    });
    this.checkValue(spec['context'] as T | null, 'context');
    arr(spec['children']).forEach((c, i) => within(`children[${i}]`, () => this.checkTreeSpec(c as T, depth + 1)));
  }

  /** The pool's rows (symbol names unique: pt2f_keys, checkFieldRules). */
  checkSymbols(): void {
    const opNames = enumNames(SymOp);
    (arr(this.p['sym_exprs']) as T[]).forEach((e, i) => {
      const k = num(e['kind']);
      // k declared and not UNSPECIFIED: pt2f_value, checkFieldRules
      if (k === SymExprKind.SYMBOL) {
        const s = num(e['symbol']);
        if (s >= this.nSymbols) throw fail('symbol index out of range', `sym_exprs[${i}].symbol`, `< ${this.nSymbols}`, s);
      } else if (k === SymExprKind.RATIONAL) {
        const d = big(e['denominator']);
        if (d <= 1n) throw fail('rational denominator must be > 1', `sym_exprs[${i}].denominator`, undefined, d);
      } else if (k === SymExprKind.APPLY) {
        const op = num(e['op']);
        const opName = op === 0 ? undefined : opNames[op];
        if (opName === undefined) throw fail('APPLY needs a known op', `sym_exprs[${i}].op`, undefined, op);
        const args = arr(e['args']);
        if (!args.length) throw fail('APPLY needs arguments', `sym_exprs[${i}].args`);
        args.forEach((a, j) => {
          if (num(a) >= i) throw fail('argument must refer to an earlier expression (the pool is acyclic)', `sym_exprs[${i}].args[${j}]`, `< ${i}`, num(a));
        });
        if (opName === 'IS_MULTIPLE') throw fail('IS_MULTIPLE is reserved and never written', `sym_exprs[${i}].op`, undefined, 'IS_MULTIPLE');
        const [lo, hi, even] = OP_ARITY[opName] ?? [1, null, false];
        const n = args.length;
        if (n < lo || (hi !== null && n > hi) || (even && n % 2)) {
          throw fail('wrong number of operands', `sym_exprs[${i}].args`, lo === hi ? `${lo}` : `>= ${lo}` + (even ? ', even' : ''), n);
        }
      }
    });
    this.checkSymbolBounds();
  }

  /** Float ranges and hints are finite; the pool evaluates within the bounds of SPEC.md 11.6 (src/symeval.ts). */
  checkSymbolBounds(): void {
    const hints: SymValue[] = [];
    (arr(this.p['symbols']) as T[]).forEach((sym, i) => {
      const isFloat = num(sym['kind']) === SymbolKind.FLOAT;
      const r = sym['range'] as T | null;
      if (isFloat && r !== null && r !== undefined) {
        for (const [side, has] of [['float_lower', 'has_lower'], ['float_upper', 'has_upper']] as const) {
          const v = bitsNumber(r[side] as bigint);
          if (r[has] && !Number.isFinite(v)) throw fail('a present float bound must be finite', `symbols[${i}].range.${side}`, undefined, v);
        }
      }
      if (isFloat && sym['has_hint'] && Number.isNaN(bitsNumber(sym['float_hint'] as bigint))) {
        throw fail('float hint is NaN', `symbols[${i}].float_hint`, undefined, 'nan');
      }
      hints.push(!sym['has_hint'] ? UNKNOWN : isFloat ? bitsNumber(sym['float_hint'] as bigint) : big(sym['hint']));
    });
    evaluatePool(arr(this.p['sym_exprs']) as T[], hints);
    this.sizes = expandedSizes(arr(this.p['sym_exprs']) as T[]);
    this.sizes.forEach((size, i) => this.budget.charge(size, `sym_exprs[${i}]`));
  }

  /** Charges a use of pool node `i` (an index already checked) to the file's budget (SPEC.md 11.6). */
  use(i: number, path: string): void {
    if (i >= 0 && this.sizes[i]! > SYM_FREE_SIZE) this.budget.charge(this.sizes[i]!, path);
  }

  checkSignature(scope: GraphCheck): void {
    const sig = this.p['signature'] as T | null;
    const graph = this.p['graph'] as T;
    for (const [group, what, argsKey] of [['input_specs', 'input', 'inputs'], ['output_specs', 'output', 'outputs']] as const) {
      const specs = arr(sig![group]) as T[];
      const args = arr(graph[argsKey]);
      if (specs.length !== args.length) throw fail(`one spec per graph ${what} required`, `signature.${group}`, args.length, specs.length);
      specs.forEach((spec, i) => {
        const path = `signature.${group}[${i}]`;
        const s = spec['spec'] as T;  // set: pt2f_value, checkFieldRules
        if (kind(s) === 'InputToConstantInputSpec') {
          this.checkValue(s['value'] as T | null, `${path}.spec.value`);
          return;
        }
        const arg = s['arg'] as T | null;
        within(`${path}.spec.arg`, () => {
          if (arg === null || arg === undefined) throw fail('required field is missing');
          scope.checkArgument(kind(arg) === 'Argument' ? (arg['value'] as T | null) : arg);
        });
      });
    }
  }

  /** A stored parameter, buffer or constant has its placeholder's dtype and concrete sizes (SPEC.md §5), as Python. */
  checkStateMatchesPlaceholders(): void {
    const meta = new Map<string, T | null>();
    for (const tv of arr((this.p['graph'] as T)['tensor_values']) as T[]) {
      const name = str(tv['name']);
      if (name !== null) meta.set(name, (tv['meta'] ?? null) as T | null);
    }
    const state = new Map<string, number>();
    for (const e of arr(this.p['state']) as T[]) {
      const name = str(e['name']);
      if (name !== null) state.set(name, num(e['tensor']));
    }
    const fqnField: Record<string, string> = {
      InputToParameterSpec: 'parameter_name', InputToBufferSpec: 'buffer_name', InputToTensorConstantSpec: 'tensor_constant_name',
    };
    (arr((this.p['signature'] as T)['input_specs']) as T[]).forEach((spec, i) => {
      const s = spec['spec'] as T | null;
      if (s === null || s === undefined) return;
      const field = fqnField[kind(s) ?? ''];
      if (field === undefined) return;
      const fqn = str(s[field]);
      const arg = (s['arg'] ?? null) as T | null;
      const argName = arg === null ? null : str(arg['name']);
      if (fqn === null || argName === null || !state.has(fqn)) return;
      const m = meta.get(argName);
      const t = state.get(fqn)!;
      if (m === null || m === undefined || num(m['layout'] ?? 1) !== 1 || t >= this.tensors.length) return;
      const tensor = this.tensors[t]!;
      const path = `signature.input_specs[${i}]`;
      if (num(tensor['dtype']) !== num(m['dtype'])) {
        throw fail(`state tensor '${fqn}' has another dtype than its placeholder '${argName}'`, path,
          enumNames(ScalarType)[num(m['dtype'])] ?? num(m['dtype']), enumNames(ScalarType)[num(tensor['dtype'])] ?? num(tensor['dtype']));
      }
      const declared = arr(m['sizes']) as T[];
      const stored = arr(tensor['sizes']);
      const same = declared.length === stored.length && declared.every((d, k) =>
        num(d['expr']) !== -1 || BigInt(d['value'] as number | bigint) === BigInt(stored[k] as number | bigint));
      if (!same) throw fail(`state tensor '${fqn}' has other sizes than its placeholder '${argName}'`, path);
    });
  }

  /** Charges a SymInt/SymFloat/SymBool use (its index already checked by the field rules) to the budget. */
  checkSym(sym: T | null | undefined, path: string): void {
    if (sym === null || sym === undefined) return;
    this.use(num(sym['expr']), `${path}.expr`);
  }
}
