/**
 * Hierarchical collapse: the tree of boxes (modules, higher-order ops and their
 * subgraphs, and synthetic chunks of long flat runs) and the small graph that is
 * actually laid out for the current set of expanded boxes.
 *
 * Only this graph goes to the layout worker, so a 20,000-node program shown
 * collapsed is a layout of a few dozen boxes.
 */
import type { VGraph, VNode, VProgram } from './model.js';

export type GroupKind = 'root' | 'module' | 'chunk' | 'hop' | 'branch';

export interface Group {
  id: string;
  kind: GroupKind;
  label: string;
  /** Module FQN (modules), subgraph name (branches). */
  path: string;
  parent: Group | null;
  children: Item[];
  /** Op nodes below this group, all levels. */
  size: number;
  expanded: boolean;
}
export type Item = { group: Group } | { node: VNode };

/** Groups with more direct children than this are split into chunks. */
const CHUNK = 40;
/**
 * A box whose children are mostly module boxes shows up to this many before they are packed into chunks:
 * a 48-layer model shows its 48 blocks, not two chunks named after their first and last node.
 */
const MAX_MODULE_CHILDREN = 96;

export class Hierarchy {
  readonly root: Group;
  readonly groups = new Map<string, Group>();
  /** The innermost group holding each node. */
  readonly owner = new Map<string, Group>();
  /** Value name (qualified by graph) -> producing node id. */
  readonly producer = new Map<string, string>();
  readonly nodes = new Map<string, VNode>();
  /** node id -> graph it belongs to. */
  readonly graphOf = new Map<string, VGraph>();
  private seq = 0;

  constructor(readonly program: VProgram) {
    this.root = this.group('root', 'root', program.name, '', null);
    this.addGraph(program.graph, this.root, true);
    this.chunkAll(this.root);
    this.sizeOf(this.root);
  }

  /** A new box; `attach`: add it to its parent's children now (module boxes are added at their first node). */
  private group(id: string, kind: GroupKind, label: string, path: string, parent: Group | null, attach = true): Group {
    const g: Group = { id, kind, label, path, parent, children: [], size: 0, expanded: false };
    this.groups.set(id, g);
    if (parent && attach) parent.children.push({ group: g });
    return g;
  }

  private addGraph(graph: VGraph, home: Group, useModules: boolean): void {
    const byPath = new Map<string, Group>();
    const attached = new Set<Group>();
    // A module box takes its place among its parent's children where its first op node is, so the
    // children stay in graph order and a chunk of loose nodes never spans a module (GPT-2's attention
    // mask, before the blocks, and the view after ln_f stay apart).
    const moduleGroup = (mods: { path: string; type: string }[], attach: boolean): Group => {
      let g = home;
      for (const m of mods) {
        let next = byPath.get(m.path);
        if (!next) {
          const short = m.type.split('.').pop() ?? m.type;
          next = this.group(`${home.id}/m:${m.path}`, 'module', `${m.path} (${short})`, m.path, g, false);
          byPath.set(m.path, next);
        }
        if (attach && !attached.has(next)) { attached.add(next); g.children.push({ group: next }); }
        g = next;
      }
      return g;
    };
    // Module boxes are created first, so placeholders can join the module owning their parameter;
    // each is attached at its first op node below.
    if (useModules) for (const n of graph.nodes) if (n.kind === 'op') moduleGroup(n.modules, false);
    for (const n of graph.nodes) {
      this.nodes.set(n.id, n);
      this.graphOf.set(n.id, graph);
      for (const w of n.writes) this.producer.set(`${graph.id}|${w}`, n.id);
      let g = home;
      if (useModules && n.kind === 'op') g = moduleGroup(n.modules, true);
      else if (useModules && n.roleTarget && n.kind === 'input') {
        // A parameter placeholder sits in the module that owns it ("h.0.attn.c_attn.weight" -> "h.0.attn.c_attn").
        const parts = n.roleTarget.split('.');
        for (let k = parts.length - 1; k > 0; k--) {
          const m = byPath.get(parts.slice(0, k).join('.'));
          if (m) { g = m; break; }
        }
      }
      if (n.subgraphs.length) {
        const hop = this.group(`${n.id}/hop`, 'hop', n.name === n.op ? n.op : `${n.op} ${n.name}`, n.name, g);
        hop.children.push({ node: n });
        this.owner.set(n.id, hop);
        for (const s of n.subgraphs) {
          const br = this.group(`${n.id}/sub:${s.name}`, 'branch', s.name, s.name, hop);
          this.addGraph(s.graph, br, false);
        }
      } else {
        g.children.push({ node: n });
        this.owner.set(n.id, g);
      }
    }
  }

  /**
   * Keeps boxes small: when a box has more than CHUNK direct children, runs of
   * consecutive loose nodes between its sub-boxes become chunk boxes, and if
   * that is not enough, all children are packed into nested chunks of CHUNK.
   */
  private chunkAll(g: Group): void {
    for (const c of g.children) if ('group' in c) this.chunkAll(c.group);
    if (g.children.length <= CHUNK) return;
    const out: Item[] = [];
    let run: Item[] = [];
    const flush = () => {
      if (run.length >= 4) out.push(...this.pack(g, run));
      else out.push(...run);
      run = [];
    };
    for (const c of g.children) {
      if ('node' in c && c.node.kind === 'op') run.push(c);
      else { flush(); out.push(c); }
    }
    flush();
    g.children = out;
    const boxes = g.children.filter((c) => 'group' in c && c.group.kind === 'module').length;
    if (g.children.length > (2 * boxes >= g.children.length ? MAX_MODULE_CHILDREN : CHUNK)) g.children = this.pack(g, g.children);
  }

  /** Packs items into chunk boxes of at most CHUNK items, nested until at most CHUNK boxes remain. */
  private pack(parent: Group, items: Item[]): Item[] {
    if (items.length <= CHUNK) return [{ group: this.chunk(parent, items) }];
    let level = items;
    while (level.length > CHUNK) {
      const next: Item[] = [];
      for (let i = 0; i < level.length; i += CHUNK) {
        const slice = level.slice(i, i + CHUNK);
        next.push(slice.length === 1 ? slice[0]! : { group: this.chunk(parent, slice) });
      }
      level = next;
    }
    return level;
  }

  private chunk(parent: Group, items: Item[]): Group {
    const id = `${parent.id}/c${this.seq++}`;
    const c: Group = { id, kind: 'chunk', label: '', path: '', parent, children: items, size: 0, expanded: false };
    for (const it of items) {
      if ('group' in it) it.group.parent = c;
      else this.owner.set(it.node.id, c);
    }
    this.groups.set(id, c);
    return c;
  }

  private sizeOf(g: Group): number {
    let n = 0;
    let first = '', last = '';
    for (const c of g.children) {
      if ('group' in c) n += this.sizeOf(c.group);
      else if (c.node.kind === 'op') n++;
    }
    g.size = n;
    if (g.kind === 'chunk') {
      const names: string[] = [];
      const walk = (x: Group) => { for (const c of x.children) { if ('group' in c) walk(c.group); else names.push(c.node.name); } };
      walk(g);
      first = names[0] ?? ''; last = names[names.length - 1] ?? '';
      g.label = `${first} … ${last}`;
      if (g.parent && g.parent.kind !== 'root' && g.parent.kind !== 'chunk') g.label = `${g.parent.path || g.parent.label}: ${g.label}`;
    }
    return n;
  }

  /**
   * The default view: expand one level of boxes at a time, a whole level or
   * nothing, while the number of visible boxes stays within `budget`. Sibling
   * blocks (h.0 ... h.11) are therefore all open or all closed; a 48-layer model opens on its 48 blocks.
   */
  expandDefault(budget = 72): void {
    for (const g of this.groups.values()) g.expanded = false;
    this.root.expanded = true;
    let visible = this.root.children.length;
    let level: Group[] = this.root.children.filter((c): c is { group: Group } => 'group' in c).map((c) => c.group);
    while (level.length) {
      const extra = level.reduce((n, g) => n + g.children.length - 1, 0);
      if (visible + extra > budget) break;
      visible += extra;
      const next: Group[] = [];
      for (const g of level) {
        g.expanded = true;
        for (const c of g.children) if ('group' in c) next.push(c.group);
      }
      level = next;
    }
  }

  /** The box a node is drawn in: its outermost collapsed ancestor, or the node itself. */
  representative(nodeId: string): string {
    let rep: string = nodeId;
    for (let g: Group | null = this.owner.get(nodeId) ?? null; g; g = g.parent) {
      if (!g.expanded) rep = g.id;
    }
    return rep;
  }

  /** Expand every ancestor of a node so it is drawn on its own. */
  reveal(nodeId: string): void {
    for (let g: Group | null = this.owner.get(nodeId) ?? null; g; g = g.parent) g.expanded = true;
  }

  /** The graph to lay out: leaves (nodes and collapsed boxes), clusters (expanded boxes) and edges. */
  visible(): VisibleGraph {
    const leaves: VisibleLeaf[] = [];
    const clusters: VisibleCluster[] = [];
    const walk = (g: Group, parent: string | null) => {
      for (const c of g.children) {
        if ('node' in c) {
          leaves.push({ id: c.node.id, parent, node: c.node, group: null });
        } else if (c.group.expanded) {
          clusters.push({ id: c.group.id, parent, group: c.group });
          walk(c.group, c.group.id);
        } else {
          leaves.push({ id: c.group.id, parent, node: null, group: c.group });
        }
      }
    };
    walk(this.root, null);
    const edges = new Map<string, VisibleEdge>();
    // Leaves reading each value (in graph order), for the fan-out rule below.
    const readers = new Map<string, string[]>();
    const labels = new Map<string, string>();
    for (const n of this.nodes.values()) {
      const graph = this.graphOf.get(n.id)!;
      const to = this.representative(n.id);
      for (const r of n.reads) {
        const src = this.producer.get(`${graph.id}|${r}`);
        if (!src) continue;
        const from = this.representative(src);
        if (from === to) continue;
        const vkey = `${graph.id}|${r}`;
        const rs = readers.get(vkey);
        if (!rs) readers.set(vkey, [to]);
        else if (!rs.includes(to)) rs.push(to);
        const key = `${from}>${to}`;
        const e = edges.get(key);
        if (e) { e.count++; if (!e.values.includes(vkey)) { e.values.push(vkey); labels.set(vkey, typeText(graph, r)); } continue; }
        const label = typeText(graph, r);
        labels.set(vkey, label);
        edges.set(key, { from, to, label, count: 1, values: [vkey] });
      }
      // A higher-order op feeds its subgraphs' placeholders (drawn dashed).
      for (const s of n.subgraphs) {
        for (const sn of s.graph.nodes) {
          if (sn.kind !== 'input') continue;
          const from = this.representative(n.id), t = this.representative(sn.id);
          if (from === t) continue;
          const key = `${from}>${t}`;
          if (!edges.has(key)) edges.set(key, { from, to: t, label: '', count: 1, dashed: true, values: [] });
        }
      }
    }
    const out = [...edges.values()];
    bundleFans(out, readers, labels, leaves.map((l) => l.id));
    quietRepeatedLabels(out, leaves);
    return { leaves, clusters, edges: out };
  }
}

/** A value's type as edges show it ("f32[1, s0, 768]", "SymInt s0"). */
function typeText(graph: VGraph, name: string): string {
  const v = graph.values.get(name);
  return v ? `${v.dtype}${v.dtype.startsWith('Sym') ? ' ' : ''}${v.shape}` : name;
}

/** A value read by at least this many boxes is a fan: drawn as one edge with a count. */
export const FAN_MIN = 4;

/**
 * One value read by many boxes (GPT-2's attention mask and its sequence length, read by every block) is
 * drawn once: the edge to its first reader carries the count ("to 12"), the others are elided (not laid
 * out, drawn as a short stub on the reader), so a fan of long edges no longer pushes the blocks sideways.
 * An edge that also carries a value that is not a fan stays drawn.
 */
function bundleFans(edges: VisibleEdge[], readers: Map<string, string[]>, labels: Map<string, string>, order: string[]): void {
  const rank = new Map(order.map((id, i) => [id, i]));
  const fans = new Set<string>();
  for (const [v, rs] of readers) if (rs.length >= FAN_MIN) fans.add(v);
  if (!fans.size) return;
  // The edge each fan is drawn as: the one to its first reader.
  const drawnAs = new Map<string, VisibleEdge>();
  const byRank = [...edges].sort((a, b) => (rank.get(a.to) ?? 0) - (rank.get(b.to) ?? 0));
  for (const e of byRank) for (const v of e.values) if (fans.has(v) && !drawnAs.has(v)) drawnAs.set(v, e);
  for (const e of edges) {
    const fanValues = e.values.filter((v) => fans.has(v));
    if (!fanValues.length) continue;
    const mine = fanValues.filter((v) => drawnAs.get(v) === e);
    if (!mine.length) { if (fanValues.length === e.values.length) e.elided = true; continue; }
    const widest = mine.reduce((a, b) => (readers.get(b)!.length > readers.get(a)!.length ? b : a));
    e.fan = readers.get(widest)!.length;
    e.fanLabel = labels.get(widest) ?? '';
  }
}

/**
 * Along a chain of sibling boxes (h.0 -> h.1 -> ... -> h.11) every edge carries the same type: its label
 * is shown on the first edge only, so the chain packs tightly (the label rows are gone) and reads as one.
 */
function quietRepeatedLabels(edges: VisibleEdge[], leaves: VisibleLeaf[]): void {
  const parent = new Map(leaves.map((l) => [l.id, l.parent]));
  const into = new Map<string, VisibleEdge[]>();
  for (const e of edges) if (!e.elided) { const a = into.get(e.to); if (a) a.push(e); else into.set(e.to, [e]); }
  for (const e of edges) {
    if (e.elided || !e.label || e.fan) continue;
    const before = (into.get(e.from) ?? []).filter((x) => !x.fan && !x.dashed);
    if (before.length !== 1) continue;
    const prev = before[0]!;
    if (prev.label === e.label && prev.count === e.count && parent.get(prev.from) === parent.get(e.to) && parent.get(e.from) === parent.get(e.to)) e.quiet = true;
  }
}

export interface VisibleLeaf { id: string; parent: string | null; node: VNode | null; group: Group | null }
export interface VisibleCluster { id: string; parent: string | null; group: Group }
/**
 * count: reads between the two leaves; values: the values it carries (graph|name); fan, fanLabel: the
 * number of boxes reading a value the edge stands for as a fan, and that value's type; elided: another edge of a fan (not laid out);
 * quiet: its label repeats the one on the edge above in a chain (not shown).
 */
export interface VisibleEdge {
  from: string; to: string; label: string; count: number; dashed?: boolean;
  values: string[]; fan?: number; fanLabel?: string; elided?: boolean; quiet?: boolean;
}
/** The text drawn on an edge ('' for none). */
export function edgeText(e: VisibleEdge): string {
  if (e.elided || e.quiet || !e.label) return '';
  if (e.fan) return e.values.length === 1 ? `${e.label} · to ${e.fan}` : `${e.label} (+${e.count - 1}) · ${e.fanLabel} to ${e.fan}`;
  return e.count > 1 ? `${e.label} (+${e.count - 1})` : e.label;
}
export interface VisibleGraph { leaves: VisibleLeaf[]; clusters: VisibleCluster[]; edges: VisibleEdge[] }
