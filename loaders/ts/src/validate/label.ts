/**
 * A file's label is not older than its content (SPEC.md 8.1), as pt2format/_validate/label.py checks it.
 *
 * A field that is present (not its default, not an empty vector), an enum value, a union member or a
 * feature bit defined by a newer minor than the file's format_version is a ValidationError naming it,
 * its path and the minor that defines it: every reader of the labelled minor would read the file
 * without it, and the canonical dump (which renders what the label's minor defines) would drop it.
 * Names newer than this reader are SPEC.md 8.2's business; a file labelled with this reader's minor is
 * not walked.
 */
import { FEATURES } from '../generated/container.js';
import { ENUM_VALUE_MINOR, FIELD_MINOR, SCHEMA_VERSION, UNION_MEMBER_MINOR } from '../generated/minors.js';
import { FieldDesc } from '../descriptor.js';
import { absentValue, descOf, TTable, TValue } from '../tree.js';
import { fail } from './common.js';

/** A field path kept as links, written out only for the name found. */
type Link = { up: Link | null; field: string; index: number } | null;

function pathOf(link: Link): string {
  const parts: string[] = [];
  for (let l = link; l; l = l.up) parts.push(l.index >= 0 ? `${l.field}[${l.index}]` : l.field);
  return parts.reverse().join('.');
}

function older(what: string, since: number, label: number, path: string): Error {
  const major = SCHEMA_VERSION[0];
  return fail(`${what} is defined by format ${major}.${since}, newer than the file's format_version, which a reader `
    + 'of the labelled minor does not know (SPEC.md §8.1)', path, `format_version ${major}.${since} or newer`,
  `${major}.${label}`);
}

/** Throws ValidationError when `pkg` (labelled with this reader's major) uses a name newer than its label. */
export function checkLabel(pkg: TTable): void {
  const fv = pkg['format_version'] as TTable | null;
  if (fv === null || fv['major'] !== SCHEMA_VERSION[0] || (fv['minor'] as number) >= SCHEMA_VERSION[1]) return;
  const label = fv['minor'] as number;
  const features = pkg['required_features'] as bigint;
  for (const [name, { bit, since }] of Object.entries(FEATURES).sort((a, b) => a[1].bit - b[1].bit)) {
    if ((features >> BigInt(bit)) & 1n && since[1]! > label) {
      throw older(`feature bit ${name} (0x${(1n << BigInt(bit)).toString(16)})`, since[1]!, label, 'required_features');
    }
  }
  walk(pkg, null, label);
}

function present(v: TValue, f: FieldDesc): boolean {
  switch (f.kind) {
    case 'scalar': return v !== absentValue(f);
    case 'vector': return (v as TValue[]).length > 0;
    case 'union': return false;  // its member is checked by its type
    default: return v !== null;
  }
}

function enumSince(enumName: string, v: TValue): number {
  return ENUM_VALUE_MINOR[enumName]?.[String(v)] ?? 0;
}

function walk(o: TTable, link: Link, label: number): void {
  const desc = descOf(o);
  const newer = FIELD_MINOR[desc.name];
  for (const f of desc.fields) {
    const v = o[f.name]!;
    const here: Link = { up: link, field: f.name, index: -1 };
    const since = newer?.[f.name] ?? 0;
    if (since > label && present(v, f)) throw older(`field ${desc.name}.${f.name}`, since, label, pathOf(here));
    switch (f.kind) {
      case 'scalar':
        if (f.enumDesc && enumSince(f.enumDesc.name, v) > label) {
          throw older(`enum value ${String(v)} of ${desc.name}.${f.name}`, enumSince(f.enumDesc.name, v), label, pathOf(here));
        }
        break;
      case 'table':
        if (v !== null) walk(v as TTable, here, label);
        break;
      case 'union': {
        if (v === null) break;
        const member = descOf(v as TTable);
        const type = f.members.indexOf(member);
        const m = UNION_MEMBER_MINOR[f.enumDesc.name]?.[String(type)] ?? 0;
        if (m > label) {
          throw older(`union member ${member.name} of ${desc.name}.${f.name}`, m, label,
            pathOf({ up: link, field: `${f.name}_type`, index: -1 }));
        }
        walk(v as TTable, here, label);
        break;
      }
      case 'vector': {
        const items = v as TValue[];
        const elem = f.elem;
        if (elem.kind === 'scalar' && elem.enumDesc) {
          const e = elem.enumDesc.name;
          items.forEach((x, i) => {
            if (enumSince(e, x) > label) {
              throw older(`enum value ${String(x)} of ${desc.name}.${f.name}`, enumSince(e, x), label,
                pathOf({ up: link, field: f.name, index: i }));
            }
          });
        } else if (elem.kind === 'table') {
          items.forEach((x, i) => { if (x !== null) walk(x as TTable, { up: link, field: f.name, index: i }, label); });
        }
        break;
      }
      default:
        break;
    }
  }
}
