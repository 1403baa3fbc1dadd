// Drive the viewer in headless Chromium (the system's, via playwright-core:
// no browser download) and report what it rendered, for the browser tests
// and the timing table.
//
//   node tools/drive.mjs SCRIPT.json
//
// SCRIPT: {"chromium": path, "page": html path, "width", "height",
//          "steps": [{"do": "expand"|"collapse"|"search"|"pick"|"select"|"program"|"info"|"members"|"state"|"groups"|"shot"|"metrics", ...}]}
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
