/**
 * The layout rules for deep models, on a synthetic GPT-2-shaped program of
 * L blocks (its module structure and data flow as torch.export records them
 * for transformers' GPT-2: a sequence length and an attention mask made once
 * and read by every block, a residual chain through the blocks):
 *
 * - a value read by many boxes is drawn as one edge with the count, the
 *   others are not laid out;
 * - the blocks' chain is straight (one x for every block);
 * - the opening view shows the whole graph with every block titled, and
 *   "fit" keeps box titles at TITLE_PX (>= 11 px) without overlaps.
 *
 * Run by tools/unit-test.mjs (tests/native/test_viewer_layout.py).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Hierarchy, edgeText, FAN_MIN } from '../src/groups.js';
import type { VisibleGraph } from '../src/groups.js';
import type { VGraph, VNode, VProgram, ModuleRef } from '../src/model.js';
import { layout } from '../src/layout.js';
import type { LayoutRequest, LayoutResult } from '../src/layout-types.js';
import { leafSize, labelSize, clusterTitleWidth, openingView, wholeView, boxTitles, FONT, MIN_TEXT_PX } from '../src/render.js';
import { TITLE_PX } from '../src/overview.js';

/** Bold 11 px sans-serif: about 0.62 em per glyph (DejaVu Sans Bold, the widest of the usual fonts). */
const measure = (s: string) => s.length * TITLE_PX * 0.62;
const WINDOW = { w: 1400, h: 864 }; // a 1400 x 900 window less the header and status bar

function program(layers: number): VProgram {
  const nodes: VNode[] = [];
  const values = new Map<string, { name: string; dtype: string; shape: string }>();
  const node = (name: string, kind: VNode['kind'], reads: string[], modules: ModuleRef[], dtype = 'f32', shape = '[1, s0, 64]'): string => {
    const out = kind === 'output' ? [] : [name];
    for (const w of out) values.set(w, { name: w, dtype, shape });
    nodes.push({ id: `g|${name}`, name, kind, target: name, op: name.replace(/_\d+$/, ''), modules, args: () => [], reads,
      writes: out, meta: () => [], subgraphs: [] });
    return name;
  };
  const T = { path: 'transformer', type: 'GPT2Model' };
  const ids = node('input_ids', 'input', [], [], 'i64', '[1, s0]');
  const s = node('sym_size', 'op', [ids], [], 'SymInt', 's0');
  const pos = node('arange', 'op', [s], [T], 'i64', '[s0]');
  const tok = node('embedding', 'op', [ids], [T, { path: 'transformer.wte', type: 'Embedding' }]);
  const pe = node('embedding_1', 'op', [pos], [T, { path: 'transformer.wpe', type: 'Embedding' }]);
  let h = node('add', 'op', [tok, pe], [T]);
  let m = node('ones', 'op', [s], [T], 'bool', '[s0, s0]');
  for (const op of ['tril', 'view', 'unsqueeze', 'expand']) m = node(op, 'op', [m], [T], 'bool', '[1, 1, s0, s0]');
  for (let i = 0; i < layers; i++) {
    const B = { path: `transformer.h.${i}`, type: 'GPT2Block' };
    const A = { path: `transformer.h.${i}.attn`, type: 'GPT2Attention' };
    const M = { path: `transformer.h.${i}.mlp`, type: 'GPT2MLP' };
    const ln = node(`layer_norm_${i}`, 'op', [h], [T, B, { path: `transformer.h.${i}.ln_1`, type: 'LayerNorm' }]);
    const qkv = node(`addmm_${i}`, 'op', [ln], [T, B, A]);
    const sv = node(`view_${i}`, 'op', [qkv, s], [T, B, A]);
    const att = node(`sdpa_${i}`, 'op', [sv, m], [T, B, A]);
    const r1 = node(`add_${i}`, 'op', [h, att], [T, B]);
    const fc = node(`addmm_fc_${i}`, 'op', [r1], [T, B, M]);
    const act = node(`gelu_${i}`, 'op', [fc], [T, B, M]);
    h = node(`add_out_${i}`, 'op', [r1, act], [T, B]);
  }
  const hf = node('layer_norm_f', 'op', [h], [T, { path: 'transformer.ln_f', type: 'LayerNorm' }]);
  const logits = node('linear', 'op', [hf], [{ path: 'lm_head', type: 'Linear' }]);
  node('output', 'output', [logits], []);
  const graph: VGraph = { id: 'g', nodes, values };
  return { name: 'forward', graph, symbols: [], constraints: [], shared: [], callGraph: [], nodeCount: nodes.filter((n) => n.kind === 'op').length };
}

/** What the page does (main.ts): the default view, then the layout of what it shows. */
function laidOut(layers: number): { graph: VisibleGraph; res: LayoutResult } {
  const hier = new Hierarchy(program(layers));
  hier.expandDefault();
  const graph = hier.visible();
  const req: LayoutRequest = {
    seq: 1,
    nodes: graph.leaves.map((l) => ({ id: l.id, parent: l.parent, ...leafSize(l) })),
    clusters: graph.clusters.map((c) => ({ id: c.id, parent: c.parent, minW: clusterTitleWidth(c) })),
    edges: graph.edges.map((e) => ({ from: e.from, to: e.to, ...labelSize(edgeText(e)), ...(e.elided ? { skip: true } : {}) })),
  };
  return { graph, res: layout(req) };
}

const blockId = (i: number) => `root/m:transformer.h.${i}`;
const overlaps = (a: { x: number; y: number; w: number; h: number }, b: typeof a) =>
  a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

for (const layers of [12, 48]) {
  test(`${layers} layers: every block is a closed box of its own`, () => {
    const { graph } = laidOut(layers);
    for (let i = 0; i < layers; i++) {
      const leaf = graph.leaves.find((l) => l.id === blockId(i));
      assert.ok(leaf?.group && !leaf.group.expanded, `block ${i} is not a closed box`);
      assert.equal(leaf.parent, 'root/m:transformer', `block ${i} is inside ${leaf.parent}, not directly in its model's box`);
      assert.equal(leaf.group.size, 8);
    }
  });

  test(`${layers} layers: a value read by every block is drawn once, with the count`, () => {
    const { graph, res } = laidOut(layers);
    for (const value of ['g|expand', 'g|sym_size']) {
      const carrying = graph.edges.map((e, i) => ({ e, i })).filter(({ e }) => e.values.includes(value));
      const readers = new Set(carrying.map(({ e }) => e.to));
      assert.ok(readers.size >= layers && readers.size >= FAN_MIN, `${value}: ${readers.size} readers`);
      // Drawn: one edge for the fan (with the count), plus any edge that also carries a value that is no fan.
      const fan = carrying.filter(({ e }) => !e.elided && e.fan);
      assert.equal(fan.length, 1, `${value}: ${fan.length} fan edges drawn`);
      assert.equal(fan[0]!.e.fan, readers.size);
      assert.match(edgeText(fan[0]!.e), new RegExp(` to ${readers.size}$`));
      const others = carrying.filter(({ e }) => !e.elided && !e.fan);
      assert.ok(others.length <= 1, `${value}: ${others.length} more edges drawn`);
      for (const { e } of others) assert.ok(e.values.some((v) => v !== value && !['g|expand', 'g|sym_size'].includes(v)));
      for (const { e, i } of carrying) if (e.elided) assert.deepEqual(res.edges[i], [], 'an elided edge was routed');
    }
  });

  test(`${layers} layers: the chain of blocks is straight`, () => {
    const { res } = laidOut(layers);
    const centres = Array.from({ length: layers }, (_, i) => { const b = res.boxes[blockId(i)]!; return b.x + b.w / 2; });
    for (const [i, x] of centres.entries()) assert.ok(Math.abs(x - centres[0]!) < 0.5, `block ${i} at x ${x}, block 0 at ${centres[0]}`);
    for (let i = 1; i < layers; i++) assert.ok(res.boxes[blockId(i)]!.y > res.boxes[blockId(i - 1)]!.y);
  });

  test(`${layers} layers: the opening view shows the whole graph, every block titled at >= 11 px`, () => {
    const { graph, res } = laidOut(layers);
    const v = openingView(graph, res, WINDOW.w, WINDOW.h, measure);
    assert.ok(res.width * v.scale <= WINDOW.w + 0.5 && res.height * v.scale <= WINDOW.h + 0.5, 'not the whole graph');
    if (v.overview) {
      const titled = new Set(boxTitles(graph, res, v, measure).map((t) => t.id));
      for (let i = 0; i < layers; i++) assert.ok(titled.has(blockId(i)), `block ${i} has no title`);
    } else {
      assert.ok(v.scale * FONT.node >= MIN_TEXT_PX);
    }
  });

  test(`${layers} layers: in a short window, "fit" leaves titles out rather than overlap them`, () => {
    const { graph, res } = laidOut(layers);
    const short = { w: 1400, h: layers * 6 };
    const v = wholeView(res, short.w, short.h);
    const titles = boxTitles(graph, res, v, measure);
    assert.ok(titles.length > 0 && titles.filter((t) => !t.cluster).length < layers, 'expected some titles left out');
    for (const [i, a] of titles.entries()) {
      for (const b of titles.slice(i + 1)) assert.ok(!overlaps(a, b), `${a.text} overlaps ${b.text}`);
    }
  });

  test(`${layers} layers: "fit" keeps box titles readable and apart`, () => {
    const { graph, res } = laidOut(layers);
    const v = wholeView(res, WINDOW.w, WINDOW.h);
    assert.ok(v.scale * FONT.node < 11, 'the whole graph is small enough that its own text is not drawn');
    const titles = boxTitles(graph, res, v, measure);
    assert.ok(TITLE_PX >= 11);
    const closed = graph.leaves.filter((l) => l.group).length;
    assert.equal(titles.filter((t) => !t.cluster).length, closed, 'a closed box lost its title');
    for (const [i, a] of titles.entries()) {
      assert.ok(a.x >= 0 && a.y >= 0 && a.x + a.w <= WINDOW.w && a.y + a.h <= WINDOW.h, `${a.text} outside the window`);
      assert.ok(a.h >= TITLE_PX);
      for (const b of titles.slice(i + 1)) assert.ok(!overlaps(a, b), `${a.text} overlaps ${b.text}`);
    }
  });
}

test('a value read by fewer than FAN_MIN boxes keeps all its edges', () => {
  const { graph } = laidOut(2);
  const mask = graph.edges.filter((e) => e.values.includes('g|expand'));
  assert.ok(mask.length === 2 && mask.every((e) => !e.elided && !e.fan));
});
