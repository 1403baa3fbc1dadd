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
 * here (torch's signatures list activations only). Linear in the graph.
 */
import type { VGraph } from './model.js';

const STATE_ROLES = new Set(['parameter', 'buffer', 'constant']);

export function moduleBoundary(graph: VGraph, fqn: string): { inputs: string[]; outputs: string[] } | null {
  if (fqn === '') {
    const ins = graph.nodes.filter((n) => n.kind === 'input' && n.role === 'user input'); // constant inputs carry no value
    const outs = graph.nodes.filter((n) => n.kind === 'output' && (n.role === 'user output' || n.role === 'loss'));
    return { inputs: ins.flatMap((n) => n.writes), outputs: [...new Set(outs.flatMap((n) => n.reads))] };
  }
  const path = fqn.replace(/@\d+$/, '');
  const below = path + '.';
  const inside = new Set<string>();
  const producer = new Map<string, { inside: boolean; state: boolean }>();
  for (const n of graph.nodes) {
    const inMod = n.kind === 'op' && n.modules.some((m) => m.path === path || m.path.startsWith(below));
    if (inMod) inside.add(n.id);
    for (const w of n.writes) producer.set(w, { inside: inMod, state: n.kind === 'input' && STATE_ROLES.has(n.role ?? '') });
  }
  if (!inside.size) return null;
  const inputs: string[] = [], outputs: string[] = [];
  const seenIn = new Set<string>(), seenOut = new Set<string>();
  for (const n of graph.nodes) {
    const inMod = inside.has(n.id);
    for (const r of n.reads) {
      const p = producer.get(r);
      if (!p) continue;
      if (inMod && !p.inside && !p.state && !seenIn.has(r)) { seenIn.add(r); inputs.push(r); }
      if (!inMod && p.inside && !seenOut.has(r)) { seenOut.add(r); outputs.push(r); }
    }
  }
  return { inputs, outputs };
}
