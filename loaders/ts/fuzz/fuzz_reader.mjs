// Mutation-loop fuzzer for the TypeScript reader (readPt2f + verifyData, dump, tensor views).
//
// Jazzer.js (@jazzer.js/core) downloads a prebuilt native addon from outside
// npm when installed, so this driver is a plain deterministic mutation loop
// with the same structure as the C++ and Python harnesses. Each input is one
// mode byte then a body, so mutations are not all stopped by the CRCs:
//   mode % 3 == 0: the body is a whole file, as is;
//   mode % 3 == 1: the body is a whole file whose section and header CRCs are
//                  recomputed first;
//   mode % 3 == 2: the body is a FlatBuffers PROGRAM section, wrapped in a
//                  well-formed container.
// A Pt2fError is a clean rejection; any other exception is a finding: the
// input and its stack go to the findings directory (deduplicated by error
// type and top frame) and the loop goes on. Before each execution the input is
// kept in `<findings>/../current.input`, so a hang killed by the caller's
// timeout leaves it behind.
//
//   node loaders/ts/fuzz/fuzz_reader.mjs --runs N | --seconds S [--seed K] SEEDS_DIR FINDINGS_DIR
//   node loaders/ts/fuzz/fuzz_reader.mjs --replay FILE...
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const { readPt2f, Pt2fError, crc32 } = await import(join(here, '..', 'dist', 'index.js'));

const HEADER_SIZE = 64;
const ENTRY_SIZE = 48;
const CHECKSUM_AT = 40;

function u16(b, o) { return b[o] | (b[o + 1] << 8); }
function u32(b, o) { return (b[o] | (b[o + 1] << 8) | (b[o + 2] << 16) | (b[o + 3] << 24)) >>> 0; }
function setU32(b, o, v) { for (let i = 0; i < 4; i++) b[o + i] = (v >>> (8 * i)) & 0xff; }
function u64(b, o) { return u32(b, o) + u32(b, o + 4) * 2 ** 32; }

/** Recompute every CRC-32 section checksum, then the header checksum (like tests/support/pt2f_samples.reseal_sections). */
function reseal(buf) {
  if (buf.length < HEADER_SIZE) return buf;
  const count = u16(buf, 10);
  for (let i = 0; i < count; i++) {
    const at = HEADER_SIZE + ENTRY_SIZE * i;
    if (at + ENTRY_SIZE > buf.length) break;
    const offset = u64(buf, at + 8), length = u64(buf, at + 16), kind = u32(buf, at + 24);
    if (kind === 1 && offset + length <= buf.length) setU32(buf, at + 28, crc32(buf.subarray(offset, offset + length)));
  }
  const len = Math.min(HEADER_SIZE + ENTRY_SIZE * count, buf.length);
  setU32(buf, CHECKSUM_AT, 0);
  setU32(buf, CHECKSUM_AT, crc32(buf.subarray(0, len)));
  return buf;
}

/** A one-section container around a FlatBuffers program (header layout: schema/SPEC.md). */
function wrapProgram(program) {
  const start = 112;  // header + one entry, already a multiple of the program alignment (8)
  const out = new Uint8Array(start + program.length);
  const dv = new DataView(out.buffer);
  out.set([0x89, 0x50, 0x54, 0x32, 0x46, 0x0d, 0x0a, 0x1a], 0);
  dv.setUint16(8, 1, true); dv.setUint16(10, 1, true); dv.setUint32(12, 112, true);
  dv.setUint16(16, 1, true); dv.setUint16(18, 0, true);
  dv.setBigUint64(32, BigInt(out.length), true);
  dv.setUint16(64, 1, true); dv.setUint16(66, 1, true); dv.setUint32(68, 8, true);
  dv.setBigUint64(72, BigInt(start), true); dv.setBigUint64(80, BigInt(program.length), true);
  dv.setUint32(88, 1, true); dv.setUint32(92, crc32(program), true);
  out.set(program, start);
  setU32(out, CHECKSUM_AT, crc32(out.subarray(0, 112)));
  return out;
}

function fileBytes(input) {
  if (input.length < 2) return null;
  const body = input.subarray(1);
  switch (input[0] % 3) {
    case 0: return body;
    case 1: return reseal(Uint8Array.from(body));
    default: return wrapProgram(body);
  }
}

/** Everything a caller of the reader does with a file. */
function exercise(bytes) {
  const f = readPt2f(bytes, { verifyData: true });
  f.dump();
  const pkg = f.package();
  const n = Math.min(pkg.tensorsLength(), 64);
  for (let i = 0; i < n; i++) {
    try {
      const t = f.tensor(i);
      if (t.data && t.data.length) void t.data[t.data.length - 1];
    } catch (e) {
      if (!(e instanceof Pt2fError)) throw e;
    }
  }
}

const seen = new Set();
let findings = 0;

function runOne(input, findingsDir) {
  const bytes = fileBytes(input);
  if (bytes === null) return;
  try {
    exercise(bytes);
  } catch (e) {
    if (e instanceof Pt2fError) return;
    const frame = String(e && e.stack || '').split('\n').find((l) => l.includes(' at ')) || '?';
    const key = `${e && e.name}|${frame.trim()}`;
    if (seen.has(key)) return;
    seen.add(key);
    findings++;
    const digest = createHash('sha1').update(input).digest('hex').slice(0, 16);
    const text = `${e && e.name}: ${String(e && e.message).slice(0, 500)}\n${e && e.stack}`;
    if (findingsDir) {
      writeFileSync(join(findingsDir, `${digest}.input`), input);
      writeFileSync(join(findingsDir, `${digest}.txt`), text);
    }
    console.error(`FINDING ${digest}: ${e && e.name} ${frame.trim()}: ${String(e && e.message).slice(0, 200)}`);
  }
}

// -- mutations (xorshift PRNG, deterministic for a seed) ---------------------------------
let state = 0x9e3779b9;
function rnd(n) {
  state ^= state << 13; state >>>= 0; state ^= state >>> 17; state ^= state << 5; state >>>= 0;
  return n ? state % n : state;
}
const INTERESTING32 = [0, 1, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff, 0x10000, 64, 8];

function mutate(seed, seeds) {
  let b = Uint8Array.from(seed);
  const rounds = 1 + rnd(4);
  for (let r = 0; r < rounds && b.length > 2; r++) {
    const at = 1 + rnd(b.length - 1);
    switch (rnd(9)) {
      case 0: b[at] ^= 1 << rnd(8); break;
      case 1: b[at] = [0, 0xff, 0x7f, 0x80, 1][rnd(5)]; break;
      case 2: b[at] = rnd(256); break;
      case 3: if (at + 4 <= b.length) setU32(b, at - (at % 4 === 0 ? 0 : at % 4) || 1, INTERESTING32[rnd(INTERESTING32.length)]); break;
      case 4: { const n = 1 + rnd(Math.min(64, b.length - at)); b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + n)]); break; }
      case 5: { const n = 1 + rnd(32); const ins = new Uint8Array(n).map(() => rnd(256)); b = Uint8Array.from([...b.subarray(0, at), ...ins, ...b.subarray(at)]); break; }
      case 6: { const n = 1 + rnd(64); const from = 1 + rnd(b.length - 1); b.copyWithin(at, from, Math.min(b.length, from + n)); break; }
      case 7: { const o = seeds[rnd(seeds.length)]; const from = 1 + rnd(o.length - 1); const n = 1 + rnd(Math.min(256, o.length - from)); b.set(o.subarray(from, from + Math.min(n, b.length - at)), at); break; }
      default: b = b.subarray(0, Math.max(2, at)); break;
    }
  }
  if (rnd(8) === 0) b[0] = rnd(3);
  return b;
}

function main(argv) {
  if (argv[0] === '--replay') {
    for (const p of argv.slice(1)) runOne(new Uint8Array(readFileSync(p)), null);
    process.exitCode = findings ? 1 : 0;
    return;
  }
  let runs = Infinity, seconds = Infinity;
  const pos = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--runs') runs = Number(argv[++i]);
    else if (argv[i] === '--seconds') seconds = Number(argv[++i]);
    else if (argv[i] === '--seed') state = (Number(argv[++i]) >>> 0) || 1;
    else pos.push(argv[i]);
  }
  const [seedsDir, findingsDir] = pos;
  mkdirSync(findingsDir, { recursive: true });
  const seeds = readdirSync(seedsDir).sort().map((n) => new Uint8Array(readFileSync(join(seedsDir, n))));
  const current = join(findingsDir, '..', 'current.input');
  const t0 = Date.now();
  let execs = 0;
  for (const s of seeds) { runOne(s, findingsDir); execs++; }
  while (execs < runs && (Date.now() - t0) / 1000 < seconds) {
    const input = mutate(seeds[rnd(seeds.length)], seeds);
    writeFileSync(current, input);
    runOne(input, findingsDir);
    execs++;
  }
  const secs = (Date.now() - t0) / 1000;
  console.log(`fuzz_ts: ${execs} executions in ${secs.toFixed(0)}s (${(execs / secs).toFixed(0)}/s), ${findings} findings`);
  process.exitCode = findings ? 1 : 0;
}

main(process.argv.slice(2));
