/**
 * The layout worker: runs dagre (a layered, Sugiyama-style layout) off the
 * main thread, so the page keeps painting and responding while a large
 * expansion is laid out. Built into a separate bundle and started from a
 * Blob URL, so the single HTML file works from file:// too.
 */
import dagre from '@dagrejs/dagre';
import type { LayoutRequest, LayoutResult } from './layout-types.js';

function layout(req: LayoutRequest): LayoutResult {
  const g = new dagre.graphlib.Graph({ compound: true, multigraph: false });
  g.setGraph({ rankdir: 'TB', nodesep: 18, ranksep: 36, edgesep: 8, marginx: 20, marginy: 20 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const c of req.clusters) g.setNode(c.id, { label: c.id, paddingTop: 26, paddingLeft: 10, paddingRight: 10, paddingBottom: 10 });
  for (const n of req.nodes) g.setNode(n.id, { width: n.w, height: n.h });
  for (const c of req.clusters) if (c.parent) g.setParent(c.id, c.parent);
  for (const n of req.nodes) if (n.parent) g.setParent(n.id, n.parent);
  for (const e of req.edges) g.setEdge(e.from, e.to, { minlen: 1 });
  dagre.layout(g);
  const boxes: LayoutResult['boxes'] = {};
  for (const id of g.nodes()) {
    const n = g.node(id) as { x: number; y: number; width: number; height: number };
    if (n) boxes[id] = { x: n.x - n.width / 2, y: n.y - n.height / 2, w: n.width, h: n.height };
  }
  const edges: LayoutResult['edges'] = req.edges.map((e) => {
    const d = g.edge(e.from, e.to) as { points?: { x: number; y: number }[] } | undefined;
    return (d?.points ?? []).flatMap((p) => [p.x, p.y]);
  });
  const gg = g.graph() as { width?: number; height?: number };
  return { seq: req.seq, boxes, edges, width: gg.width ?? 0, height: gg.height ?? 0 };
}

self.onmessage = (ev: MessageEvent<LayoutRequest>) => {
  const t0 = performance.now();
  try {
    const res = layout(ev.data);
    res.ms = performance.now() - t0;
    (self as unknown as Worker).postMessage(res);
  } catch (e) {
    (self as unknown as Worker).postMessage({ seq: ev.data.seq, error: String((e as Error)?.stack ?? e) });
  }
};
