/**
 * The viewer page: loads the embedded program (or a dropped/opened file),
 * builds the hierarchy, asks the worker for a layout, paints it on canvas,
 * and wires the program switcher, search, side panel and info panel.
 *
 * `window.pt2fViewer` is a small test hook: the browser tests read the
 * rendered state (boxes and their node counts, the panel's text, search
 * results, timings) from it instead of scraping pixels.
 */
import { loadModel } from './model.js';
import type { VModel, VNode, TensorSummary } from './model.js';
import { Hierarchy, edgeText } from './groups.js';
import type { Group, VisibleGraph } from './groups.js';
import { Renderer, leafSize, labelSize, clusterTitleWidth } from './render.js';
import { layout } from './layout.js';
import { moduleBoundaries } from './boundary.js';
import type { LayoutRequest, LayoutResult } from './layout-types.js';

/**
 * Layouts of at most this many leaves run on the main thread, in the same
 * task as the paint: the default view (at most about 60 boxes) is therefore
 * drawn before the page says "ready", and a one-shot headless screenshot
 * (whose virtual clock does not wait for a worker) shows it. Larger
 * expansions go to the worker, so the page stays responsive.
 */
const SYNC_LAYOUT_LEAVES = 150;

declare const __WORKER_SOURCE__: string;

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** Milliseconds: *At are since navigation start, the others durations. */
interface Timings {
  scriptAt?: number; decodeMs?: number; loadMs?: number; hierarchyMs?: number; layoutMs?: number; firstPaintAt?: number;
  lastActionMs?: number;
}

class Viewer {
  model: VModel | null = null;
  hier: Hierarchy | null = null;
  program = 0;
  graph: VisibleGraph | null = null;
  layout: LayoutResult | null = null;
  selected: string | null = null;
  highlighted = new Set<string>();
  error: string | null = null;
  timings: Timings = {};
  searchResults: string[] = [];
  private worker: Worker;
  private seq = 0;
  private pending = new Map<number, (r: LayoutResult) => void>();
  private firstPaintPending = true;
  readonly renderer: Renderer;

  constructor() {
    const url = URL.createObjectURL(new Blob([__WORKER_SOURCE__], { type: 'text/javascript' }));
    this.worker = new Worker(url);
    this.worker.onmessage = (ev: MessageEvent<LayoutResult>) => {
      const done = this.pending.get(ev.data.seq);
      this.pending.delete(ev.data.seq);
      done?.(ev.data);
    };
    this.renderer = new Renderer($('canvas'));
    this.renderer.onClick = (id, cluster) => this.click(id, cluster);
    this.renderer.rightInset = () => { const p = $('panel'); return p.classList.contains('empty') ? 0 : p.offsetWidth; };
    this.renderer.onPaint = () => {
      if (this.firstPaintPending && this.layout) {
        this.firstPaintPending = false;
        this.timings.firstPaintAt = performance.now();
      }
      $('canvas').dataset.drawn = String(this.renderer.drawnLeaves);
    };
  }

  open(bytes: Uint8Array, name: string, shards?: Map<string, Uint8Array>, note = ''): Promise<void> {
    const t0 = performance.now();
    this.error = null;
    $('error').hidden = true;
    try {
      this.model = loadModel(bytes, name, shards);
    } catch (e) {
      this.showError(e);
      return Promise.resolve();
    }
    this.timings.loadMs = performance.now() - t0;
    $('filename').textContent = `${name} · format ${this.model.format}${note ? ' · ' + note : ''}`;
    const sel = $<HTMLSelectElement>('program');
    sel.innerHTML = '';
    this.model.programs.forEach((p, i) => {
      const o = document.createElement('option');
      o.value = String(i);
      o.textContent = `${p.name} (${p.nodeCount} nodes)`;
      sel.appendChild(o);
    });
    sel.hidden = this.model.programs.length < 2;
    $('drop-hint').hidden = true;
    return this.setProgram(0);
  }

  showError(e: unknown): void {
    const err = e as Error;
    this.error = `${err?.name ?? 'Error'}: ${err?.message ?? String(e)}`;
    const box = $('error');
    box.hidden = false;
    box.textContent = `This file cannot be shown.\n\n${this.error}`;
    $('status').textContent = `error: ${this.error}`;
    this.model = null;
    this.hier = null;
    this.graph = null;
    this.layout = null;
    this.renderer.scene = null;
    this.renderer.draw();
  }

  async setProgram(i: number): Promise<void> {
    if (!this.model) return;
    this.program = i;
    $<HTMLSelectElement>('program').value = String(i);
    const p = this.model.programs[i]!;
    const t0 = performance.now();
    this.hier = new Hierarchy(p);
    this.hier.expandDefault();
    this.timings.hierarchyMs = performance.now() - t0;
    this.selected = null;
    this.highlighted.clear();
    this.panel(null);
    this.info();
    await this.relayout(true);
  }

  busy = 0;

  async relayout(fit: boolean): Promise<number> {
    if (!this.hier) return 0;
    this.busy++;
    try { return await this.relayoutNow(fit); } finally { this.busy--; }
  }

  private async relayoutNow(fit: boolean): Promise<number> {
    if (!this.hier) return 0;
    const t0 = performance.now();
    const graph = this.hier.visible();
    const req: LayoutRequest = {
      seq: ++this.seq,
      nodes: graph.leaves.map((l) => ({ id: l.id, parent: l.parent, ...leafSize(l) })),
      clusters: graph.clusters.map((c) => ({ id: c.id, parent: c.parent, minW: clusterTitleWidth(c) })),
      edges: graph.edges.map((e) => ({ from: e.from, to: e.to, ...labelSize(edgeText(e)), ...(e.elided ? { skip: true } : {}) })),
    };
    let res: LayoutResult;
    if (graph.leaves.length <= SYNC_LAYOUT_LEAVES) {
      const t1 = performance.now();
      try { res = layout(req); } catch (e) { res = { seq: req.seq, boxes: {}, edges: [], labels: [], width: 0, height: 0, error: String(e) }; }
      res.ms = performance.now() - t1;
    } else {
      $('status').textContent = `laying out ${graph.leaves.length} boxes…`;
      res = await new Promise<LayoutResult>((resolve) => { this.pending.set(req.seq, resolve); this.worker.postMessage(req); });
    }
    if (res.seq !== this.seq) return 0; // a newer layout superseded this one
    if (res.error) { this.showError(new Error(`layout failed: ${res.error}`)); return 0; }
    this.graph = graph;
    this.layout = res;
    this.timings.layoutMs = res.ms;
    this.renderer.scene = { graph, layout: res, selected: this.selected, highlighted: this.highlighted };
    if (fit) this.renderer.fit();
    else if (this.selected) this.renderer.focus(this.selected);
    this.renderer.paint();
    const ms = performance.now() - t0;
    this.timings.lastActionMs = ms;
    $('status').textContent = `ready · ${graph.leaves.length} boxes, ${graph.edges.length} edges · layout ${Math.round(res.ms ?? 0)} ms · click a node for its details, a box to open or close it`;
    return ms;
  }

  click(id: string | null, cluster: boolean): void {
    if (!this.hier || id === null) { this.select(null); return; }
    const g = this.hier.groups.get(id);
    if (g && cluster) { this.toggle(g.id); return; }
    if (g) { this.select(null); this.toggle(g.id); return; }
    this.select(id);
  }

  async toggle(groupId: string, open?: boolean): Promise<number> {
    const g = this.hier?.groups.get(groupId);
    if (!g || g.kind === 'root') return 0;
    g.expanded = open ?? !g.expanded;
    if (!g.expanded) for (const x of this.descendants(g)) x.expanded = false;
    const ms = await this.relayout(false);
    if (g.expanded) { this.renderer.focusTop(g.id); this.renderer.paint(); }
    return ms;
  }

  private descendants(g: Group): Group[] {
    const out: Group[] = [];
    const walk = (x: Group) => { for (const c of x.children) if ('group' in c) { out.push(c.group); walk(c.group); } };
    walk(g);
    return out;
  }

  select(id: string | null): void {
    this.selected = id;
    if (this.renderer.scene) this.renderer.scene.selected = id;
    this.panel(id ? this.hier?.nodes.get(id) ?? null : null);
    this.renderer.draw();
  }

  /** Reveal a node (expanding its boxes), select it and centre it. */
  async goTo(nodeId: string): Promise<void> {
    if (!this.hier) return;
    this.hier.reveal(nodeId);
    this.selected = nodeId;
    await this.relayout(false);
    this.select(nodeId);
    this.renderer.focus(nodeId);
    this.renderer.draw();
  }

  search(q: string): string[] {
    this.highlighted.clear();
    const out: string[] = [];
    const needle = q.trim().toLowerCase();
    if (this.hier && needle) {
      for (const n of this.hier.nodes.values()) {
        const hay = [n.name, n.op, n.target, n.roleTarget ?? '', ...n.modules.map((m) => m.path)].join('\n').toLowerCase();
        if (hay.includes(needle)) out.push(n.id);
      }
      for (const id of out) this.highlighted.add(this.hier.representative(id));
    }
    this.searchResults = out;
    const list = $('results');
    list.innerHTML = '';
    list.hidden = !needle;
    const head = document.createElement('div');
    head.className = 'count';
    head.textContent = `${out.length} match${out.length === 1 ? '' : 'es'}`;
    list.appendChild(head);
    for (const id of out.slice(0, 200)) {
      const n = this.hier!.nodes.get(id)!;
      const row = document.createElement('div');
      row.className = 'hit';
      row.textContent = `${n.name}  ·  ${n.kind === 'op' ? n.target : n.role ?? n.kind}${n.modules.length ? '  ·  ' + n.modules[n.modules.length - 1]!.path : ''}`;
      row.onclick = () => { this.closeSearch(); void this.goTo(id); };
      list.appendChild(row);
    }
    this.renderer.draw();
    return out;
  }

  /** Hide the hit list (after a pick, Escape, or a click on the graph); the highlights stay. */
  closeSearch(): void { $('results').hidden = true; }

  panel(n: VNode | null): void {
    const el = $('panel');
    el.innerHTML = '';
    el.classList.toggle('empty', !n || !this.hier);
    if (!n || !this.hier) return;
    const add = (tag: string, text: string, cls = '') => { const e = document.createElement(tag); e.textContent = text; if (cls) e.className = cls; el.appendChild(e); return e; };
    add('h2', n.name);
    add('div', n.kind === 'op' ? n.target : `${n.kind}${n.role ? ': ' + n.role : ''}${n.roleTarget ? ' ' + n.roleTarget : ''}`, 'target');
    const graph = this.hier.graphOf.get(n.id)!;
    const section = (title: string, rows: { label: string; text: string }[]) => {
      if (!rows.length) return;
      add('h3', title);
      const dl = document.createElement('dl');
      for (const r of rows) {
        const dt = document.createElement('dt'); dt.textContent = r.label || '·';
        const dd = document.createElement('dd'); dd.textContent = r.text;
        if (r.text.includes('\n')) dd.className = 'code';
        dl.append(dt, dd);
      }
      el.appendChild(dl);
    };
    section('arguments', n.args());
    const typed = (names: string[]) => names.map((v) => { const i = graph.values.get(v); return { label: v, text: i ? `${i.dtype}${i.dtype.startsWith('Sym') ? ' ' : ''}${i.shape}` : '' }; });
    section(n.kind === 'output' ? 'value' : 'inputs', n.kind === 'input' ? [] : typed(n.reads));
    section('outputs', typed(n.writes));
    // Ranges of the symbols in these types (s0 in [2, 64]).
    const prog = this.model!.programs[this.program]!;
    const text = [...typed(n.reads), ...typed(n.writes)].map((r) => r.text).join(' ');
    const words = new Set(text.match(/[A-Za-z_][A-Za-z0-9_]*/g) ?? []);
    section('symbols', prog.symbols.filter((x) => words.has(x.name)).map((x) => ({ label: x.name, text: `${x.range}  (hint ${x.hint})` })));
    if (n.subgraphs.length) section('subgraphs', n.subgraphs.map((s) => ({ label: s.name, text: `${s.graph.nodes.filter((x) => x.kind === 'op').length} nodes` })));
    section('metadata', n.meta());
    if (n.tensor !== undefined && this.model) {
      const s = this.model.summarize(n.tensor);
      add('h3', 'values');
      if (typeof s === 'string') add('p', s, 'muted');
      else this.histogram(el, s);
    }
  }

  private histogram(el: HTMLElement, s: TensorSummary): void {
    const p = document.createElement('p');
    const f = (x: number) => (Number.isInteger(x) ? String(x) : x.toPrecision(5));
    p.textContent = `${s.dtype} [${s.shape.join(', ')}] · ${s.count} values${s.sampled < s.count ? ` (${s.sampled} sampled)` : ''}\nmin ${f(s.min)} · max ${f(s.max)} · mean ${f(s.mean)}`;
    p.className = 'stats';
    el.appendChild(p);
    const c = document.createElement('canvas');
    c.width = 280; c.height = 70; c.className = 'hist';
    const ctx = c.getContext('2d')!;
    const top = Math.max(1, ...s.hist);
    s.hist.forEach((v, i) => { ctx.fillStyle = '#5b7bb5'; const h = (v / top) * 64; ctx.fillRect(i * 8.75, 68 - h, 7.5, h); });
    el.appendChild(c);
  }

  info(): void {
    const el = $('info');
    el.innerHTML = '';
    if (!this.model) return;
    const p = this.model.programs[this.program]!;
    const table = (title: string, head: string[], rows: string[][]) => {
      const h = document.createElement('h3'); h.textContent = `${title} (${rows.length})`; el.appendChild(h);
      if (!rows.length) return;
      const t = document.createElement('table');
      const tr = document.createElement('tr');
      for (const x of head) { const th = document.createElement('th'); th.textContent = x; tr.appendChild(th); }
      t.appendChild(tr);
      for (const r of rows.slice(0, 500)) {
        const row = document.createElement('tr');
        for (const x of r) { const td = document.createElement('td'); td.textContent = x; row.appendChild(td); }
        t.appendChild(row);
      }
      el.appendChild(t);
    };
    const meta = document.createElement('p');
    meta.textContent = `${p.nodeCount} nodes · producer ${this.model.producer}`;
    el.appendChild(meta);
    table('symbols', ['symbol', 'range', 'hint'], p.symbols.map((s) => [s.name, s.range, s.hint]));
    table('range constraints', ['expression', 'range'], p.constraints.map((c) => [c.expr, c.range]));
    table('shared expressions', ['name', 'expression'], p.shared.map((x) => [x.name, x.expr]));
    // Entries whose signature lists nothing (torch fills the lists for submodules only under
    // preserve_module_call_signature, and never for the root) show the values crossing the module's
    // boundary in the graph (boundary.ts).
    const signed = (c: { signed: boolean; inputs: string; outputs: string }) => c.signed && !!(c.inputs || c.outputs);
    const bounds = moduleBoundaries(p.graph, p.callGraph.filter((c) => !signed(c)).map((c) => c.path));
    const rows = p.callGraph.map((c) => {
      if (signed(c)) return [c.fqn, c.inputs, c.outputs, 'signature'];
      const b = bounds.get(c.path.replace(/@\d+$/, ''));
      const text = (xs: string[]) => xs.map((v) => { const i = p.graph.values.get(v); return i ? `${v}: ${i.dtype}${i.dtype.startsWith('Sym') ? ' ' : ''}${i.shape}` : v; }).join(', ');
      return b ? [c.fqn, text(b.inputs), text(b.outputs), 'graph'] : [c.fqn, '', '', 'not in graph'];
    });
    table('module call graph', ['module', 'inputs', 'outputs', 'from'], rows);
  }

  /** For the test hook: boxes on screen and how many nodes each holds / draws. */
  state() {
    const g = this.graph;
    const boxes = g ? [...g.leaves.filter((l) => l.group).map((l) => l.group!), ...g.clusters.map((c) => c.group)] : [];
    const drawnIn = (grp: Group): number => {
      if (!g) return 0;
      let n = 0;
      for (const l of g.leaves) {
        if (!l.node || l.node.kind !== 'op') continue;
        for (let x = this.hier!.owner.get(l.node.id) ?? null; x; x = x.parent) if (x === grp) { n++; break; }
      }
      return n;
    };
    return {
      error: this.error,
      program: this.model?.programs[this.program]?.name ?? null,
      programs: this.model?.programs.map((p) => p.name) ?? [],
      nodeCount: this.model?.programs[this.program]?.nodeCount ?? 0,
      leaves: g?.leaves.length ?? 0,
      drawnNodes: g?.leaves.filter((l) => l.node?.kind === 'op').length ?? 0,
      edges: g?.edges.length ?? 0,
      edgeLabels: g?.edges.map((e) => e.label) ?? [],
      boxes: boxes.map((b) => ({ id: b.id, kind: b.kind, path: b.path, label: b.label, expanded: b.expanded, size: b.size, drawn: drawnIn(b) })),
      selected: this.selected,
      panel: $('panel').innerText,
      info: $('info').innerText,
      searchResults: this.searchResults.map((id) => this.hier!.nodes.get(id)!.name),
      searchOpen: !$('results').hidden,
      status: $('status').textContent,
      /** The smallest node or box text and the smallest edge label the last paint drew on screen, in CSS px (null: none drawn). */
      textPx: this.renderer.drawn.minTextPx,
      edgeTextPx: this.renderer.drawn.minEdgePx,
      /** Closed boxes in view, and how many of them the last paint gave a title. */
      boxesInView: this.renderer.drawn.boxesInView,
      boxesTitled: this.renderer.drawn.boxesTitled,
      scale: this.renderer.scale,
      /** Where the layout put each closed box (layout units). */
      layoutBoxes: g && this.layout ? g.leaves.filter((l) => l.group && this.layout!.boxes[l.id]).map((l) => ({ id: l.id, ...this.layout!.boxes[l.id]! })) : [],
      drawnOnScreen: this.renderer.drawnLeaves,
      /** The narrowest value in the side panel, as a fraction of the panel's inner width (null: no values). */
      panelValueWidth: (() => {
        const el = $('panel'), dds = [...el.querySelectorAll('dd')];
        if (!dds.length) return null;
        const inner = el.clientWidth - parseFloat(getComputedStyle(el).paddingLeft) - parseFloat(getComputedStyle(el).paddingRight);
        return Math.min(...dds.map((d) => d.getBoundingClientRect().width)) / inner;
      })(),
      timings: this.timings,
    };
  }

  /** All boxes of the current program (expanded or not, visible or not). */
  groups() {
    return [...(this.hier?.groups.values() ?? [])].map((b) => ({ id: b.id, kind: b.kind, path: b.path, label: b.label, expanded: b.expanded, size: b.size }));
  }
}

function b64decode(s: string): Uint8Array {
  const native = (Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array }).fromBase64;
  if (native) return native(s.trim());
  const table = new Uint8Array(128);
  const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < 64; i++) table[abc.charCodeAt(i)] = i;
  s = s.replace(/[^A-Za-z0-9+/]/g, '');
  const n = Math.floor((s.length * 3) / 4);
  const out = new Uint8Array(n);
  let o = 0;
  for (let i = 0; i + 1 < s.length; i += 4) {
    const a = table[s.charCodeAt(i)]!, b = table[s.charCodeAt(i + 1)]!;
    const c = i + 2 < s.length ? table[s.charCodeAt(i + 2)]! : 0, d = i + 3 < s.length ? table[s.charCodeAt(i + 3)]! : 0;
    const v = (a << 18) | (b << 12) | (c << 6) | d;
    if (o < n) out[o++] = v >> 16;
    if (i + 2 < s.length && o < n) out[o++] = (v >> 8) & 255;
    if (i + 3 < s.length && o < n) out[o++] = v & 255;
  }
  return out.subarray(0, o);
}

async function main(): Promise<void> {
  const scriptAt = performance.now();
  const v = new Viewer();
  v.timings.scriptAt = scriptAt;
  const hook = {
    ready: false,
    viewer: v,
    state: () => v.state(),
    groups: () => v.groups(),
    expand: (id: string) => v.toggle(id, true),
    collapse: (id: string) => v.toggle(id, false),
    search: (q: string) => { ($('search') as HTMLInputElement).value = q; return v.search(q).map((id) => v.hier!.nodes.get(id)!.name); },
    select: async (name: string) => {
      const n = [...(v.hier?.nodes.values() ?? [])].find((x) => x.name === name);
      if (!n) return null;
      await v.goTo(n.id);
      return $('panel').innerText;
    },
    setProgram: (i: number) => v.setProgram(i),
    /** Page coordinates of a drawn box's centre (for real mouse clicks), or null when it is not drawn. */
    screenBox: (id: string) => {
      const b = v.layout?.boxes[id];
      if (!b) return null;
      const r = v.renderer.canvas.getBoundingClientRect();
      v.renderer.focus(id);
      v.renderer.paint();
      const s = v.renderer;
      return { x: r.left + s.tx + (b.x + b.w / 2) * s.scale, y: r.top + s.ty + (b.y + Math.min(b.h / 2, 12)) * s.scale };
    },
    busy: () => v.busy > 0,
    showInfo: (on: boolean) => { $('info').hidden = !on; },
    /** Names of the nodes inside a box, in graph order (boxes at every level). */
    members: (id: string) => {
      const g = v.hier?.groups.get(id);
      if (!g) return null;
      const out: string[] = [];
      const walk = (x: Group) => { for (const c of x.children) { if ('group' in c) walk(c.group); else out.push(c.node.name); } };
      walk(g);
      return out;
    },
    /** Click the n-th row of the search hit list, as a person would. */
    pick: async (i: number) => {
      const row = document.querySelectorAll<HTMLElement>('#results .hit')[i];
      if (!row) return false;
      row.click();
      while (v.busy > 0) await new Promise((r) => setTimeout(r, 10));
      return true;
    },
    open: (bytes: Uint8Array, name: string) => v.open(bytes, name),
  };
  (window as unknown as { pt2fViewer: typeof hook }).pt2fViewer = hook;

  $<HTMLSelectElement>('program').onchange = (e) => { void v.setProgram(Number((e.target as HTMLSelectElement).value)); };
  let timer = 0;
  $<HTMLInputElement>('search').oninput = (e) => { clearTimeout(timer); timer = window.setTimeout(() => v.search((e.target as HTMLInputElement).value), 120); };
  $('fit').onclick = () => { v.renderer.fitAll(); v.renderer.draw(); };
  $('reset').onclick = () => { v.hier?.expandDefault(); void v.relayout(true); };
  $('info-toggle').onclick = () => { $('info').hidden = !$('info').hidden; };
  window.addEventListener('keydown', (e) => { if (e.key === 'Escape') { v.closeSearch(); $('info').hidden = true; } });
  $('canvas').addEventListener('mousedown', () => v.closeSearch());
  $('search').addEventListener('focus', () => { if (($('search') as HTMLInputElement).value.trim()) $('results').hidden = false; });
  const openFile = async (f: File) => {
    const bytes = new Uint8Array(await f.arrayBuffer());
    await v.open(bytes, f.name, new Map(), 'read in the browser');
  };
  $<HTMLInputElement>('file-input').onchange = (e) => { const f = (e.target as HTMLInputElement).files?.[0]; if (f) void openFile(f); };
  window.addEventListener('dragover', (e) => { e.preventDefault(); document.body.classList.add('dragging'); });
  window.addEventListener('dragleave', () => document.body.classList.remove('dragging'));
  window.addEventListener('drop', (e) => {
    e.preventDefault();
    document.body.classList.remove('dragging');
    const f = e.dataTransfer?.files?.[0];
    if (f) void openFile(f);
  });

  const embedded = document.getElementById('pt2f-data');
  if (embedded && embedded.textContent && embedded.textContent.trim()) {
    const t0 = performance.now();
    const bytes = b64decode(embedded.textContent);
    v.timings.decodeMs = performance.now() - t0;
    const shards = new Map<string, Uint8Array>();
    for (const s of document.querySelectorAll<HTMLElement>('script[data-shard]')) shards.set(s.dataset.shard!, b64decode(s.textContent ?? ''));
    const note = embedded.dataset.weights === 'omitted' ? 'weights not embedded' : embedded.dataset.weights === 'embedded' ? 'weights embedded' : '';
    await v.open(bytes, embedded.dataset.name ?? 'model.pt2f', shards, note);
  } else {
    $('status').textContent = 'no file: drop a .pt2f file on the page or pick one with "open…"';
  }
  hook.ready = true;
}

main().catch((e) => {
  const box = document.getElementById('error');
  if (box) { box.hidden = false; box.textContent = `Viewer failed: ${(e as Error)?.stack ?? e}`; }
  (window as unknown as { pt2fViewer?: { ready: boolean } }).pt2fViewer = { ready: true };
});
