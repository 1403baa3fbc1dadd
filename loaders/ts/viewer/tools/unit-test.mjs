// Run the viewer's unit tests (test/*.test.ts) with Node's test runner:
// esbuild bundles each test with the viewer sources it imports into a
// temporary .mjs (Node cannot import the .ts sources directly), then
// `node --test` runs them. No browser: the layout rules (groups, layout,
// box titles) are pure functions.
//
//   node tools/unit-test.mjs [--test-reporter=tap]
import { build } from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(dirname(fileURLToPath(import.meta.url)));
const tests = readdirSync(join(here, 'test')).filter((f) => f.endsWith('.test.ts')).sort();
if (!tests.length) throw new Error('no test/*.test.ts');
const out = mkdtempSync(join(tmpdir(), 'pt2f-viewer-test-'));
try {
  await build({
    entryPoints: tests.map((t) => join(here, 'test', t)), outdir: out, outExtension: { '.js': '.mjs' },
    bundle: true, format: 'esm', platform: 'node', target: 'node18', logLevel: 'error',
  });
  const files = tests.map((t) => join(out, t.replace(/\.ts$/, '.mjs')));
  const r = spawnSync(process.execPath, ['--test', ...process.argv.slice(2), ...files], { stdio: 'inherit' });
  process.exitCode = r.status ?? 1;
} finally {
  rmSync(out, { recursive: true, force: true });
}
