/**
 * Typed errors of the reader, mirroring pt2format's Python hierarchy.
 *
 * Every failure on bad input is a Pt2fError subclass naming where it happened
 * (file, section, byte offset, field path) and what was expected; the same
 * facts are properties so tools need not parse messages.
 */

/** Where and what, attached to every error. */
export interface ErrorContext {
  file?: string;
  section?: string | number;
  offset?: number;
  path?: string;
  expected?: unknown;
  got?: unknown;
}

/** Root of every error the reader throws on purpose. */
export class Pt2fError extends Error {
  file?: string;
  section?: string | number;
  offset?: number;
  path?: string;
  expected?: unknown;
  got?: unknown;
  detail: string;

  constructor(detail: string, ctx: ErrorContext = {}) {
    super(detail);
    this.detail = detail;
    Object.assign(this, ctx);
    this.name = new.target.name;
    this.message = this.render();
  }

  /** Python's rendering: "file 'x', section 'PROGRAM', offset 8, at a.b: detail (expected E, got G)". */
  render(): string {
    const where: string[] = [];
    if (this.file !== undefined) where.push(`file '${this.file}'`);
    if (this.section !== undefined) where.push(`section ${typeof this.section === 'string' ? `'${this.section}'` : this.section}`);
    if (this.offset !== undefined) where.push(`offset ${this.offset}`);
    if (this.path) where.push(`at ${this.path}`);
    let msg = this.detail;
    if (this.expected !== undefined || this.got !== undefined) msg += ` (expected ${this.expected === undefined ? 'None' : String(this.expected)}, got ${this.got === undefined ? 'None' : String(this.got)})`;
    return where.length ? `${where.join(', ')}: ${msg}` : msg;
  }

  /** Adds location while unwinding; returns this so callers can `throw e.withContext(...)`. */
  withContext(ctx: { file?: string; section?: string | number; pathPrefix?: string }): this {
    if (ctx.file !== undefined && this.file === undefined) this.file = ctx.file;
    if (ctx.section !== undefined && this.section === undefined) this.section = ctx.section;
    if (ctx.pathPrefix) this.path = this.path ? `${ctx.pathPrefix}.${this.path}` : ctx.pathPrefix;
    this.message = this.render();
    return this;
  }
}

/** The bytes are not a well-formed pt2format file. */
export class FormatError extends Pt2fError {}
/** Bad magic, header length, header checksum or section table. */
export class HeaderError extends FormatError {}
/** A shard file (or its shard_files entry) belongs to another save: its package id differs. */
export class StaleShardError extends HeaderError {}
/** A section or storage does not match its recorded checksum. */
export class ChecksumError extends FormatError {}
/** A section or storage is out of bounds, misaligned or overlapping. */
export class SegmentError extends FormatError {}
/** The program section cannot be decoded in its declared encoding. */
export class EncodingError extends FormatError {}
/** A size or nesting depth exceeds a safety limit. */
export class LimitError extends FormatError {}
/** The file needs a newer (or different) reader. */
export class VersionError extends Pt2fError {}
/** The file uses a required feature this reader does not know. */
export class UnsupportedFeatureError extends VersionError {}
/** The program is in an encoding (MessagePack, JSON) this reader does not decode. */
export class UnsupportedEncodingError extends VersionError {}
/** The program decodes but breaks an invariant (references, ranges). */
export class ValidationError extends Pt2fError {}
/** A string breaks the grammar of its declared class (SPEC.md section 9): names the class and `Table.field`. */
export class StringClassError extends ValidationError {
  constructor(detail: string, ctx: ErrorContext = {}, readonly stringClass?: string, readonly field?: string) {
    super(detail, ctx);
  }
}
