/**
 * The adapter: the ONLY module of the viewer that knows the pt2format schema.
 *
 * It turns a checked `Pt2fFile` into the viewer's own plain graph model
 * (`VModel`): nodes with display strings, value types, module paths and
 * signature roles. Everything else in the viewer works on that model, so a
 * schema change (a renamed or added field) touches this file alone.
 *
 * The package is read as a plain object tree (`tree.ts`: the canonical
 * dump's shape, field names as in the schema) rather than through per-table
 * accessors: fields the viewer does not know are carried along and shown in
 * the side panel, and no accessor name is hard-coded.
 * The tree is built from the PROGRAM section only, so a file whose weights
 * were left out (`pt2format view` without `--with-weights`) opens fine.
 */
import { parseContainer, readPt2f, Pt2fFile, SectionKind } from '../../src/index.js';
import type { ReadOptions } from '../../src/index.js';
import { fromTree, TreeDecoder } from './tree.js';

/** A plain JSON object of the dump tree. */
type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ValueInfo { name: string; dtype: string; shape: string }
export interface MetaRow { label: string; text: string }
export interface ModuleRef { path: string; type: string }

export interface VNode {
  /** Unique in the whole model: graph id + name. */
  id: string;
  name: string;
  kind: 'op' | 'input' | 'output';
  /** Full target ("torch.ops.aten.add.Tensor"), or the role for inputs/outputs. */
  target: string;
  /** Short label drawn in the box ("add", "linear", "param"). */
  op: string;
  /** Signature kind of an input or output: parameter, buffer, constant, user input, mutation, ... */
  role?: string;
  /** FQN the role refers to (parameter name, buffer name). */
  roleTarget?: string;
  /** Package.tensors index holding this input's data (parameters, buffers, constants). */
  tensor?: number;
  /** nn_module_stack, outermost first, paths normalised to FQN form ("transformer.h.0.attn"). */
  modules: ModuleRef[];
  /** Arguments as display rows, built when first shown. */
  args: () => MetaRow[];
  /** Value names read and written. */
  reads: string[];
  writes: string[];
  /** Metadata rows for the side panel, built when first shown. */
  meta: () => MetaRow[];
  subgraphs: { name: string; graph: VGraph }[];
}

export interface VGraph { id: string; nodes: VNode[]; values: Map<string, ValueInfo> }

export interface VProgram {
  name: string;
  graph: VGraph;
  symbols: { name: string; range: string; hint: string }[];
  constraints: { expr: string; range: string }[];
  /** Expressions shown by name elsewhere (e12), with their definitions (see SymText). */
  shared: { name: string; expr: string }[];
  /** module_call_graph entries; `signed`: torch recorded the call's signature (inputs, outputs) for it. */
  callGraph: { fqn: string; path: string; signed: boolean; inputs: string; outputs: string }[];
  nodeCount: number;
}

export interface TensorSummary {
  dtype: string; shape: number[]; count: number; sampled: number;
  min: number; max: number; mean: number; hist: number[];
}

export interface VModel {
  file: Pt2fFile;
  fileName: string;
  format: string;
  producer: string;
  programs: VProgram[];
  /** Statistics of Package.tensors[i], or a reason why there are none (weights not embedded). */
  summarize(tensor: number): TensorSummary | string;
}

const HEX = /^0x[0-9a-f]{16}$/;
const f64 = new Float64Array(1);
const u64 = new BigUint64Array(f64.buffer);

/** A float of the tree as a number (the canonical dump's "0x" + binary64 bits spelling too). */
function float(v: J): number {
  if (typeof v === 'string' && HEX.test(v)) { u64[0] = BigInt(v); return f64[0]!; }
  return Number(v);
}

function fmtNum(x: number): string {
  if (!Number.isFinite(x)) return String(x);
  if (Number.isInteger(x)) return String(x);
  return Math.abs(x) >= 1e-3 && Math.abs(x) < 1e6 ? String(+x.toPrecision(6)) : x.toExponential(3);
}

const DTYPE_SHORT: Record<string, string> = {
  FLOAT32: 'f32', FLOAT64: 'f64', FLOAT16: 'f16', BFLOAT16: 'bf16', INT64: 'i64', INT32: 'i32', INT16: 'i16',
  INT8: 'i8', UINT8: 'u8', BOOL: 'bool', COMPLEX64: 'c64', COMPLEX128: 'c128',
};

const BINOPS: Record<string, [string, number]> = {
  ADD: ['+', 1], MUL: ['*', 2], FLOOR_DIV: ['//', 2], PYTHON_MOD: ['%', 2], MOD: ['%', 2], CLEAN_DIV: ['/', 2],
  INT_TRUE_DIV: ['/', 2], FLOAT_TRUE_DIV: ['/', 2], POW: ['**', 3], POW_BY_NATURAL: ['**', 3], FLOAT_POW: ['**', 3],
  EQ: ['==', 0], NE: ['!=', 0], LT: ['<', 0], LE: ['<=', 0], GT: ['>', 0], GE: ['>=', 0], AND: ['&', 0], OR: ['|', 0],
  BITWISE_AND: ['&', 0], BITWISE_OR: ['|', 0], BITWISE_XOR: ['^', 0],
};

/**
 * Renders Program.sym_exprs nodes as text (s0, 2*s0, Max(1, s0)), memoised; never evaluates anything.
 *
 * The pool is a graph: a node used twice is one node, and writing it out at
 * every use doubles the text per level (Max(e, e) chained 40 deep is 2^40
 * characters). So a node's text inlines an operand only while that stays
 * short; a longer operand used more than once, or any operand longer than
 * LONG characters, is shown by name (`e12`) and defined once in the
 * program's "shared expressions" table. Every part of a node's text is then
 * at most LONG characters, so the work and the text are linear in the pool.
 */
export class SymText {
  static readonly SHORT = 24;
  static readonly LONG = 80;
  private memo: [string, number][] = [];
  private uses: Uint32Array;
  constructor(private exprs: J[], private symbols: J[]) {
    this.uses = new Uint32Array(exprs.length);
    exprs.forEach((e: J, i: number) => {
      for (const a of e?.kind === 'APPLY' ? e.args ?? [] : []) { const k = Number(a); if (k >= 0 && k < i) this.uses[k]!++; }
    });
  }

  /** Text of node `i` where it is used (a shape, a constraint): its expression, or its name when that is long. */
  text(i: number): string { return this.named(i) && this.node(i)[0].length > SymText.LONG ? `e${i}` : this.node(i)[0]; }

  /** Whether node `i` is shown by name inside other expressions (and defined in `shared()`). */
  named(i: number): boolean {
    const e = this.exprs[i];
    if (!e || e.kind !== 'APPLY') return false;
    const len = this.node(i)[0].length;
    return len > SymText.LONG || (this.uses[i]! >= 2 && len > SymText.SHORT);
  }

  /** The named nodes with their definitions, in pool order. */
  shared(): { name: string; expr: string }[] {
    const out: { name: string; expr: string }[] = [];
    for (let i = 0; i < this.exprs.length; i++) if (this.named(i)) out.push({ name: `e${i}`, expr: this.node(i)[0] });
    return out;
  }

  /** An operand as it appears inside its user: a name or its (short) text. */
  private part(a: number): [string, number] { return this.named(a) ? [`e${a}`, 9] : this.node(a); }

  /** Node `i`'s text and precedence. Operands come first in the pool, so the prefix is built in order: no recursion. */
  private node(i: number): [string, number] {
    if (!(i >= 0 && i < this.exprs.length)) return [`?expr${i}`, 9];
    while (this.memo.length <= i) this.memo.push(this.build(this.memo.length));
    return this.memo[i]!;
  }

  private build(i: number): [string, number] {
    const e = this.exprs[i];
    let out: [string, number];
    if (!e) out = [`?expr${i}`, 9];
    else {
      switch (e.kind) {
        case 'SYMBOL': out = [this.symbols[e.symbol]?.name ?? `?sym${e.symbol}`, 9]; break;
        case 'INTEGER': out = [String(e.int_value), Number(e.int_value) < 0 ? 1 : 9]; break;
        case 'RATIONAL': out = [`${e.int_value}/${e.denominator}`, 2]; break;
        case 'FLOAT': out = [fmtNum(float(e.float_value)), 9]; break;
        case 'BOOLEAN': out = [e.bool_value ? 'True' : 'False', 9]; break;
        case 'POSITIVE_INFINITY': out = ['oo', 9]; break;
        case 'NEGATIVE_INFINITY': out = ['-oo', 9]; break;
        case 'APPLY': {
          // Operands come earlier in a valid pool; anything else is shown, not followed (no recursion on a cycle).
          const args: number[] = (e.args ?? []).map(Number);
          const part = (a: number): [string, number] => (a >= 0 && a < i ? this.part(a) : [`?expr${a}`, 9]);
          const op = String(e.op);
          const bin = BINOPS[op];
          if (bin && args.length >= 2) {
            const parts = args.map((a) => { const [t, p] = part(a); return p < bin[1] || (p === bin[1] && bin[1] >= 2 && a !== args[0]) ? `(${t})` : t; });
            let s = parts.join(bin[0] === '+' ? ' + ' : bin[0] === '*' ? '*' : ` ${bin[0]} `);
            s = s.replace(/\+ -/g, '- ');
            out = [s, bin[1]];
          } else if (op === 'NOT' && args.length === 1) {
            out = [`~${part(args[0]!)[0]}`, 8];
          } else {
            const name = op.toLowerCase().replace(/(^|_)([a-z])/g, (_m, _u, c: string) => c.toUpperCase());
            out = [`${name}(${args.map((a) => part(a)[0]).join(', ')})`, 9];
          }
          break;
        }
        default: out = [`?${e.kind}`, 9];
      }
    }
    return out;
  }
}

/** A ValueRange as torch prints it: an absent side (has_lower/has_upper false) is unbounded (SPEC.md 11.3). */
function rangeText(r: J, isFloat = false): string {
  const lo = r?.has_lower ? (isFloat ? fmtNum(float(r.float_lower)) : String(r.lower)) : '-oo';
  const hi = r?.has_upper ? (isFloat ? fmtNum(float(r.float_upper)) : String(r.upper)) : 'oo';
  return `[${lo}, ${hi}]`;
}

/** Module paths as FQNs: "L['self'].layers[0]" and "L__self___layers_0" styles become "layers.0". */
export function normalizePath(p: string): string {
  let s = p.replace(/^L\['self'\]\.?/, '').replace(/^L__self__[._]?/, '');
  s = s.replace(/\[(\d+)\]/g, '.$1').replace(/\['([^']*)'\]/g, '.$1').replace(/\._modules\./g, '.');
  return s.replace(/^\./, '');
}

/** Tensor/token/sym value names an argument reads (not subgraph or operator names). */
function argNames(type: string, v: J, out: string[]): void {
  if (v == null || type === 'GraphArgument' || type === 'OperatorArgument') return;
  const walk = (x: J): void => {
    if (x == null || typeof x !== 'object') return;
    if (Array.isArray(x)) { x.forEach(walk); return; }
    if (typeof x.name === 'string') out.push(x.name);
    if (Array.isArray(x.names)) for (const n of x.names) if (typeof n === 'string') out.push(n);
    for (const k of ['items', 'lists', 'entries', 'value']) if (x[k] && typeof x[k] === 'object') walk(x[k]);
  };
  walk(v);
}

export class Adapter {
  private sym!: SymText;
  private symbols: J[] = [];
  private graphSeq = 0;

  constructor(private pkg: J) {}

  /** An argument (`value_type` + `value`) as display text. */
  argText(type: string, v: J): string {
    if (v == null) return type === 'NoneArgument' ? 'None' : String(type ?? '?');
    switch (type) {
      case 'NoneArgument': return 'None';
      case 'TensorArgument': case 'TokenArgument': return `%${v.name}`;
      case 'OptionalTensorArgument': return v.name == null ? 'None' : `%${v.name}`;
      case 'TensorListArgument': return `[${(v.names ?? []).map((n: string) => `%${n}`).join(', ')}]`;
      case 'OptionalTensorListArgument': return `[${(v.items ?? []).map((i: J) => (i?.name == null ? 'None' : `%${i.name}`)).join(', ')}]`;
      case 'FloatArgument': return fmtNum(float(v.value));
      case 'FloatListArgument': return `[${(v.values ?? []).map((x: J) => fmtNum(float(x))).join(', ')}]`;
      case 'SymIntArgument': case 'SymFloatArgument': case 'SymBoolArgument':
        return v.name != null ? `%${v.name}` : (type === 'SymFloatArgument' ? fmtNum(float(v.value)) : String(v.value));
      case 'SymIntListArgument': case 'SymFloatListArgument': case 'SymBoolListArgument':
        return `[${(v.items ?? []).map((i: J) => (i?.name != null ? `%${i.name}` : String(i?.value))).join(', ')}]`;
      case 'StringArgument': return JSON.stringify(v.value);
      case 'GraphArgument': return `subgraph ${v.name}`;
      case 'OperatorArgument': return String(v.name);
      case 'CustomObjArgument': return `%${v.name} (${v.class_fqn})`;
      case 'DeviceArgument': return v.value ? `${v.value.type}${v.value.index >= 0 ? ':' + v.value.index : ''}` : 'device';
      default: {
        if ('value' in v && typeof v.value !== 'object') return String(v.value);
        if (Array.isArray(v.values)) return `[${v.values.join(', ')}]`;
        return JSON.stringify(v, (_k, x) => (typeof x === 'string' && HEX.test(x) ? float(x) : x));
      }
    }
  }

  private symInt(s: J): string {
    if (!s) return '?';
    return s.expr >= 0 ? this.sym.text(s.expr) : String(s.value);
  }

  private valueTable(graph: J): Map<string, ValueInfo> {
    const values = new Map<string, ValueInfo>();
    for (const tv of graph.tensor_values ?? []) {
      const meta = tv.meta ?? {};
      const dtype = DTYPE_SHORT[meta.dtype] ?? String(meta.dtype ?? '?').toLowerCase();
      values.set(tv.name, { name: tv.name, dtype, shape: `[${(meta.sizes ?? []).map((s: J) => this.symInt(s)).join(', ')}]` });
    }
    for (const [key, dtype] of [['sym_int_values', 'SymInt'], ['sym_float_values', 'SymFloat'], ['sym_bool_values', 'SymBool']] as const) {
      for (const sv of graph[key] ?? []) values.set(sv.name, { name: sv.name, dtype, shape: this.symInt(sv.value) });
    }
    for (const co of graph.custom_obj_values ?? []) values.set(co.name, { name: co.name, dtype: 'obj', shape: String(co.class_fqn ?? '') });
    return values;
  }

  private metaRows(md: J, symbols: J[]): MetaRow[] {
    if (!md) return [];
    const rows: MetaRow[] = [];
    if (md.stack_trace) rows.push({ label: 'stack trace', text: md.stack_trace });
    if (md.nn_module_stack?.length) rows.push({ label: 'nn_module_stack', text: md.nn_module_stack.map((e: J) => `${e.path}  (${e.type_name})`).join('\n') });
    if (md.source_fn_stack?.length) rows.push({ label: 'source_fn', text: md.source_fn_stack.map((e: J) => `${e.name}: ${e.target}`).join('\n') });
    if (md.torch_fn) rows.push({ label: 'torch_fn', text: `${md.torch_fn.name}: ${md.torch_fn.target}` });
    if (md.custom?.entries?.length) rows.push({ label: 'custom', text: md.custom.entries.map((e: J) => `${this.valueText(e.key)}: ${this.valueText(e.value)}`).join('\n') });
    if (md.from_node?.length) rows.push({ label: 'from_node', text: md.from_node.map((n: J) => `${n.name} (${n.pass_name ?? ''})`).join('\n') });
    if (md.unbacked_bindings?.length) rows.push({ label: 'unbacked bindings', text: md.unbacked_bindings.map((b: J) => String(symbols[Number(b.symbol)]?.name ?? `symbol ${b.symbol}`)).join(', ') });
    for (const e of md.extra ?? []) rows.push({ label: e.key, text: e.value });
    // Fields this viewer does not know yet (added by a newer schema): show them raw.
    const known = new Set(['stack_trace', 'nn_module_stack', 'source_fn_stack', 'torch_fn', 'custom', 'from_node', 'unbacked_bindings', 'extra']);
    for (const k of Object.keys(md)) {
      const v = md[k];
      if (!known.has(k) && v != null && !(Array.isArray(v) && v.length === 0) && v !== false && v !== '') rows.push({ label: k, text: JSON.stringify(v) });
    }
    return rows;
  }

  /** A generic Value (custom metadata, constants) as short text. */
  valueText(v: J): string {
    const x = v?.value;
    switch (v?.value_type) {
      case 'NullValue': return 'None';
      case 'BoolValue': return x?.value ? 'True' : 'False';
      case 'IntValue': return String(x?.value);
      case 'FloatValue': return fmtNum(float(x?.value));
      case 'StringValue': return JSON.stringify(x?.value ?? '');
      case 'ListValue': return `${x?.is_tuple ? '(' : '['}${(x?.items ?? []).map((i: J) => this.valueText(i)).join(', ')}${x?.is_tuple ? ')' : ']'}`;
      case 'MapValue': return `{${(x?.entries ?? []).map((e: J) => `${this.valueText(e.key)}: ${this.valueText(e.value)}`).join(', ')}}`;
      case 'TensorRefValue': return `tensor #${x?.tensor}`;
      default: return JSON.stringify(x ?? null);
    }
  }

  private graph(g: J, prefix: string): VGraph {
    const id = `g${this.graphSeq++}`;
    const syms = this.symbols; // metadata rows are built later, when this program may no longer be the current one
    const values = this.valueTable(g);
    const nodes: VNode[] = [];
    const inputMeta: J[] = g.input_metadata ?? [];
    (g.inputs ?? []).forEach((a: J, i: number) => {
      const reads: string[] = [];
      argNames(a.value_type, a.value, reads);
      const name = reads[0] ?? `input${i}`;
      nodes.push({ id: `${id}:in:${name}`, name, kind: 'input', target: 'placeholder', op: 'input', modules: [], args: () => [],
        reads: [], writes: reads, meta: () => this.metaRows(inputMeta[i], syms), subgraphs: [] });
    });
    for (const n of g.nodes ?? []) {
      const reads: string[] = [];
      const subgraphs: { name: string; graph: VGraph }[] = [];
      for (const a of n.inputs ?? []) {
        argNames(a.value_type, a.value, reads);
        if (a.value_type === 'GraphArgument' && a.value?.graph) subgraphs.push({ name: a.value.name, graph: this.graph(a.value.graph, `${prefix}${n.name}.`) });
      }
      const writes: string[] = [];
      for (const o of n.outputs ?? []) argNames(o.value_type, o.value, writes);
      const target = String(n.target ?? '');
      const parts = target.split('.');
      let op = parts.length >= 2 && /^(default|Tensor|Scalar|int|float|dim|self|using_ints|input|out|start|correction|names|bool)$/.test(parts[parts.length - 1]!) ? parts[parts.length - 2]! : parts[parts.length - 1]!;
      if (!op) op = target;
      const md = n.metadata;
      const modules: ModuleRef[] = (md?.nn_module_stack ?? []).map((e: J) => ({ path: normalizePath(String(e.path ?? '')), type: String(e.type_name ?? '') }))
        .filter((m: ModuleRef) => m.path !== '');
      const args = () => (n.inputs ?? []).map((a: J) => ({ label: a.name || '', text: this.argText(a.value_type, a.value) }));
      nodes.push({ id: `${id}:${n.name}`, name: n.name, kind: 'op', target, op, modules, args, reads, writes,
        meta: () => this.metaRows(md, syms), subgraphs });
    }
    (g.outputs ?? []).forEach((a: J, i: number) => {
      const reads: string[] = [];
      argNames(a.value_type, a.value, reads);
      nodes.push({ id: `${id}:out:${i}`, name: `output ${i}`, kind: 'output', target: 'output', op: 'output', modules: [],
        args: () => [{ label: '', text: this.argText(a.value_type, a.value) }], reads, writes: [], meta: () => [], subgraphs: [] });
    });
    return { id, nodes, values };
  }

  program(p: J, stateTensors: Map<string, number>): VProgram {
    this.sym = new SymText(p.sym_exprs ?? [], p.symbols ?? []);
    this.symbols = p.symbols ?? [];
    const graph = this.graph(p.graph ?? {}, '');
    const state = new Map<string, number>();
    for (const s of p.state ?? []) state.set(s.name, Number(s.tensor));
    // Signature roles on the root graph's inputs and outputs.
    const inputs = graph.nodes.filter((n) => n.kind === 'input');
    (p.signature?.input_specs ?? []).forEach((s: J, i: number) => {
      const node = inputs[i];
      if (!node) return;
      const kind = String(s.spec_type ?? '');
      const v = s.spec ?? {};
      const roles: Record<string, [string, string | undefined]> = {
        UserInputSpec: ['user input', undefined], InputToParameterSpec: ['parameter', v.parameter_name],
        InputToBufferSpec: ['buffer', v.buffer_name], InputToTensorConstantSpec: ['constant', v.tensor_constant_name],
        InputToCustomObjSpec: ['custom object', v.custom_obj_name], InputTokenSpec: ['token', undefined],
        InputToConstantInputSpec: ['constant input', undefined],
      };
      const [role, fqn] = roles[kind] ?? [kind.replace(/Spec$/, ''), undefined];
      node.role = role;
      node.roleTarget = fqn;
      node.op = role;
      if (kind === 'InputToConstantInputSpec') node.args = () => [{ label: 'value', text: this.valueText(v.value) }];
      if (fqn != null && state.has(fqn)) node.tensor = state.get(fqn);
    });
    const outputs = graph.nodes.filter((n) => n.kind === 'output');
    (p.signature?.output_specs ?? []).forEach((s: J, i: number) => {
      const node = outputs[i];
      if (!node) return;
      const kind = String(s.spec_type ?? '');
      const v = s.spec ?? {};
      const roles: Record<string, [string, string | undefined]> = {
        UserOutputSpec: ['user output', undefined], LossOutputSpec: ['loss', undefined],
        BufferMutationSpec: ['buffer mutation', v.buffer_name], ParameterMutationSpec: ['parameter mutation', v.parameter_name],
        GradientToParameterSpec: ['parameter gradient', v.parameter_name], GradientToUserInputSpec: ['input gradient', v.user_input_name],
        UserInputMutationSpec: ['user input mutation', v.user_input_name], OutputTokenSpec: ['token', undefined],
      };
      const [role, fqn] = roles[kind] ?? [kind.replace(/Spec$/, ''), undefined];
      node.role = role;
      node.roleTarget = fqn;
      node.op = role;
    });
    void stateTensors;
    const symbols = (p.symbols ?? []).map((s: J) => ({ name: String(s.name), range: rangeText(s.range, s.kind === 'FLOAT'), hint: s.has_hint ? (s.kind === 'FLOAT' ? fmtNum(float(s.float_hint)) : String(s.hint)) : 'unbacked' }));
    const floatSym = (i: number) => { const e = (p.sym_exprs ?? [])[i]; return e?.kind === 'SYMBOL' && p.symbols?.[Number(e.symbol)]?.kind === 'FLOAT'; };
    const constraints = (p.range_constraints ?? []).map((r: J) => ({ expr: this.sym.text(Number(r.expr)), range: rangeText(r.range, floatSym(Number(r.expr))) }));
    const sigText = (args: J[]) => (args ?? []).map((a: J) => this.argText(a.value_type, a.value)).join(', ');
    const callGraph = (p.module_call_graph ?? []).map((e: J) => ({ fqn: e.fqn === '' ? '(root)' : String(e.fqn), path: String(e.fqn ?? ''), signed: !!e.signature,
      inputs: e.signature ? sigText(e.signature.inputs) : '', outputs: e.signature ? sigText(e.signature.outputs) : '' }));
    let nodeCount = 0;
    const count = (g: VGraph): void => { for (const n of g.nodes) { if (n.kind === 'op') nodeCount++; n.subgraphs.forEach((s) => count(s.graph)); } };
    count(graph);
    return { name: String(p.name ?? ''), graph, symbols, constraints, shared: this.sym.shared(), callGraph, nodeCount };
  }
}

/** Statistics of a tensor's values: min, max, mean and a 32-bin histogram, over at most `cap` sampled elements. */
export function summarizeTensor(file: Pt2fFile, i: number, cap = 1 << 20): TensorSummary | string {
  let t;
  try { t = file.tensor(i); } catch (e) { return `values not available: ${(e as Error).message}`; }
  const shape = t.sizes.map(Number);
  const count = shape.reduce((a, b) => a * b, 1);
  const dv = new DataView(t.storage.buffer, t.storage.byteOffset, t.storage.byteLength);
  const read: Record<string, (o: number) => number> = {
    FLOAT32: (o) => dv.getFloat32(o, true), FLOAT64: (o) => dv.getFloat64(o, true),
    FLOAT16: (o) => half(dv.getUint16(o, true)), BFLOAT16: (o) => { f32v[0] = 0; u32v[0] = dv.getUint16(o, true) << 16; return f32v[0]!; },
    INT64: (o) => Number(dv.getBigInt64(o, true)), INT32: (o) => dv.getInt32(o, true), INT16: (o) => dv.getInt16(o, true),
    INT8: (o) => dv.getInt8(o), UINT8: (o) => dv.getUint8(o), BOOL: (o) => dv.getUint8(o),
  };
  const rd = read[t.dtype];
  if (!rd) return `no summary for dtype ${t.dtype}`;
  const step = Math.max(1, Math.ceil(count / cap));
  const strides = t.strides.map(Number);
  const vals: number[] = [];
  for (let flat = 0; flat < count; flat += step) {
    let rem = flat, off = 0;
    for (let d = shape.length - 1; d >= 0; d--) { const s = shape[d]!; off += (rem % s) * strides[d]!; rem = Math.floor(rem / s); }
    vals.push(rd(t.byteOffset + off * t.itemsize));
  }
  let min = Infinity, max = -Infinity, sum = 0;
  for (const v of vals) { if (v < min) min = v; if (v > max) max = v; sum += v; }
  const hist = new Array<number>(32).fill(0);
  const width = max > min ? (max - min) / 32 : 1;
  for (const v of vals) if (Number.isFinite(v)) hist[Math.min(31, Math.floor((v - min) / width))]!++;
  return { dtype: t.dtype, shape, count, sampled: vals.length, min, max, mean: vals.length ? sum / vals.length : NaN, hist };
}

const f32v = new Float32Array(1);
const u32v = new Uint32Array(f32v.buffer);
function half(h: number): number {
  const s = h & 0x8000 ? -1 : 1, e = (h >> 10) & 0x1f, f = h & 0x3ff;
  if (e === 0) return s * f * 2 ** -24;
  if (e === 31) return f ? NaN : s * Infinity;
  return s * (1 + f / 1024) * 2 ** (e - 15);
}

/**
 * Whether the container lists a DATA section (kind 2). `pt2format view` leaves the weights out of
 * the page unless asked, so a file without one is read with `dataLeftOut` (storages unchecked).
 */
function hasDataSection(bytes: Uint8Array): boolean {
  try {
    return parseContainer(bytes, {}).sections.some((s) => s.kind === SectionKind.DATA);
  } catch {
    return true; // readPt2f reports the damage itself
  }
}

/** Reads a file (throws the reader's typed Pt2fError on damage) and builds the viewer model. */
export function loadModel(bytes: Uint8Array, fileName: string, shards: Map<string, Uint8Array> = new Map()): VModel {
  const opts: ReadOptions = { file: fileName, loadShard: (name) => {
    const s = shards.get(name);
    if (!s) throw new Error(`shard file ${name} is not embedded (weights left out)`);
    return s;
  }, dataLeftOut: !hasDataSection(bytes) };
  const file = readPt2f(bytes, opts);
  // Stack traces and provenance are big and shown only for the selected node: decoded on first read.
  const pkg: J = file.encoding === 'FLATBUFFERS'
    ? new TreeDecoder(file.programBytes, new Set(['stack_trace', 'from_node'])).root()
    : fromTree(file.tree());
  const adapter = new Adapter(pkg);
  const stateTensors = new Map<string, number>();
  const programs = (pkg.programs ?? []).map((p: J) => adapter.program(p, stateTensors));
  const fv = pkg.format_version ?? {};
  const pr = pkg.producer;
  return {
    file, fileName, programs,
    format: `${fv.major}.${fv.minor}`,
    producer: pr ? `${pr.name ?? ''} ${pr.version ?? ''} (torch ${pr.torch_version ?? '?'})` : '',
    summarize: (i) => summarizeTensor(file, i),
  };
}
