/** Generic `Value` trees and the dict keys that torch turns into source (identifiers, attribute paths). */
import { LimitError } from '../errors.js';
import { checkStringClass } from '../strings.js';
import { arr, fail, kind, num, str, T, within } from './common.js';

/** A dict key that torch turns into Python source: a string key must be an identifier. */
export function checkIdentifierKey(key: T, path: string): void {
  const v = key['value'] as T | null;
  if (kind(v) === 'StringValue') checkStringClass(str(v!['value']) ?? '', 'identifier', 'dict key', path);
}

/** 1.1: an nn.Module input's keys name its parameters and buffers: attribute paths such as `lin.weight`. */
export function checkModuleKey(key: T, path: string): void {
  const v = key['value'] as T | null;
  if (kind(v) !== 'StringValue') throw fail("an nn.Module input's keys are parameter and buffer names", path, 'a string');
  checkStringClass(str(v!['value']) ?? '', 'attr_path', 'parameter or buffer name', `${path}.value`);
}

/** Generic `Value` trees: union set, tensor references in range, bounded depth. */
export class ValueCheck {
  constructor(private readonly nTensors: number, private readonly maxDepth: number) {}

  /** `objects`: EnumValue and ObjectValue may appear (1.1: a tensor subclass's context only). */
  check(value: T, depth: number, identifierKeys = false, objects = false): void {
    if (depth > this.maxDepth) throw new LimitError('value nested too deeply', { expected: `depth <= ${this.maxDepth}`, got: depth });
    const v = value['value'] as T | null;
    if (v === null || v === undefined) throw fail('union value is missing', 'value');
    const k = kind(v);
    if (k === 'ListValue') {
      arr(v['items']).forEach((item, i) => within(`value.items[${i}]`, () => this.check(item as T, depth + 1, identifierKeys, objects)));
    } else if (k === 'MapValue') {
      within('value', () => this.checkMap(v, depth + 1, identifierKeys, objects));
    } else if (k === 'TensorRefValue') {
      const t = num(v['tensor']);
      if (t >= this.nTensors) throw fail('tensor index out of range', 'value.tensor', `< ${this.nTensors}`, t);
    } else if (k === 'EnumValue' || k === 'ObjectValue') {
      if (!objects) throw fail("enum and object values appear only in a tensor subclass's context", 'value', 'a plain value', k);
      if (k === 'ObjectValue') {
        const names = new Set<string>();
        arr(v['fields']).forEach((field, i) => within(`value.fields[${i}]`, () => {
          const f = field as T;
          const name = str(f['name']) ?? '';
          if (names.has(name)) throw fail('object field names must be unique', 'name', undefined, JSON.stringify(name));
          names.add(name);
          const fv = (f['value'] ?? null) as T | null;
          if (fv === null) throw fail('required field is missing', 'value');
          this.check(fv, depth + 1, identifierKeys, true);
        }));
      }
    }
  }

  checkMap(mapping: T, depth: number, identifierKeys = false, objects = false): void {
    arr(mapping['entries']).forEach((entry, i) => {
      for (const part of ['key', 'value']) {
        within(`entries[${i}].${part}`, () => {
          const item = (entry as T)[part] as T | null;
          if (item === null || item === undefined) throw fail('required field is missing');
          this.check(item, depth, identifierKeys, objects);
          if (part === 'key' && identifierKeys) checkIdentifierKey(item, 'value');
        });
      }
    });
  }
}
