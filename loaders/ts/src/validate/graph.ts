/**
 * Graph rules: value names unique and scoped to the graph that declares them (subgraphs nested at most
 * maxDepth), every name an argument uses declared there, node names unique, node metadata.
 */
import { LimitError, ValidationError } from '../errors.js';
import { checkExtraMetaKey } from '../strings.js';
import { TValue } from '../tree.js';
import { arr, fail, kind, str, T, within } from './common.js';
import type { ProgramCheck } from './program.js';

const OPTIONAL_NAME: Record<string, [keyof GraphScopes, string]> = {
  OptionalTensorArgument: ['tensors', 'tensor'], SymIntArgument: ['symInts', 'SymInt'],
  SymFloatArgument: ['symFloats', 'SymFloat'], SymBoolArgument: ['symBools', 'SymBool'],
};
const OPTIONAL_NAME_LIST: Record<string, [keyof GraphScopes, string]> = {
  OptionalTensorListArgument: ['tensors', 'tensor'], SymIntListArgument: ['symInts', 'SymInt'],
  SymFloatListArgument: ['symFloats', 'SymFloat'], SymBoolListArgument: ['symBools', 'SymBool'],
};

interface GraphScopes { tensors: Set<string>; symInts: Set<string>; symFloats: Set<string>; symBools: Set<string>; customObjs: Set<string> }

function undeclared(what: string, name: string | null, path: string): ValidationError {
  return fail(`${what} ${JSON.stringify(name)} is not declared in this graph`, path, "a name from the graph's values", JSON.stringify(name));
}

/** One graph and its subgraphs; value names are scoped to the graph that declares them. */
export class GraphCheck implements GraphScopes {
  tensors: Set<string>;
  symInts: Set<string>;
  symFloats: Set<string>;
  symBools: Set<string>;
  customObjs: Set<string>;

  constructor(private readonly prog: ProgramCheck, private readonly g: T, private readonly depth: number) {
    if (depth > prog.maxDepth) throw new LimitError('subgraphs nested too deeply', { expected: `depth <= ${prog.maxDepth}`, got: depth });
    this.tensors = GraphCheck.names(arr(g['tensor_values']), 'tensor_values');
    this.symInts = GraphCheck.names(arr(g['sym_int_values']), 'sym_int_values');
    this.symFloats = GraphCheck.names(arr(g['sym_float_values']), 'sym_float_values');
    this.symBools = GraphCheck.names(arr(g['sym_bool_values']), 'sym_bool_values');
    this.customObjs = GraphCheck.names(arr(g['custom_obj_values']), 'custom_obj_values');
  }

  private static names(values: TValue[], path: string): Set<string> {
    const names = new Set<string>();
    values.forEach((v, i) => {
      const n = str((v as T)['name']);
      names.add(n!);
    });
    if (names.size !== values.length) throw fail('duplicate value names', path, `${values.length} unique names`, names.size);
    return names;
  }

  check(): GraphCheck {
    const g = this.g;
    const prog = this.prog;
    (arr(g['tensor_values']) as T[]).forEach((tv, i) => {
      const meta = tv['meta'] as T | null;
      const path = `tensor_values[${i}].meta`;
      // dtype not UNSPECIFIED: pt2f_value, checkFieldRules
      arr(meta!['sizes']).forEach((s, d) => prog.checkSym(s as T, `${path}.sizes[${d}]`));
      arr(meta!['strides']).forEach((s, d) => prog.checkSym(s as T, `${path}.strides[${d}]`));
      prog.checkSym(meta!['storage_offset'] as T | null, `${path}.storage_offset`);
    });
    for (const group of ['sym_int_values', 'sym_float_values', 'sym_bool_values']) {
      arr(g[group]).forEach((v, i) => prog.checkSym((v as T)['value'] as T | null, `${group}[${i}].value`));
    }
    for (const group of ['inputs', 'outputs']) {
      arr(g[group]).forEach((a, i) => within(`${group}[${i}].value`, () => this.checkArgument((a as T)['value'] as T | null)));
    }
    arr(g['input_metadata']).forEach((m, i) => this.checkMetadata(m as T, `input_metadata[${i}]`));
    this.checkMetadata(g['output_metadata'] as T | null, 'output_metadata');
    const nodeNames = new Set<string | null>();
    const nodes = arr(g['nodes']) as T[];
    nodes.forEach((node, i) => {
      within(`nodes[${i}]`, () => this.checkNode(node));
      nodeNames.add(str(node['name']));
    });
    if (nodeNames.size !== nodes.length) throw fail('duplicate node names', 'nodes', `${nodes.length} unique names`, nodeNames.size);
    return this;
  }

  private checkNode(node: T): void {
    for (const group of ['inputs', 'outputs']) {
      arr(node[group]).forEach((a, j) => within(`${group}[${j}].value`, () => this.checkArgument((a as T)['value'] as T | null)));
    }
    this.checkMetadata(node['metadata'] as T | null, 'metadata');
    arr(node['unpack_metadata']).forEach((u, j) => this.checkMetadata((u as T)['metadata'] as T | null, `unpack_metadata[${j}].metadata`));
  }

  checkMetadata(meta: T | null | undefined, path: string): void {
    if (meta === null || meta === undefined) return;
    const custom = meta['custom'] as T | null;
    if (custom !== null && custom !== undefined) within(`${path}.custom`, () => this.prog.values.checkMap(custom, 1));
    const extra = arr(meta['extra']);  // sorted by key: pt2f_keys, checkFieldRules
    extra.forEach((e, j) => checkExtraMetaKey(str((e as T)['key'])!, `${path}.extra[${j}].key`));
  }

  /** One ArgumentValue member: set, and every name it uses declared in this graph. */
  checkArgument(v: T | null): void {
    const k = kind(v);
    if (k === 'TensorArgument') {
      const name = str(v!['name']);
      if (name === null || !this.tensors.has(name)) throw undeclared('tensor', name, 'name');
    } else if (v === null || v === undefined) {
      throw fail('union value is missing');
    } else if (k! in OPTIONAL_NAME) {
      const [scope, what] = OPTIONAL_NAME[k!]!;
      const name = str(v['name']);
      if (name !== null && !this[scope].has(name)) throw undeclared(what, name, 'name');
    } else if (k! in OPTIONAL_NAME_LIST) {
      const [scope, what] = OPTIONAL_NAME_LIST[k!]!;
      arr(v['items']).forEach((item, i) => {
        const name = str((item as T)['name']);
        if (name !== null && !this[scope].has(name)) throw undeclared(what, name, `items[${i}].name`);
      });
    } else if (k === 'TensorListArgument') {
      arr(v['names']).forEach((name, i) => { if (!this.tensors.has(name as string)) throw undeclared('tensor', name as string, `names[${i}]`); });
    } else if (k === 'NestedTensorListArgument') {
      arr(v['lists']).forEach((l, i) => arr((l as T)['names']).forEach((name, j) => {
        if (!this.tensors.has(name as string)) throw undeclared('tensor', name as string, `lists[${i}].names[${j}]`);
      }));
    } else if (k === 'CustomObjArgument') {
      const name = str(v['name']);
      if (name === null || !this.customObjs.has(name)) throw undeclared('custom object', name, 'name');
    } else if (k === 'TokenArgument') {
    } else if (k === 'GraphArgument') {
      const graph = v['graph'] as T | null;
      this.checkMetadata(v['metadata'] as T | null, 'metadata');
      within('graph', () => new GraphCheck(this.prog, graph!, this.depth + 1).check());
    } else if (k === 'TreeSpecArgument') {  // 1.1: a flat_apply node's spec, fetched with get_attr
      const spec = v['spec'] as T | null;
      this.checkMetadata(v['metadata'] as T | null, 'metadata');
      within('spec', () => this.prog.checkTreeSpec(spec!, 0));
    } else if (k === 'MixedListArgument') {  // 1.1: each item is a whole Argument, in this graph's scope
      arr(v['items']).forEach((item, i) => within(`items[${i}].value`, () => this.checkArgument((item as T)['value'] as T | null)));
    } else if (k === 'StringToArgumentMapArgument') {
      arr(v['entries']).forEach((entry, i) => within(`entries[${i}].value`, () => {
        const val = (entry as T)['value'] as T | null;
        if (val === null || val === undefined) throw fail('required field is missing');
        this.checkArgument(val['value'] as T | null);
      }));
    }
  }
}
