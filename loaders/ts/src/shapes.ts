/**
 * Reading the generated JSON Schema's shapes: enums, references and unions, however spelled.
 *
 * flatc's JSON Schema is post-processed by schema/regen.py (floats also allow
 * "nan"/"inf"/"-inf"; enums also allow an integer, for values of newer minor
 * versions), and may be again. So shapes are recognised by what they mean,
 * not by one exact spelling: an enum is any list of names, alone or as one
 * branch of anyOf/oneOf next to integer branches; a reference may be wrapped
 * in a one-element allOf/anyOf/oneOf (the usual way to attach a description).
 */

export type Json = { [k: string]: unknown };

/** The anyOf/oneOf branches of a schema node, or null when it has none. */
export function alternatives(p: Json): Json[] | null {
  const alts = (p['anyOf'] ?? p['oneOf']) as Json[] | undefined;
  return Array.isArray(alts) ? alts : null;
}

/** The `$ref` of a property, direct or as the single branch of allOf/anyOf/oneOf; null when none. */
export function refOf(p: Json): string | null {
  if (typeof p['$ref'] === 'string') return p['$ref'];
  for (const k of ['allOf', 'anyOf', 'oneOf']) {
    const list = p[k] as Json[] | undefined;
    if (Array.isArray(list) && list.length === 1 && list[0] && typeof list[0] === 'object') return refOf(list[0]);
  }
  return null;
}

/**
 * The names of an enum schema node, or null when the node is not an enum:
 * `{enum: [names]}` (type string or unstated), or anyOf/oneOf with exactly one
 * such branch and otherwise only integer branches (unknown values as numbers).
 */
export function enumNames(p: Json): string[] | null {
  const list = p['enum'];
  if (Array.isArray(list)) {
    if ((p['type'] === undefined || p['type'] === 'string') && list.length > 0 && list.every((n) => typeof n === 'string')) return list as string[];
    return null;
  }
  const alts = alternatives(p);
  if (!alts) return null;
  let names: string[] | null = null;
  for (const a of alts) {
    const n = enumNames(a);
    if (n !== null) {
      if (names !== null) return null; // two name lists: not an enum this reader understands
      names = n;
    } else if (a['type'] !== 'integer' || a['enum'] !== undefined) {
      return null;
    }
  }
  return names;
}
