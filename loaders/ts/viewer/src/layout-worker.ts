/**
 * The layout worker: runs `layout.ts` off the main thread, so the page keeps
 * painting and responding while a large expansion is laid out. Built into a
 * separate bundle and started from a Blob URL, so the single HTML file works
 * from file:// too.
 */
import { layout } from './layout.js';
import type { LayoutRequest } from './layout-types.js';

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
