/**
 * Canvas rendering of a laid-out graph: one <canvas>, no DOM element per node.
 * Pan (drag), zoom (wheel), hit testing, viewport culling; edge labels and
 * node text are drawn only when the zoom makes them readable.
 *
 * Legibility comes first: no text is drawn smaller than it can be read. Where
 * the graph's own text is large enough (node text at least MIN_DETAIL_PX,
 * edge labels at least MIN_EDGE_PX) it is drawn; zoomed out further, only
 * the titles of boxes are drawn, at a fixed on-screen size (overview.ts).
 * The page opens on the whole graph when its text is readable there, or, for
 * a deep model, when every closed box keeps its title there; else on the
 * graph's top at a readable zoom. Edge labels sit where the layout reserved
 * room for them, on a light background.
 */
import type { LayoutResult } from './layout-types.js';
import { edgeText } from './groups.js';
import type { VisibleGraph, VisibleLeaf, VisibleCluster } from './groups.js';
import { TITLE_PX, placeTitles, toScreen } from './overview.js';
import type { PlacedTitle, TitleItem, View } from './overview.js';

export interface Scene {
  graph: VisibleGraph;
  layout: LayoutResult;
  selected: string | null;
  highlighted: Set<string>;
}

const COLORS: Record<string, string> = {
  op: '#e8eef7', hop: '#fde8c8', input: '#d9f2d9', output: '#f7d9d9', parameter: '#e6f0c8', buffer: '#d6ecec',
  constant: '#ececd6', module: '#eadcf5', chunk: '#e3e3e3', branch: '#fff6e6',
};

/** Font sizes in layout units (screen pixels at zoom 1). */
export const FONT = { node: 13, box: 13, sub: 12, edge: 11, cluster: 12 };
/** The smallest on-screen node text the opening view allows, in CSS pixels (Netron draws node text at 11 px and edge labels at 10 px, at its default zoom 1; ours are then 12 and 10.2 px). */
export const MIN_TEXT_PX = 12;
/** Below this on-screen size the graph's own text (nodes, box titles and counts) is not drawn: box titles are drawn at TITLE_PX instead. */
export const MIN_DETAIL_PX = 11;
/** Edge labels smaller than this on screen are not drawn (Netron's edge labels: 10 px). */
export const MIN_EDGE_PX = 10;
/** A deep model opens on its whole graph, titles at TITLE_PX, when it has at least this many closed boxes and all keep their titles. */
const OVERVIEW_BOXES = 8;
/** Average glyph advance of the sans-serif fonts, per pixel of font size (measured on DejaVu Sans and Arial: 0.55-0.6). */
const ADVANCE = 0.6;

export function leafSize(l: VisibleLeaf): { w: number; h: number } {
  if (l.group) return { w: Math.min(340, Math.max(130, l.group.label.length * FONT.box * ADVANCE * 1.1 + 26)), h: 40 }; // bold: wider glyphs
  const n = l.node!;
  const text = n.kind === 'op' ? n.op : `${n.op}: ${n.roleTarget ?? n.name}`;
  return { w: Math.min(260, Math.max(76, text.length * FONT.node * ADVANCE + 18)), h: 32 };
}

/** The width an expanded box's title bar needs. */
export function clusterTitleWidth(c: VisibleCluster): number {
  return Math.min(900, clusterTitle(c).length * FONT.cluster * ADVANCE + 24);
}

function clusterTitle(c: VisibleCluster): string { return `▾ ${c.group.label}  · ${c.group.size} nodes`; }

/** `text` cut to `max` pixels with an ellipsis (never squeezed: squeezed text is unreadable). */
function fitText(ctx: CanvasRenderingContext2D, text: string, max: number): string {
  if (ctx.measureText(text).width <= max) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (ctx.measureText(text.slice(0, mid) + '…').width <= max) lo = mid; else hi = mid - 1; }
  return text.slice(0, lo) + '…';
}

/** The room an edge label takes (its text at FONT.edge plus padding); 0 when there is no label. */
export function labelSize(text: string): { lw: number; lh: number } {
  return text ? { lw: Math.min(240, text.length * FONT.edge * ADVANCE + 8), lh: FONT.edge + 5 } : { lw: 0, lh: 0 };
}

/** The whole graph, centred, at the largest zoom up to 1 that shows all of it. */
export function wholeView(layout: LayoutResult, cw: number, ch: number): View {
  const { width, height } = layout;
  const scale = Math.min(1, cw / Math.max(1, width), ch / Math.max(1, height));
  return { scale, tx: (cw - width * scale) / 2, ty: (ch - height * scale) / 2, width: cw, height: ch };
}

/** Box titles placed for a view (overview.ts): closed boxes first, in graph order, then expanded boxes, outermost first. */
export function boxTitles(graph: VisibleGraph, layout: LayoutResult, v: View, measure: (s: string) => number): (PlacedTitle & { cluster: boolean })[] {
  const { boxes } = layout;
  const items: TitleItem[] = [];
  for (const l of graph.leaves) if (l.group && boxes[l.id]) items.push({ id: l.id, text: `▸ ${l.group.label}`, box: boxes[l.id]!, cluster: false });
  const clusters = new Set<string>();
  for (const c of graph.clusters) if (boxes[c.id]) { clusters.add(c.id); items.push({ id: c.id, text: `▾ ${c.group.label}`, box: boxes[c.id]!, cluster: true }); }
  const obstacles = graph.leaves.filter((l) => boxes[l.id]).map((l) => ({ id: l.id, r: toScreen(boxes[l.id]!, v) }));
  return placeTitles(items, obstacles, v, measure).map((p) => ({ ...p, cluster: clusters.has(p.id) }));
}

/**
 * The opening view: the whole graph when its own text is readable there (node text at least MIN_TEXT_PX);
 * else, for a deep model (at least OVERVIEW_BOXES closed boxes), the whole graph when every closed box keeps
 * its title at TITLE_PX there; else the graph's top (and left) at the zoom that makes node text MIN_TEXT_PX.
 */
export function openingView(graph: VisibleGraph, layout: LayoutResult, cw: number, ch: number, measure: (s: string) => number): View & { overview: boolean } {
  const whole = wholeView(layout, cw, ch);
  if (whole.scale * FONT.node >= MIN_TEXT_PX) return { ...whole, overview: false };
  const closed = graph.leaves.filter((l) => l.group).length;
  if (closed >= OVERVIEW_BOXES && boxTitles(graph, layout, whole, measure).filter((t) => !t.cluster).length === closed) {
    return { ...whole, overview: true };
  }
  const scale = MIN_TEXT_PX / FONT.node, { width, height } = layout;
  return { scale, tx: width * scale <= cw ? (cw - width * scale) / 2 : 10, ty: height * scale <= ch ? (ch - height * scale) / 2 : 10,
    width: cw, height: ch, overview: false };
}

export class Renderer {
  scale = 1;
  tx = 0;
  ty = 0;
  scene: Scene | null = null;
  /** Leaves (nodes and closed boxes) drawn by the last paint, in view. */
  drawnLeaves = 0;
  /**
   * What the last paint drew, for the test hook: the smallest node or box text and the smallest edge
   * label on screen (CSS px; null: none), the closed boxes in view and how many of them have a title.
   */
  drawn = { minTextPx: null as number | null, minEdgePx: null as number | null, boxesInView: 0, boxesTitled: 0 };
  private ctx: CanvasRenderingContext2D;
  private frame = 0;
  onClick: (id: string | null, cluster: boolean) => void = () => {};
  onPaint: () => void = () => {};

  constructor(readonly canvas: HTMLCanvasElement) {
    this.ctx = canvas.getContext('2d')!;
    let drag: { x: number; y: number; moved: boolean } | null = null;
    canvas.addEventListener('mousedown', (e) => { drag = { x: e.clientX, y: e.clientY, moved: false }; });
    window.addEventListener('mousemove', (e) => {
      if (!drag) return;
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
      this.tx += dx; this.ty += dy; drag.x = e.clientX; drag.y = e.clientY;
      if (drag.moved) this.draw();
    });
    window.addEventListener('mouseup', (e) => {
      if (drag && !drag.moved && e.target === canvas) {
        const r = canvas.getBoundingClientRect();
        const hit = this.hit(e.clientX - r.left, e.clientY - r.top);
        this.onClick(hit?.id ?? null, hit?.cluster ?? false);
      }
      drag = null;
    });
    canvas.addEventListener('wheel', (e) => {
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      const mx = e.clientX - r.left, my = e.clientY - r.top;
      const f = Math.exp(-e.deltaY * 0.0015);
      const s = Math.min(4, Math.max(0.02, this.scale * f));
      this.tx = mx - (mx - this.tx) * (s / this.scale);
      this.ty = my - (my - this.ty) * (s / this.scale);
      this.scale = s;
      this.draw();
    }, { passive: false });
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  /**
   * The opening view: the whole graph when it fits at a readable zoom, else
   * its top (and left, when wider than the canvas) at the smallest zoom that
   * keeps node text at MIN_TEXT_PX.
   */
  fit(): void {
    if (!this.scene) return;
    const v = openingView(this.scene.graph, this.scene.layout, this.canvas.clientWidth, this.canvas.clientHeight, this.measure);
    this.scale = v.scale; this.tx = v.tx; this.ty = v.ty;
  }

  /** Width of a box title at TITLE_PX, in CSS pixels. */
  private measure = (t: string): number => {
    const ctx = this.ctx;
    ctx.save();
    ctx.font = `bold ${TITLE_PX}px sans-serif`;
    const w = ctx.measureText(t).width;
    ctx.restore();
    return w;
  };

  private view(): View {
    return { scale: this.scale, tx: this.tx, ty: this.ty, width: this.canvas.clientWidth, height: this.canvas.clientHeight };
  }

  /** Zoomed out: the graph's own text would be too small, box titles are drawn at TITLE_PX. */
  overview(): boolean { return this.scale * FONT.node < MIN_DETAIL_PX; }

  /** Zoom out to show everything (the "fit" button); box titles stay at TITLE_PX. */
  fitAll(): void {
    if (!this.scene) return;
    const v = wholeView(this.scene.layout, this.canvas.clientWidth, this.canvas.clientHeight);
    this.scale = v.scale; this.tx = v.tx; this.ty = v.ty;
  }

  /** Width covered at the canvas's right edge (the side panel, when open). */
  rightInset: () => number = () => 0;

  /** Centre a box in the uncovered part of the view, at a readable zoom. */
  focus(id: string): void {
    const b = this.scene?.layout.boxes[id];
    if (!b) return;
    this.scale = Math.max(this.scale, 1);
    this.tx = (this.canvas.clientWidth - this.rightInset()) / 2 - (b.x + b.w / 2) * this.scale;
    this.ty = this.canvas.clientHeight / 2 - (b.y + b.h / 2) * this.scale;
  }

  /** Bring a box's top into view (an expanded box: its first rows). */
  focusTop(id: string): void {
    const b = this.scene?.layout.boxes[id];
    if (!b) return;
    this.scale = Math.max(this.scale, MIN_TEXT_PX / FONT.node);
    const cw = this.canvas.clientWidth;
    this.tx = b.w * this.scale <= cw ? cw / 2 - (b.x + b.w / 2) * this.scale : 20 - b.x * this.scale;
    this.ty = 20 - b.y * this.scale;
  }

  hit(sx: number, sy: number): { id: string; cluster: boolean } | null {
    if (!this.scene) return null;
    const x = (sx - this.tx) / this.scale, y = (sy - this.ty) / this.scale;
    const { boxes } = this.scene.layout;
    for (const l of this.scene.graph.leaves) {
      const b = boxes[l.id];
      if (b && x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + b.h) return { id: l.id, cluster: false };
    }
    // Clusters: innermost first (later in the list are nested deeper); only the title bar toggles.
    const cs = this.scene.graph.clusters;
    for (let i = cs.length - 1; i >= 0; i--) {
      const b = boxes[cs[i]!.id];
      if (b && x >= b.x && x <= b.x + b.w && y >= b.y && y <= b.y + 24) return { id: cs[i]!.id, cluster: true };
    }
    return null;
  }

  draw(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.paint(); });
  }

  paint(): void {
    const c = this.canvas, ctx = this.ctx;
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth, h = c.clientHeight;
    if (c.width !== Math.round(w * dpr) || c.height !== Math.round(h * dpr)) { c.width = Math.round(w * dpr); c.height = Math.round(h * dpr); }
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fbfbfd';
    ctx.fillRect(0, 0, w, h);
    const sc = this.scene;
    const drawn = { minTextPx: null as number | null, minEdgePx: null as number | null, boxesInView: 0, boxesTitled: 0 };
    this.drawn = drawn;
    if (!sc) { this.drawnLeaves = 0; return; }
    const seen = (px: number) => { drawn.minTextPx = drawn.minTextPx === null ? px : Math.min(drawn.minTextPx, px); };
    ctx.setTransform(dpr * this.scale, 0, 0, dpr * this.scale, dpr * this.tx, dpr * this.ty);
    const x0 = -this.tx / this.scale, y0 = -this.ty / this.scale, x1 = x0 + w / this.scale, y1 = y0 + h / this.scale;
    const inView = (b: { x: number; y: number; w: number; h: number }) => b.x < x1 && b.x + b.w > x0 && b.y < y1 && b.y + b.h > y0;
    const { boxes } = sc.layout;
    const text = !this.overview();
    ctx.textBaseline = 'middle';
    for (const cl of sc.graph.clusters) {
      const b = boxes[cl.id];
      if (!b || !inView(b)) continue;
      this.cluster(cl, b, text, sc);
      if (text) seen(FONT.cluster * this.scale);
    }
    ctx.lineWidth = 1 / Math.max(this.scale, 0.5);
    const labels: [string, number, number][] = [];
    const arrow = (ax: number, ay: number, ang: number) => {
      ctx.beginPath();
      ctx.moveTo(ax, ay);
      ctx.lineTo(ax - 7 * Math.cos(ang - 0.4), ay - 7 * Math.sin(ang - 0.4));
      ctx.lineTo(ax - 7 * Math.cos(ang + 0.4), ay - 7 * Math.sin(ang + 0.4));
      ctx.fill();
    };
    sc.graph.edges.forEach((e, i) => {
      const hot = sc.selected === e.from || sc.selected === e.to;
      // Symbolic sizes (SymInt, SymFloat, SymBool) feed many nodes across the model: drawn lighter, so the
      // tensor data flow stays the first thing one reads.
      const color = hot ? '#d9480f' : e.label.startsWith('Sym') ? '#c9ced8' : '#8a94a6';
      if (e.elided) {
        // Another reader of a fan: a short stub into the reader, or, when one end is selected, a straight line.
        const s = boxes[e.from], t = boxes[e.to];
        if (!s || !t) return;
        ctx.strokeStyle = color; ctx.fillStyle = color;
        const tx = t.x + t.w - 14, ty = t.y;
        const sx = hot ? s.x + s.w / 2 : tx, sy = hot ? s.y + s.h : ty - 14;
        if (!inView({ x: Math.min(sx, tx), y: Math.min(sy, ty), w: Math.abs(tx - sx) + 1, h: Math.abs(ty - sy) + 1 })) return;
        ctx.setLineDash(hot ? [] : [2, 2]);
        ctx.beginPath(); ctx.moveTo(sx, sy); ctx.lineTo(tx, ty); ctx.stroke();
        ctx.setLineDash([]);
        arrow(tx, ty, Math.atan2(ty - sy, tx - sx));
        return;
      }
      const pts = sc.layout.edges[i];
      if (!pts || pts.length < 4) return;
      let minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity;
      for (let k = 0; k < pts.length; k += 2) { minx = Math.min(minx, pts[k]!); maxx = Math.max(maxx, pts[k]!); miny = Math.min(miny, pts[k + 1]!); maxy = Math.max(maxy, pts[k + 1]!); }
      if (!inView({ x: minx, y: miny, w: maxx - minx, h: maxy - miny })) return;
      ctx.strokeStyle = color;
      ctx.setLineDash(e.dashed ? [4, 3] : []);
      ctx.beginPath();
      ctx.moveTo(pts[0]!, pts[1]!);
      for (let k = 2; k < pts.length; k += 2) ctx.lineTo(pts[k]!, pts[k + 1]!);
      ctx.stroke();
      ctx.setLineDash([]);
      const n = pts.length;
      ctx.fillStyle = color;
      arrow(pts[n - 2]!, pts[n - 1]!, Math.atan2(pts[n - 1]! - pts[n - 3]!, pts[n - 2]! - pts[n - 4]!));
      const at = sc.layout.labels?.[i];
      const label = edgeText(e);
      if (label && at && this.scale * FONT.edge >= MIN_EDGE_PX) labels.push([label, at[0]!, at[1]!]);
    });
    // Labels after all edges, each on its own background where the layout left room for it.
    ctx.font = `${FONT.edge}px ui-monospace, monospace`;
    ctx.textAlign = 'center';
    for (const [label, x, y] of labels) {
      const w = Math.min(ctx.measureText(label).width, 246) + 6;
      ctx.fillStyle = '#fbfbfdee';
      ctx.fillRect(x - w / 2, y - FONT.edge / 2 - 2, w, FONT.edge + 4);
      ctx.fillStyle = '#3d4658';
      ctx.fillText(fitText(ctx, label, 240), x, y);
      const px = FONT.edge * this.scale;
      drawn.minEdgePx = drawn.minEdgePx === null ? px : Math.min(drawn.minEdgePx, px);
    }
    ctx.textAlign = 'left';
    let count = 0;
    for (const l of sc.graph.leaves) {
      const b = boxes[l.id];
      if (!b || !inView(b)) continue;
      this.leaf(l, b, text, sc);
      count++;
      if (l.group) { drawn.boxesInView++; if (text) drawn.boxesTitled++; }
      if (text) seen((l.group ? FONT.sub : FONT.node) * this.scale);
    }
    this.drawnLeaves = count;
    if (!text) {
      // Zoomed out: box titles at a fixed on-screen size, where they fit.
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.font = `bold ${TITLE_PX}px sans-serif`;
      for (const t of boxTitles(sc.graph, sc.layout, this.view(), this.measure)) {
        if (!t.inside) { ctx.fillStyle = '#fbfbfde6'; ctx.fillRect(t.x, t.y, t.w, t.h); }
        ctx.fillStyle = t.cluster ? '#3b2f4a' : '#1d2433';
        ctx.fillText(t.text, t.x + 2, t.y + t.h / 2);
        seen(TITLE_PX);
        if (!t.cluster) drawn.boxesTitled++;
      }
    }
    this.onPaint();
  }

  private cluster(cl: VisibleCluster, b: { x: number; y: number; w: number; h: number }, text: boolean, sc: Scene): void {
    const ctx = this.ctx;
    ctx.fillStyle = (COLORS[cl.group.kind] ?? '#eee') + '66';
    ctx.strokeStyle = sc.highlighted.has(cl.id) ? '#d9480f' : '#9b8bb0';
    ctx.lineWidth = 1;
    roundRect(ctx, b.x, b.y, b.w, b.h, 8);
    ctx.fill();
    ctx.stroke();
    if (text) {
      ctx.fillStyle = '#3b2f4a';
      ctx.font = `bold ${FONT.cluster}px sans-serif`;
      ctx.fillText(fitText(ctx, clusterTitle(cl), b.w - 14), b.x + 8, b.y + 14);
    }
  }

  private leaf(l: VisibleLeaf, b: { x: number; y: number; w: number; h: number }, text: boolean, sc: Scene): void {
    const ctx = this.ctx;
    let color: string, title: string, sub = '';
    if (l.group) {
      color = COLORS[l.group.kind] ?? '#eee';
      title = `▸ ${l.group.label}`;
      sub = `${l.group.size} nodes`;
    } else {
      const n = l.node!;
      color = n.kind === 'op' ? (n.subgraphs.length ? COLORS.hop! : COLORS.op!)
        : n.kind === 'output' ? COLORS.output! : (COLORS[n.role ?? ''] ?? COLORS.input!);
      title = n.kind === 'op' ? n.op : `${n.op}: ${n.roleTarget ?? n.name}`;
    }
    ctx.fillStyle = color;
    const sel = sc.selected === l.id, hl = sc.highlighted.has(l.id);
    ctx.strokeStyle = sel ? '#d9480f' : hl ? '#f59f00' : '#6b7a90';
    ctx.lineWidth = sel || hl ? 3 : 1;
    roundRect(ctx, b.x, b.y, b.w, b.h, l.group ? 6 : 4);
    ctx.fill();
    ctx.stroke();
    if (l.group) { // stacked look for collapsed boxes
      ctx.lineWidth = 1;
      ctx.strokeStyle = '#6b7a90';
      ctx.beginPath(); ctx.moveTo(b.x + 4, b.y + b.h + 3); ctx.lineTo(b.x + b.w + 3, b.y + b.h + 3); ctx.lineTo(b.x + b.w + 3, b.y + 4); ctx.stroke();
    }
    if (!text) return;
    ctx.fillStyle = '#1d2433';
    ctx.font = l.group ? `bold ${FONT.box}px sans-serif` : `${FONT.node}px sans-serif`;
    ctx.fillText(fitText(ctx, title, b.w - 14), b.x + 8, b.y + (sub ? 14 : b.h / 2));
    if (sub) { ctx.font = `${FONT.sub}px sans-serif`; ctx.fillStyle = '#5a6478'; ctx.fillText(fitText(ctx, sub, b.w - 14), b.x + 8, b.y + 29); }
  }
}

function roundRect(ctx: CanvasRenderingContext2D, x: number, y: number, w: number, h: number, r: number): void {
  ctx.beginPath();
  ctx.moveTo(x + r, y);
  ctx.arcTo(x + w, y, x + w, y + h, r);
  ctx.arcTo(x + w, y + h, x, y + h, r);
  ctx.arcTo(x, y + h, x, y, r);
  ctx.arcTo(x, y, x + w, y, r);
  ctx.closePath();
}
