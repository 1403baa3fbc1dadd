/**
 * The layout itself: dagre (a layered, Sugiyama-style layout), one flat
 * layout per expanded box, bottom up. Shared by the worker (large
 * expansions, off the main thread) and the page (small layouts, run
 * synchronously so the first paint needs no round trip: a one-shot
 * headless screenshot, whose virtual clock does not wait for workers,
 * shows the drawn graph).
 *
 * Expanded boxes are laid out bottom up, one flat dagre layout per box over
 * its direct children (a child box is a node as big as its own layout);
 * edges are lifted to the box holding both ends. dagre's compound mode over
 * the whole nested graph gives the same picture but took about a minute for
 * GPT-2's default view; many small flat layouts take milliseconds. An edge
 * label is given to dagre as a label node of its measured size, so labels
 * get their own place and never overlap boxes or each other.
 */
import dagre from '@dagrejs/dagre';
import type { LayoutRequest, LayoutResult } from './layout-types.js';

const PAD = { top: 26, side: 10, bottom: 10 };
type Box = { x: number; y: number; w: number; h: number };

export function layout(req: LayoutRequest): LayoutResult {
  const parent = new Map<string, string | null>();
  const size = new Map<string, { w: number; h: number }>();
  const kids = new Map<string | null, string[]>();
  const minW = new Map(req.clusters.map((c) => [c.id, c.minW ?? 0]));
  const push = (p: string | null, id: string) => { const a = kids.get(p); if (a) a.push(id); else kids.set(p, [id]); };
  for (const c of req.clusters) { parent.set(c.id, c.parent); push(c.parent, c.id); }
  for (const n of req.nodes) { parent.set(n.id, n.parent); size.set(n.id, { w: n.w, h: n.h }); push(n.parent, n.id); }
  const chain = (id: string): (string | null)[] => {
    const out: (string | null)[] = [id];
    for (let p = parent.get(id) ?? null; ; p = parent.get(p!) ?? null) { out.push(p); if (p === null) break; }
    return out;
  };
  // Lift every edge to the box holding both ends.
  const local = new Map<string | null, Map<string, [string, string]>>();
  const lifted: { c: string | null; a: string; b: string }[] = [];
  // The label each local edge carries: the first edge lifted onto it that has one.
  const labelOf = new Map<string, { edge: number; w: number; h: number }>();
  req.edges.forEach((e, idx) => {
    if (e.skip) { lifted.push({ c: null, a: e.from, b: e.to }); return; }
    const ca = chain(e.from), cb = chain(e.to);
    const setB = new Set(cb);
    let i = 0;
    while (!setB.has(ca[i]!)) i++;
    const c = ca[i]!;
    const a = ca[i - 1] as string | undefined;
    const b = cb[cb.indexOf(c) - 1] as string | undefined;
    if (!a || !b || a === b) { lifted.push({ c, a: a ?? e.from, b: b ?? e.to }); return; }
    let m = local.get(c);
    if (!m) local.set(c, (m = new Map()));
    const key = `${a}\u0000${b}`;
    m.set(key, [a, b]);
    lifted.push({ c, a, b });
    if (e.lw && !labelOf.has(key)) labelOf.set(key, { edge: idx, w: e.lw, h: e.lh ?? 14 });
  });
  // Bottom up: children before their box (clusters come parents first in the request).
  const rel = new Map<string, Box>();
  const labelAt = new Map<number, { c: string | null; x: number; y: number }>();
  const routes = new Map<string, number[]>();
  const layBox = (c: string | null) => {
    const g = new dagre.graphlib.Graph({ multigraph: false });
    g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 30, edgesep: 8, marginx: 0, marginy: 0 });
    g.setDefaultEdgeLabel(() => ({}));
    for (const k of kids.get(c) ?? []) { const s = size.get(k)!; g.setNode(k, { width: s.w, height: s.h }); }
    for (const [a, b] of local.get(c)?.values() ?? []) {
      const l = labelOf.get(`${a}\u0000${b}`);
      g.setEdge(a, b, l ? { width: l.w, height: l.h, labelpos: 'c' } : {});
    }
    dagre.layout(g);
    let w = 0, h = 0;
    for (const k of kids.get(c) ?? []) {
      const n = g.node(k) as { x: number; y: number; width: number; height: number };
      rel.set(k, { x: n.x - n.width / 2, y: n.y - n.height / 2, w: n.width, h: n.height });
      w = Math.max(w, n.x + n.width / 2); h = Math.max(h, n.y + n.height / 2);
    }
    for (const [a, b] of local.get(c)?.values() ?? []) {
      const d = g.edge(a, b) as { points?: { x: number; y: number }[]; x?: number; y?: number } | undefined;
      routes.set(`${a}\u0000${b}`, (d?.points ?? []).flatMap((p) => [p.x, p.y]));
      const l = labelOf.get(`${a}\u0000${b}`);
      if (l && d?.x !== undefined && d.y !== undefined) labelAt.set(l.edge, { c, x: d.x, y: d.y });
    }
    if (c !== null) size.set(c, { w: Math.max(w + 2 * PAD.side, 160, minW.get(c) ?? 0), h: h + PAD.top + PAD.bottom });
    return { w, h };
  };
  for (let i = req.clusters.length - 1; i >= 0; i--) layBox(req.clusters[i]!.id);
  const top = layBox(null);
  // Top down: absolute positions.
  const boxes: Record<string, Box> = {};
  const origin = new Map<string | null, { x: number; y: number }>([[null, { x: 20, y: 20 }]]);
  const clusterIds = new Set(req.clusters.map((x) => x.id));
  const place = (c: string | null) => {
    const o = origin.get(c)!;
    for (const k of kids.get(c) ?? []) {
      const r = rel.get(k)!;
      boxes[k] = { x: o.x + r.x, y: o.y + r.y, w: r.w, h: r.h };
      if (clusterIds.has(k)) {
        origin.set(k, { x: o.x + r.x + PAD.side, y: o.y + r.y + PAD.top });
        place(k);
      }
    }
  };
  place(null);
  const edges = req.edges.map((e, i) => {
    const s = boxes[e.from], t = boxes[e.to];
    if (!s || !t || e.skip) return [];
    const l = lifted[i]!;
    const o = origin.get(l.c) ?? { x: 20, y: 20 };
    const mid = routes.get(`${l.a}\u0000${l.b}`) ?? [];
    const pts = [s.x + s.w / 2, s.y + s.h];
    for (let k = 2; k + 3 < mid.length; k += 2) pts.push(o.x + mid[k]!, o.y + mid[k + 1]!);
    pts.push(t.x + t.w / 2, t.y);
    return pts;
  });
  const labels = req.edges.map((_, i) => {
    const at = labelAt.get(i);
    if (!at) return null;
    const o = origin.get(at.c) ?? { x: 20, y: 20 };
    return [o.x + at.x, o.y + at.y];
  });
  return { seq: req.seq, boxes, edges, labels, width: top.w + 40, height: top.h + 40 };
}

