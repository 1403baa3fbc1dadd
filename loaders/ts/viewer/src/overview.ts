/**
 * Box titles when zoomed out: where the graph's own text would be too small to
 * read, the titles of boxes are drawn at a fixed on-screen size (TITLE_PX)
 * instead, inside their box when it has room, else beside it, and a title that
 * would overlap another title or box is left out (as a map drops place names).
 * Pure (the caller measures text), so the rules are unit-tested in Node.
 */

/** On-screen size of box titles when zoomed out, in CSS pixels (Netron's node text is 11 px). */
export const TITLE_PX = 11;
/** Height of a title's row on screen (bold 11 px sans-serif glyphs span about 10 px). */
const ROW = TITLE_PX + 1;

export interface Rect { x: number; y: number; w: number; h: number }
export interface TitleItem {
  id: string;
  text: string;
  /** The box, in layout units. */
  box: Rect;
  /** An expanded box: its title goes in its top-left corner, else left of it; a closed box: inside, else to its right or left. */
  cluster: boolean;
}
export interface View { scale: number; tx: number; ty: number; width: number; height: number }
export interface PlacedTitle { id: string; text: string; x: number; y: number; w: number; h: number; inside: boolean }

const overlaps = (a: Rect, b: Rect) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

/** Screen rectangle of a layout rectangle. */
export function toScreen(r: Rect, v: View): Rect {
  return { x: v.tx + r.x * v.scale, y: v.ty + r.y * v.scale, w: r.w * v.scale, h: r.h * v.scale };
}

/** `text` cut with an ellipsis to at most `max` pixels ('' when not even one character and the ellipsis fit). */
export function cut(text: string, max: number, measure: (s: string) => number): string {
  if (measure(text) <= max) return text;
  let lo = 0, hi = text.length;
  while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (measure(text.slice(0, mid) + '…') <= max) lo = mid; else hi = mid - 1; }
  return lo < 6 ? '' : text.slice(0, lo) + '…';
}

/**
 * Places titles in the given order (the first ones win a contested spot).
 * `obstacles`: screen rectangles of closed boxes and nodes (by id), which no
 * title may cover but its own box's. `measure`: text width in CSS pixels at TITLE_PX.
 */
export function placeTitles(items: TitleItem[], obstacles: { id: string; r: Rect }[], view: View, measure: (s: string) => number): PlacedTitle[] {
  const placed: PlacedTitle[] = [];
  let id = '';
  const free = (r: Rect) => r.x >= 0 && r.y >= 0 && r.x + r.w <= view.width && r.y + r.h <= view.height
    && !placed.some((p) => overlaps(p, r)) && !obstacles.some((o) => o.id !== id && overlaps(o.r, r));
  for (const it of items) {
    id = it.id;
    const sb = toScreen(it.box, view);
    if (sb.x > view.width || sb.y > view.height || sb.x + sb.w < 0 || sb.y + sb.h < 0) continue;
    if (it.cluster) {
      const text = cut(it.text, sb.w - 8, measure);
      if (!text) continue;
      const r = { x: sb.x + 4, y: sb.y + 1, w: measure(text) + 4, h: ROW };
      if (r.y + r.h <= sb.y + sb.h && free(r)) { placed.push({ id: it.id, text, ...r, inside: true }); continue; }
      const w = measure(it.text) + 6, left = { x: sb.x - w - 4, y: sb.y, w, h: ROW };
      if (free(left)) placed.push({ id: it.id, text: it.text, ...left, inside: false });
      continue;
    }
    const w = measure(it.text);
    if (sb.h >= ROW && w + 8 <= sb.w) {
      const r = { x: sb.x + 4, y: sb.y + (sb.h - ROW) / 2, w: w + 4, h: ROW };
      if (free(r)) { placed.push({ id: it.id, text: it.text, ...r, inside: true }); continue; }
    }
    const beside = { x: sb.x + sb.w + 4, y: sb.y + sb.h / 2 - ROW / 2, w: w + 6, h: ROW };
    if (free(beside)) { placed.push({ id: it.id, text: it.text, ...beside, inside: false }); continue; }
    const left = { ...beside, x: sb.x - w - 10 };
    if (free(left)) { placed.push({ id: it.id, text: it.text, ...left, inside: false }); continue; }
    if (sb.h >= ROW) { // inside, cut short
      const text = cut(it.text, sb.w - 8, measure);
      const r = { x: sb.x + 4, y: sb.y + (sb.h - ROW) / 2, w: measure(text) + 4, h: ROW };
      if (text && free(r)) placed.push({ id: it.id, text, ...r, inside: true });
    }
  }
  return placed;
}
