/**
 * A module's boundary in the graph: the values its nodes read from outside
 * and the values they write that are read outside. The info panel shows it
 * for module_call_graph entries without a recorded signature (torch records
 * one for the root, and for a submodule only under
 * preserve_module_call_signature), so the table says what flows in and out
 * of every module instead of leaving the columns empty.
 *
 * Parameters, buffers and constants are not inputs here (torch's signatures
 * list activations only). Linear in the graph: one pass over its nodes.
 */
import type { VGraph } from './model.js';

const STATE_ROLES = new Set(['parameter', 'buffer', 'constant']);

export function moduleBoundary(graph: VGraph, fqn: string): { inputs: string[]; outputs: string[] } | null {
  const path = fqn.replace(/@\d+$/, '');
  const inside = new Set<string>();
  const producer = new Map<string, { inside: boolean; state: boolean }>();
  for (const n of graph.nodes) {
    const inMod = n.kind === 'op' && n.modules.some((m) => m.path === path);
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
