/**
 * Node-only layer: read a .pt2f file (and its shard files) from a path.
 *
 * Node has no mmap; the file is read into one buffer and every view the
 * reader hands out points into it.
 */
import { readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { readPt2f, Pt2fFile, ReadOptions } from './reader.js';

/** Reads `path` and checks it like `readPt2f`; shard files are read from the same directory on demand. */
export function readPt2fFile(path: string, opts: Omit<ReadOptions, 'loadShard'> = {}): Pt2fFile {
  const buf = readFileSync(path);
  const bytes = new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
  const dir = dirname(path);
  return readPt2f(bytes, {
    file: opts.file ?? basename(path),
    ...opts,
    loadShard: (name) => {
      const b = readFileSync(join(dir, name));
      return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    },
  });
}

export * from './index.js';
