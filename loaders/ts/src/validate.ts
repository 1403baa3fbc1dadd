/**
 * The invariants of a decoded Package (SPEC.md section 7), as pt2format/_validate.py checks them.
 *
 * Runs on every read, after decoding, in every encoding, so the TS reader
 * neither dumps a file the Python reader refuses nor refuses one it accepts:
 * indices in range, shard/external names plain and unique, segments,
 * storages inside their sections and never overlapping, tensors inside their
 * storages, sorted and unique names, value names declared in their graph,
 * the sym-expression pool acyclic with the right arity, reserved `extra`
 * metadata keys, identifier dict keys in tree specs and example inputs.
 * Same error classes as Python; paths name the field (`programs[0].graph...`).
 * The symbolic pool is evaluated within the bounds of SPEC.md 11.6
 * (src/symeval.ts, the rules of pt2format/_symeval.py).
 *
 * This module is the package level; the parts, in src/validate/: data.ts (files, segments, storages,
 * tensor rows), values.ts (Value trees, dict keys), program.ts (a program, its pool and signature),
 * graph.ts (scopes, arguments, metadata), common.ts (field readers, error helpers).
 */
import { MAX_DEPTH, MAX_EXTRA_FILE_NAME_BYTES } from './generated/limits.js';
import { checkFieldRules } from './generated/rules.js';
import { KNOWN_FEATURES } from './container.js';
import { UnsupportedFeatureError, VersionError } from './errors.js';
import { descOf } from './tree.js';
import { READER_FORMAT_MAJOR } from './container.js';
import { SymBudget } from './symeval.js';
import { arr, big, fail, num, str, T, within } from './validate/common.js';
import { checkData } from './validate/data.js';
import { ProgramCheck } from './validate/program.js';
import { ValueCheck } from './validate/values.js';

export { ITEMSIZE_BY_NAME, tensorNbytes } from './validate/data.js';

export interface ValidateOptions {
  /** DATA section index of the main file -> its length; storages in the main file are checked against it. */
  dataSectionLengths?: Map<number, number>;
  maxDepth?: number;
}

/** Throws a Pt2fError (mostly ValidationError) on the first broken invariant of `pkg`. */
export function validatePackage(pkg: T, opts: ValidateOptions = {}): void {
  const maxDepth = opts.maxDepth ?? MAX_DEPTH;
  const fv = pkg['format_version'] as T | null;
  if (fv === null) throw fail('required field is missing', 'format_version');
  const major = num(fv['major']);
  if (major > READER_FORMAT_MAJOR || major === 0) {
    throw new VersionError(`format version ${major}.${num(fv['minor'])} is not readable by this reader`,
      { path: 'format_version', expected: `major ${READER_FORMAT_MAJOR}`, got: major });
  }
  const features = big(pkg['required_features']);
  if (features & ~KNOWN_FEATURES) {
    throw new UnsupportedFeatureError(`file requires unknown features 0x${(features & ~KNOWN_FEATURES).toString(16)}`,
      { path: 'required_features', expected: `bits within 0x${KNOWN_FEATURES.toString(16)}`, got: `0x${features.toString(16)}` });
  }
  // Every pt2f_required, pt2f_index and pt2f_keys field of the schema, generated; the checks below rely on them.
  checkFieldRules(pkg, (message, path, expected, got) => { throw fail(message, path, expected, got); }, (o) => descOf(o as T).name);
  checkData(pkg, opts.dataSectionLengths);
  checkExtraFiles(pkg);
  const nTensors = arr(pkg['tensors']).length;
  const budget = new SymBudget();  // one per file: SPEC.md 11.6, "Expanded size of a file"
  arr(pkg['programs']).forEach((p, i) => {
    within(`programs[${i}]`, () => new ProgramCheck(p as T, nTensors, maxDepth, arr(pkg['tensors']) as T[], budget).check());
  });
  const values = new ValueCheck(nTensors, maxDepth);
  arr(pkg['operators']).forEach((op, i) => within(`operators[${i}]`, () => {
    for (const group of ['parameters', 'returns']) {
      arr((op as T)[group]).forEach((p, j) => {
        const dv = (p as T)['default_value'] as T | null;
        if (dv !== null && dv !== undefined) within(`${group}[${j}].default_value`, () => values.check(dv, 0));
      });
    }
  }));
}

/** `Package.extra_files` (pt2format/_extras.py): names 1-255 UTF-8 bytes without control characters (sorted, unique, storages: checkFieldRules). */
function checkExtraFiles(pkg: T): void {
  arr(pkg['extra_files']).forEach((e, i) => {
    const name = str((e as T)['name']);
    let problem: string | null = null;
    if (name === null) problem = 'must be a str, got NoneType';
    else {
      const n = new TextEncoder().encode(name).length;
      if (n < 1 || n > MAX_EXTRA_FILE_NAME_BYTES) problem = `must be 1 to ${MAX_EXTRA_FILE_NAME_BYTES} bytes of UTF-8, got ${n}`;
      else if (/[\x00-\x1f\x7f]/.test(name)) problem = 'must not contain NUL or other control characters';
    }
    if (problem !== null) throw fail(`extra file name ${problem}`, `extra_files[${i}].name`, undefined, JSON.stringify(name).slice(0, 80));
  });
}
