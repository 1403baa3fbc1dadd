#!/usr/bin/env node
/**
 * Command line: `node dist/cli.js dump FILE` prints the canonical dump (SPEC.md §6).
 *
 * Exit codes: 0 success; 1 damaged or invalid file (typed Pt2fError, message
 * on stderr); 2 usage or I/O error; 3 program encoding not supported by this
 * reader; 4 file needs a newer reader. `dump --no-validate` skips the
 * Package-vs-header and invariant checks (decoding and string classes still run),
 * for comparing the decoder alone with Python's `_codecs.decode`.
 */
import { readPt2fFile } from './node.js';
import { readFileSync } from 'node:fs';
import { deriveDescriptor, describeSchema } from './descriptor.js';
import { Pt2fError, UnsupportedEncodingError, VersionError } from './errors.js';

const USAGE = 'usage: pt2f-ts dump FILE [--no-validate] | verify FILE [--data] | descriptor [--schema JSON_SCHEMA_FILE]';

function write(text: string): Promise<void> {
  return new Promise((resolve, reject) => process.stdout.write(text, (e) => (e ? reject(e) : resolve())));
}

async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (cmd === 'descriptor' && rest.length === 0) {
    await write(JSON.stringify(describeSchema()) + '\n');
    return 0;
  }
  if (cmd === 'descriptor' && rest.length === 2 && rest[0] === '--schema') {
    // The descriptor derived from another JSON Schema file (tests reshape the generated one).
    const schema = JSON.parse(readFileSync(rest[1]!, 'utf8')) as unknown;
    await write(JSON.stringify(describeSchema(deriveDescriptor(schema))) + '\n');
    return 0;
  }
  const files = rest.filter((a) => !a.startsWith('--'));
  const flags = rest.filter((a) => a.startsWith('--'));
  const okFlags = cmd === 'verify' ? ['--data'] : ['--no-validate'];
  if ((cmd !== 'dump' && cmd !== 'verify') || files.length !== 1 || flags.some((f) => !okFlags.includes(f))) {
    process.stderr.write(USAGE + '\n');
    return 2;
  }
  const path = files[0]!;
  try {
    const f = readPt2fFile(path, { verifyData: flags.includes('--data'), validate: !flags.includes('--no-validate') });
    if (cmd === 'dump') await write(f.dump());
    else await write(`${path}: ok\n`);
    return 0;
  } catch (e) {
    if (e instanceof Pt2fError) {
      process.stderr.write(`pt2f-ts: ${e.name}: ${e.message}\n`);
      if (e instanceof UnsupportedEncodingError) return 3;
      if (e instanceof VersionError) return 4;
      return 1;
    }
    const err = e as NodeJS.ErrnoException;
    if (err && typeof err.code === 'string') {
      process.stderr.write(`pt2f-ts: cannot read ${path}: ${err.message}\n`);
      return 2;
    }
    throw e;
  }
}

main(process.argv.slice(2)).then((code) => { process.exitCode = code; }, (e) => {
  process.stderr.write(`pt2f-ts: internal error: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 70;
});
