/** What the parts of validatePackage (src/validate.ts) share: field readers and the error helpers. */
import { Pt2fError, ValidationError } from '../errors.js';
import { descOf, TTable, TValue } from '../tree.js';

export type T = TTable;

export const enumNames = (e: Record<string | number, string | number>) => e as Record<number, string>;

export const arr = (v: TValue | undefined) => (v ?? []) as TValue[];
export const big = (v: TValue | undefined) => BigInt((v ?? 0) as number | bigint);
export const num = (v: TValue | undefined) => Number((v ?? 0) as number | bigint);
export const str = (v: TValue | undefined) => (v ?? null) as string | null;
export const kind = (v: TValue | undefined) => (v === null || v === undefined ? null : descOf(v as T).name);

export function fail(message: string, path?: string, expected?: unknown, got?: unknown): ValidationError {
  return new ValidationError(message, { path, expected, got });
}

/** Runs `f`, adding `prefix` to the path of a Pt2fError it throws. */
export function within<R>(prefix: string, f: () => R): R {
  try {
    return f();
  } catch (e) {
    if (e instanceof Pt2fError) throw e.withContext({ pathPrefix: prefix });
    throw e;
  }
}
