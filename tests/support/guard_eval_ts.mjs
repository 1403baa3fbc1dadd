// The TypeScript evaluator (loaders/ts/src/symeval.ts) on many guard evaluations in one process, for
// tests/loaders/test_guard_text.py. argv: DIST FILE; stdin: one JSON line per evaluation,
// {"program": name, "values": [[kind, text], ...]} (kind "i", "f" or "b" per Program.symbols entry);
// stdout: one line per evaluation: the value of the program's last node ("True", "False", a number),
// "error: reason" (an evaluation error) or "limit: reason" (a LimitError).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

const [dist, file] = process.argv.slice(2);
const lib = await import(pathToFileURL(`${dist}/index.js`).href);
const sym = await import(pathToFileURL(`${dist}/symeval.js`).href);
const tree = lib.readPt2f(new Uint8Array(readFileSync(file)), { validate: false }).tree();
const programs = new Map(tree.programs.map((p) => [p.name, p]));
const float = (t) => (t === 'inf' ? Infinity : t === '-inf' ? -Infinity : Number(t));
const value = ([kind, text]) => (kind === 'b' ? text === 'True' : kind === 'f' ? float(text) : BigInt(text));
const out = [];
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  const { program, values } = JSON.parse(line);
  const exprs = programs.get(program).sym_exprs;
  try {
    const v = sym.evaluatePool(exprs, values.map(value)).at(-1);
    out.push(v instanceof sym.Failure ? `error: ${v.reason}` : typeof v === 'boolean' ? (v ? 'True' : 'False')
      : String(v));
  } catch (e) {
    if (!(e instanceof lib.LimitError)) throw e;
    out.push(`limit: ${e.message}`);
  }
}
process.stdout.write(out.join('\n') + '\n');
