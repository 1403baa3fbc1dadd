/**
 * String classes (SPEC.md section 9): every decoded string is checked against its field's class.
 *
 * Which field has which class, the grammars, lengths and reserved names are
 * generated (src/generated/strings.ts, from schema/pt2format.fbs and
 * pt2format/_strings.py), so a new string field cannot skip the check and the
 * rules cannot drift from Python's. This module only combines them, in the
 * order Python's checker does: empty, lone surrogate (EncodingError), length,
 * grammar (StringClassError naming Table.field and the class).
 */
import { EncodingError, StringClassError } from './errors.js';
import {
  FIELD_STRING_CLASS, IDENT_RANGES, PYTHON_KEYWORDS, RE_CALL_INDEX, RE_CONTROL, RE_SLICE_COMPONENT, RE_DEVICE_TYPE, RE_DIGITS, RE_FILE_NAME,
  RE_IDENT, RE_QUAL_MARKER, RESERVED_LOCAL_NAMES, RESERVED_MEMBER_NAMES, RESERVED_NODE_META_KEYS, STRING_CLASSES,
} from './generated/strings.js';
import { MAX_DEVICE_TYPE_LENGTH, MAX_FILE_NAME_LENGTH } from './generated/limits.js';

/** The class of a string field of `table`, or undefined when the field is not a string (generated table). */
export function stringClassOf(table: string, field: string): string | undefined {
  return FIELD_STRING_CLASS[table]?.[field];
}

/** A string field's class and its `Table.field` name, looked up once per (table, field). */
export interface StringSlot { cls: string | undefined; where: string }
const SLOTS = new Map<string, Map<string, StringSlot>>();
export function stringSlot(table: string, field: string): StringSlot {
  let t = SLOTS.get(table);
  if (!t) SLOTS.set(table, (t = new Map()));
  let s = t.get(field);
  if (!s) t.set(field, (s = { cls: stringClassOf(table, field), where: `${table}.${field}` }));
  return s;
}

function isDunder(s: string): boolean {
  return s.length > 4 && s.startsWith('__') && s.endsWith('__');
}

const WHY_IDENT = 'a Python identifier (str.isidentifier, Unicode 14.0.0) in NFKC form';
const IDENT_ROWS = IDENT_RANGES.length / 4;

/** Row of the identifier table holding code point `cp`, or -1 (binary search on the sorted firsts). */
function identRow(cp: number): number {
  let lo = 0;
  let hi = IDENT_ROWS - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (IDENT_RANGES[mid * 4]! > cp) hi = mid - 1;
    else if (IDENT_RANGES[mid * 4 + 1]! < cp) lo = mid + 1;
    else return mid;
  }
  return -1;
}

/** Python's identifier rule in NFKC form, by the generated table (as pt2format/_strings.py). */
function unicodeIdentifier(s: string): boolean {
  let prev = 0;
  let first = true;
  for (const ch of s) {
    const k = identRow(ch.codePointAt(0)!);
    if (k < 0 || (first && !IDENT_RANGES[k * 4 + 2])) return false;
    const c = IDENT_RANGES[k * 4 + 3]!;
    if (c && prev > c) return false;
    prev = c;
    first = false;
  }
  return true;
}

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The identifier grammar without the dunder rule. */
function isIdentifier(s: string): boolean {
  if (isAscii(s)) return RE_IDENT.test(s) && !PYTHON_KEYWORDS.has(s);
  return unicodeIdentifier(s);
}

function identifier(s: string): string | null {
  if (!isIdentifier(s)) return PYTHON_KEYWORDS.has(s) ? 'not a Python keyword' : WHY_IDENT;
  if (isDunder(s)) return 'not a dunder name';
  return null;
}

function attrPath(s: string): string | null {
  for (const part of s.split('.')) {
    if (RE_DIGITS.test(part)) continue;
    const why = identifier(part);
    if (why !== null) return `dot-separated identifiers or indices (${why}: '${part}')`;
    if (RESERVED_MEMBER_NAMES.has(part)) return `no component reserved by torch.nn.Module/GraphModule ('${part}')`;
  }
  return null;
}

const NO_CONTROL = 'no control characters or line separators';

const GRAMMARS: Record<string, (s: string) => string | null> = {
  local_name: (s) => {
    const why = identifier(s);
    return why === null && RESERVED_LOCAL_NAMES.has(s) ? `not one of ${JSON.stringify([...RESERVED_LOCAL_NAMES])}` : why;
  },
  identifier,
  attr_path: attrPath,
  module_call_path: (s) => {
    const at = s.indexOf('@');
    if (at < 0) return attrPath(s);
    const path = s.slice(0, at);
    if (path === '' || !RE_CALL_INDEX.test(s.slice(at + 1))) {
      return "a module path, optionally followed by @ and a call index [1-9][0-9]* (torch's n1.n2@1)";
    }
    return attrPath(path);
  },
  module_stack_path: (s) => {
    for (const part of s.split('.')) {
      if (RE_SLICE_COMPONENT.test(part)) continue;
      const why = attrPath(part);
      if (why !== null) return why.endsWith(')') ? `${why.slice(0, -1)}, or slice(start, stop, step) components)` : why;
    }
    return null;
  },
  qualified_name: (s) => {
    for (const part of s.split('.')) {
      if (!(isIdentifier(part) || RE_QUAL_MARKER.test(part))) return `dot-separated identifiers ('${part}')`;
    }
    return null;
  },
  file_name: (s) => (RE_FILE_NAME.test(s) ? null : `[A-Za-z0-9_][A-Za-z0-9._-]*, at most ${MAX_FILE_NAME_LENGTH} characters, no directories`),
  device_type: (s) => (RE_DEVICE_TYPE.test(s) ? null : `[a-z][a-z0-9_]*, at most ${MAX_DEVICE_TYPE_LENGTH} characters`),
  printed_name: (s) => (RE_CONTROL.test(s) ? NO_CONTROL : null),
  free_text: () => null,
};

/** Whether `s` holds a lone surrogate (only JSON's \uD800 escapes can make one). */
export function hasLoneSurrogate(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0xd800 || c > 0xdfff) continue;
    if (c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) { i++; continue; }
    }
    return true;
  }
  return false;
}

/** Length in code points (what Python's len() counts), computed only past `limit` UTF-16 units. */
function longerThan(s: string, limit: number): boolean {
  if (s.length <= limit) return false;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    if (++n > limit) return true;
  }
  return false;
}

function shown(s: string): string {
  return JSON.stringify(s.slice(0, 80)) + (s.length > 80 ? '...' : '');
}

/**
 * Checks `s` against string class `cls`; throws StringClassError (or EncodingError for
 * a lone surrogate) naming `where` (Table.field) and `path`.
 */
export function checkStringClass(s: string, cls: string, where: string, path?: string): void {
  const spec = STRING_CLASSES[cls];
  const grammar = spec && GRAMMARS[spec.kind];
  if (!spec || !grammar) throw new Error(`pt2format TS reader: no grammar for string class ${cls} (${where})`);
  let why: string | null;
  if (s === '') {
    why = spec.empty ? null : 'a non-empty string';
  } else if (hasLoneSurrogate(s)) {
    throw new EncodingError(`string is not valid Unicode (lone surrogate) in ${where}`,
      { path: path ?? where, expected: 'Unicode scalar values only', got: shown(s) });
  } else if (longerThan(s, spec.max)) {
    why = `at most ${spec.max} characters`;
  } else {
    why = grammar(s);
  }
  if (why !== null) {
    throw new StringClassError(`string is not a valid ${cls} (${where})`, { path: path ?? where, expected: why, got: shown(s) }, cls, where);
  }
}

/** An `extra` node-metadata key: an identifier that torch does not interpret itself (SPEC.md section 9). */
export function checkExtraMetaKey(key: string, path: string): void {
  checkStringClass(key, 'identifier', 'NodeMetadata.extra.key', path);
  if (RESERVED_NODE_META_KEYS.has(key)) {
    throw new StringClassError(`extra metadata key '${key}' is reserved for structured metadata`,
      { path, expected: 'a key torch does not interpret', got: JSON.stringify(key) }, 'extra_meta_key', 'NodeMetadata.extra.key');
  }
}
