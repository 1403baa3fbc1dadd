// Test support: dump many files in one Node process.
//
// Usage: node tools/dump-batch.mjs [--no-validate | --verify-data] FILE...  For each FILE writes one JSON line
// to stdout: {"file", "ok": true, "dump"} or {"file", "ok": false, "error"
// (the Pt2fError class name, or "internal" for anything else), "message"}.
// A non-Pt2fError is a reader bug; tests fail on it.
import { readPt2fFile, Pt2fError } from '../dist/node.js';

// (--verify-data: also every DATA section and storage checksum, as pt2format.validate).
const args = process.argv.slice(2);
const validate = args[0] !== '--no-validate';
const verifyData = args[0] === '--verify-data';
for (const file of args[0]?.startsWith('--') ? args.slice(1) : args) {
  let rec;
  try {
    rec = { file, ok: true, dump: readPt2fFile(file, { validate, verifyData }).dump() };
  } catch (e) {
    rec = e instanceof Pt2fError
      ? { file, ok: false, error: e.name, message: e.message }
      : { file, ok: false, error: 'internal', message: e instanceof Error ? `${e.name}: ${e.message}\n${e.stack}` : String(e) };
  }
  process.stdout.write(JSON.stringify(rec) + '\n');
}
