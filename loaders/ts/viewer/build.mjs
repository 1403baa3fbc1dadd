// Build the viewer into ONE self-contained HTML file, dist/viewer.html:
// the layout worker (dagre) is bundled first and inlined as a string that the
// page starts from a Blob URL; the page bundle (reader + viewer) is inlined in
// a <script>. The file opens from file:// with no network and no server.
// `pt2format view` fills its <!--PT2F-EMBED--> marker with the program bytes;
// opened as is, the page reads any .pt2f dropped on it.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const common = { bundle: true, write: false, format: 'iife', target: 'es2022', minify: true, legalComments: 'none', logLevel: 'error', keepNames: true };

const worker = await build({ ...common, entryPoints: [join(here, 'src', 'layout-worker.ts')] });
const page = await build({
  ...common,
  entryPoints: [join(here, 'src', 'main.ts')],
  define: { __WORKER_SOURCE__: JSON.stringify(worker.outputFiles[0].text) },
});
let js = page.outputFiles[0].text;
// Never let the inlined code close its own <script> element.
js = js.replace(/<\/(script)/gi, '<\\/$1').replace(/<!--/g, '<\\!--');
const template = readFileSync(join(here, 'index.html'), 'utf8');
const marker = '/*PT2F-VIEWER-SCRIPT*/';
if (!template.includes(marker) || !template.includes('<!--PT2F-EMBED-->')) throw new Error('index.html lost its markers');
const html = template.replace(marker, () => js);
mkdirSync(join(here, 'dist'), { recursive: true });
writeFileSync(join(here, 'dist', 'viewer.html'), html);
console.log(`dist/viewer.html: ${html.length} bytes`);
