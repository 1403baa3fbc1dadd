// Drive the viewer in headless Chromium (the system's, via playwright-core:
// no browser download) and report what it rendered, for the browser tests
// and the timing table.
//
//   node tools/drive.mjs SCRIPT.json
//
// SCRIPT: {"chromium": path, "page": html path, "width", "height",
//          "textProbe": bool,
//          "steps": [{"do": "expand"|"collapse"|"search"|"pick"|"select"|"program"|"info"|"members"|"state"|"groups"|"shot"|"metrics"|"fit"|"text", ...}]}
// With textProbe, every fillText on the graph canvas is recorded (on-screen font
// size: the font's px times the canvas transform's scale; bounding-box height from
// measureText), so "text" measures the labels the page really drew, independently
// of the viewer's own notion of its text size.
// Prints one JSON object: {"results": [...one per step...], "console": [...]}.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const script = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const browser = await chromium.launch({ executablePath: script.chromium, headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--enable-precise-memory-info'] });
const out = { results: [], console: [], requests: [] };
try {
  const page = await browser.newPage({ viewport: { width: script.width ?? 1400, height: script.height ?? 900 } });
  page.on('console', (m) => out.console.push(`${m.type()}: ${m.text()}`));
  page.on('request', (req) => out.requests.push(req.url().slice(0, 200)));
  page.on('pageerror', (e) => out.console.push(`pageerror: ${e.message}`));
  if (script.textProbe) await page.addInitScript(textProbe);
  const t0 = Date.now();
  await page.goto(pathToFileURL(script.page).href);
  await page.waitForFunction(() => window.pt2fViewer?.ready === true, null, { timeout: script.timeout ?? 60000 });
  out.openMs = Date.now() - t0;
  for (const s of script.steps ?? []) {
    let r = null;
    switch (s.do) {
      case 'state': r = await page.evaluate(() => window.pt2fViewer.state()); break;
      case 'groups': r = await page.evaluate(() => window.pt2fViewer.groups()); break;
      case 'expand': r = await page.evaluate((id) => window.pt2fViewer.expand(id), s.id); break;
      case 'collapse': r = await page.evaluate((id) => window.pt2fViewer.collapse(id), s.id); break;
      case 'search': r = await page.evaluate((q) => window.pt2fViewer.search(q), s.query); break;
      case 'select': r = await page.evaluate((n) => window.pt2fViewer.select(n), s.name); break;
      case 'program': r = await page.evaluate((i) => window.pt2fViewer.setProgram(i), s.index); break;
      case 'info': r = await page.evaluate((on) => window.pt2fViewer.showInfo(on), s.on ?? true); break;
      case 'members': r = await page.evaluate((id) => window.pt2fViewer.members(id), s.id); break;
      case 'pick': r = await page.evaluate((i) => window.pt2fViewer.pick(i), s.index ?? 0); break;
      case 'upload': // what a person does: pick a file with the page's "open…" button
        await page.setInputFiles('#file-input', s.path);
        await page.waitForFunction(() => window.pt2fViewer.state().program !== null || window.pt2fViewer.state().error !== null, null, { timeout: 60000 });
        r = true;
        break;
      case 'drop': { // drag a file from the desktop onto the page: a real DataTransfer on a drop event
        const b64 = readFileSync(s.path).toString('base64');
        const name = s.path.split(/[\\/]/).pop();
        await page.evaluate(([data, fileName]) => {
          const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
          const dt = new DataTransfer();
          dt.items.add(new File([bytes], fileName));
          for (const type of ['dragenter', 'dragover', 'drop']) {
            document.querySelector('main').dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
          }
        }, [b64, name]);
        await page.waitForFunction(() => window.pt2fViewer.state().program !== null || window.pt2fViewer.state().error !== null, null, { timeout: 60000 });
        r = true;
        break;
      }
      case 'click': { // click the centre of a drawn box, as a person would
        const box = await page.evaluate((id) => window.pt2fViewer.screenBox(id), s.id);
        if (!box) { r = false; break; }
        await page.mouse.click(box.x, box.y);
        await page.waitForFunction(() => !window.pt2fViewer.busy(), null, { timeout: 60000 });
        r = true;
        break;
      }
      case 'fit': // the toolbar's "fit" button, clicked as a person would
        await page.click('#fit');
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
        r = true;
        break;
      case 'text': // repaint the current view with the probe on, and report the smallest labels inside the window
        r = await page.evaluate(() => {
          window.__pt2fTexts = [];
          window.pt2fViewer.viewer.renderer.paint();
          const seen = window.__pt2fTexts.filter((t) => t.visible);
          window.__pt2fTexts = null;
          const minOf = (k) => (seen.length ? Math.min(...seen.map((t) => t[k])) : null);
          const smallest = [...seen].sort((a, b) => a.px - b.px).slice(0, 3).map((t) => `${t.text} (${t.px.toFixed(1)} px)`);
          return { count: seen.length, minPx: minOf('px'), minBoxPx: minOf('h'), smallest, texts: seen.map((t) => t.text) };
        });
        break;
      case 'shot': await page.waitForTimeout(100); await page.screenshot({ path: s.path }); r = s.path; break;
      case 'metrics': {
        // Paint timings from the page, and the JS heap after a forced GC.
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('HeapProfiler.collectGarbage');
        const { usedSize } = await cdp.send('Runtime.getHeapUsage');
        const paint = await page.evaluate(() => ({ t: window.pt2fViewer.state().timings,
          nav: performance.getEntriesByType('navigation')[0]?.toJSON?.() ?? null }));
        r = { heapBytes: usedSize, ...paint };
        break;
      }
      default: throw new Error(`unknown step ${s.do}`);
    }
    out.results.push(r === undefined ? null : r);
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));

/** Runs in the page before its scripts: records the graph canvas's fillText calls while window.__pt2fTexts is a list. */
function textProbe() {
  const orig = CanvasRenderingContext2D.prototype.fillText;
  CanvasRenderingContext2D.prototype.fillText = function (text, x, y, maxWidth) {
    const log = window.__pt2fTexts;
    if (log && this.canvas.id === 'canvas') {
      const m = this.getTransform(), dpr = window.devicePixelRatio || 1;
      const s = Math.hypot(m.a, m.b) / dpr;
      const px = parseFloat(/([\d.]+)px/.exec(this.font)?.[1] ?? 'NaN') * s;
      const mt = this.measureText(text);
      const sx = (m.a * x + m.c * y + m.e) / dpr, sy = (m.b * x + m.d * y + m.f) / dpr;
      const w = mt.width * s, left = this.textAlign === 'center' ? sx - w / 2 : sx;
      const cw = this.canvas.clientWidth, ch = this.canvas.clientHeight;
      const visible = text.trim() !== '' && left < cw && left + w > 0 && sy > 0 && sy < ch;
      log.push({ text, px, h: (mt.actualBoundingBoxAscent + mt.actualBoundingBoxDescent) * s, visible });
    }
    return maxWidth === undefined ? orig.call(this, text, x, y) : orig.call(this, text, x, y, maxWidth);
  };
}
