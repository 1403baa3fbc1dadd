/**
 * A module's boundary in the graph: the values its nodes read from outside
 * and the values they write that are read outside. The info panel shows it
 * for module_call_graph entries whose signature lists no inputs or outputs
 * (torch records them for a submodule only under
 * preserve_module_call_signature, and leaves the root's lists empty), so the
 * table says what flows in and out of every module instead of leaving the
 * columns empty.
 *
 * A module's nodes are those whose nn_module_stack holds its path or a path
 * below it (a ModuleList such as `transformer.h` is never called itself: its
 * boundary is its children's). The root's boundary is the program's user
 * inputs and user outputs. Parameters, buffers and constants are not inputs
 * here (torch's signatures list activations only).
 *
 * All boundaries come from one pass over the graph's edges, each edge
 * touching only the modules of its two ends (their nn_module_stack paths and
 * the paths above them): linear in the graph times the module depth, never
 * modules × nodes (DESIGN principle 10).
 */
import type { VGraph } from './model.js';

const STATE_ROLES = new Set(['parameter', 'buffer', 'constant']);

export interface Boundary { inputs: string[]; outputs: string[] }

/** Boundaries of the module call graph entries `fqns` ("" is the root); a module without nodes is absent. */
export function moduleBoundaries(graph: VGraph, fqns: string[]): Map<string, Boundary> {
  const out = new Map<string, Boundary>();
  const wanted = new Set(fqns.filter((f) => f !== '').map((f) => f.replace(/@\d+$/, '')));
  // The wanted modules each op node is in: its stack's paths and every path above them.
  const within = new Map<string, string[]>();
  for (const n of graph.nodes) {
    if (n.kind !== 'op') continue;
    const mods = new Set<string>();
    for (const m of n.modules) {
      for (let p = m.path; p && !mods.has(p); p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') mods.add(p);
    }
    within.set(n.id, [...mods].filter((p) => wanted.has(p)));
  }
  const producer = new Map<string, { id: string; state: boolean }>();
  for (const n of graph.nodes) for (const w of n.writes) producer.set(w, { id: n.id, state: n.kind === 'input' && STATE_ROLES.has(n.role ?? '') });
  const sets = new Map<string, { ins: Set<string>; outs: Set<string> }>();
  const at = (m: string) => { let x = sets.get(m); if (!x) sets.set(m, (x = { ins: new Set(), outs: new Set() })); return x; };
  for (const mods of within.values()) for (const m of mods) at(m); // every module with nodes has a row
  for (const n of graph.nodes) {
    const here = within.get(n.id) ?? [];
    for (const r of n.reads) {
      const p = producer.get(r);
      if (!p) continue;
      const there = within.get(p.id) ?? [];
      if (!p.state) for (const m of here) if (!there.includes(m)) at(m).ins.add(r);
      for (const m of there) if (!here.includes(m)) at(m).outs.add(r);
    }
  }
  for (const [m, x] of sets) out.set(m, { inputs: [...x.ins], outputs: [...x.outs] });
  if (fqns.includes('')) {
    const ins = graph.nodes.filter((n) => n.kind === 'input' && n.role === 'user input'); // constant inputs carry no value
    const outs = graph.nodes.filter((n) => n.kind === 'output' && (n.role === 'user output' || n.role === 'loss'));
    out.set('', { inputs: ins.flatMap((n) => n.writes), outputs: [...new Set(outs.flatMap((n) => n.reads))] });
  }
  return out;
}
