/**
 * Canvas rendering of a laid-out graph: one <canvas>, no DOM element per node.
 * Pan (drag), zoom (wheel), hit testing, viewport culling; edge labels and
 * node text are drawn only when the zoom makes them readable.
 *
 * Legibility comes first: the page opens at a zoom where node text is at
 * least MIN_TEXT_PX on screen (like Netron, it starts at the top of a tall
 * graph instead of shrinking it to fit), and edge labels sit where the layout
 * reserved room for them, on a light background.
 */
import type { LayoutResult } from './layout-types.js';
import type { VisibleGraph, VisibleLeaf, VisibleCluster } from './groups.js';

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
export const FONT = { node: 13, box: 13, sub: 11, edge: 11, cluster: 12 };
/** The smallest on-screen node text the opening view allows, in CSS pixels (Netron draws node text at 11 px and edge labels at 10 px, at its default zoom 1; ours are then 12 and 10.2 px). */
export const MIN_TEXT_PX = 12;
/** Average glyph advance of the sans-serif fonts, per pixel of font size (measured on DejaVu Sans and Arial: 0.55-0.6). */
const ADVANCE = 0.6;

export function leafSize(l: VisibleLeaf): { w: number; h: number } {
  if (l.group) return { w: Math.min(340, Math.max(130, l.group.label.length * FONT.box * ADVANCE * 1.1 + 26)), h: 48 }; // bold: wider glyphs
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

export class Renderer {
  scale = 1;
  tx = 0;
  ty = 0;
  scene: Scene | null = null;
  /** Leaves (nodes and closed boxes) drawn by the last paint, in view. */
  drawnLeaves = 0;
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
    const { width, height } = this.scene.layout;
    const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
    const whole = Math.min(1, cw / Math.max(1, width), ch / Math.max(1, height));
    this.scale = Math.max(whole, MIN_TEXT_PX / FONT.node);
    this.tx = width * this.scale <= cw ? (cw - width * this.scale) / 2 : 10;
    this.ty = height * this.scale <= ch ? (ch - height * this.scale) / 2 : 10;
  }

  /** Node text height on screen, in CSS pixels, at the current zoom. */
  textPx(): number { return FONT.node * this.scale; }

  /** Edge label height on screen, in CSS pixels. */
  edgeTextPx(): number { return FONT.edge * this.scale; }

  /** Zoom out to show everything, however small. */
  fitAll(): void {
    if (!this.scene) return;
    const { width, height } = this.scene.layout;
    const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
    this.scale = Math.min(1, cw / Math.max(1, width), ch / Math.max(1, height));
    this.tx = (cw - width * this.scale) / 2;
    this.ty = (ch - height * this.scale) / 2;
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
    if (!sc) { this.drawnLeaves = 0; return; }
    ctx.setTransform(dpr * this.scale, 0, 0, dpr * this.scale, dpr * this.tx, dpr * this.ty);
    const x0 = -this.tx / this.scale, y0 = -this.ty / this.scale, x1 = x0 + w / this.scale, y1 = y0 + h / this.scale;
    const inView = (b: { x: number; y: number; w: number; h: number }) => b.x < x1 && b.x + b.w > x0 && b.y < y1 && b.y + b.h > y0;
    const { boxes } = sc.layout;
    const text = this.scale * FONT.node >= 5;
    ctx.textBaseline = 'middle';
    for (const cl of sc.graph.clusters) {
      const b = boxes[cl.id];
      if (!b || !inView(b)) continue;
      this.cluster(cl, b, text, sc);
    }
    ctx.lineWidth = 1 / Math.max(this.scale, 0.5);
    const labels: [string, number, number][] = [];
    sc.graph.edges.forEach((e, i) => {
      const pts = sc.layout.edges[i];
      if (!pts || pts.length < 4) return;
      let minx = Infinity, miny = Infinity, maxx = -Infinity, maxy = -Infinity;
      for (let k = 0; k < pts.length; k += 2) { minx = Math.min(minx, pts[k]!); maxx = Math.max(maxx, pts[k]!); miny = Math.min(miny, pts[k + 1]!); maxy = Math.max(maxy, pts[k + 1]!); }
      if (!inView({ x: minx, y: miny, w: maxx - minx, h: maxy - miny })) return;
      const hot = sc.selected === e.from || sc.selected === e.to;
      // Symbolic sizes (SymInt, SymFloat, SymBool) feed many nodes across the model: drawn lighter, so the
      // tensor data flow stays the first thing one reads.
      ctx.strokeStyle = hot ? '#d9480f' : e.label.startsWith('Sym') ? '#c9ced8' : '#8a94a6';
      ctx.setLineDash(e.dashed ? [4, 3] : []);
      ctx.beginPath();
      ctx.moveTo(pts[0]!, pts[1]!);
      for (let k = 2; k < pts.length; k += 2) ctx.lineTo(pts[k]!, pts[k + 1]!);
      ctx.stroke();
      ctx.setLineDash([]);
      const n = pts.length;
      const ax = pts[n - 2]!, ay = pts[n - 1]!, bx = pts[n - 4]!, by = pts[n - 3]!;
      const ang = Math.atan2(ay - by, ax - bx);
      ctx.fillStyle = ctx.strokeStyle;
      ctx.beginPath();
      ctx.moveTo(ax, ay);
      ctx.lineTo(ax - 7 * Math.cos(ang - 0.4), ay - 7 * Math.sin(ang - 0.4));
      ctx.lineTo(ax - 7 * Math.cos(ang + 0.4), ay - 7 * Math.sin(ang + 0.4));
      ctx.fill();
      const at = sc.layout.labels?.[i];
      if (e.label && at && this.scale * FONT.edge >= 7) labels.push([e.count > 1 ? `${e.label} (+${e.count - 1})` : e.label, at[0]!, at[1]!]);
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
    }
    ctx.textAlign = 'left';
    let drawn = 0;
    for (const l of sc.graph.leaves) {
      const b = boxes[l.id];
      if (!b || !inView(b)) continue;
      this.leaf(l, b, text, sc);
      drawn++;
    }
    this.drawnLeaves = drawn;
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
    ctx.fillText(fitText(ctx, title, b.w - 14), b.x + 8, b.y + (sub ? 16 : b.h / 2));
    if (sub) { ctx.font = `${FONT.sub}px sans-serif`; ctx.fillStyle = '#5a6478'; ctx.fillText(fitText(ctx, sub, b.w - 14), b.x + 8, b.y + 34); }
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
