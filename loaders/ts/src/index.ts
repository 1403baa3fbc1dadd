/**
 * pt2format TypeScript reader: the public API (browser-safe, no Node APIs).
 *
 * ```ts
 * import { readPt2f } from '@pt2format/reader';
 * const f = readPt2f(bytes);            // checks header, CRC-32, FlatBuffers structure
 * const pkg = f.package();              // flatc-generated accessors, zero-copy
 * const t = f.tensor(0);                // Uint8Array view of the tensor's storage
 * const text = f.dump();                // canonical dump (SPEC.md §6)
 * ```
 */
export { readPt2f, Pt2fFile, DTYPE_ITEMSIZE } from './reader.js';
export type { ReadOptions, TensorView } from './reader.js';
export { parseContainer, MAGIC, READER_FORMAT_MAJOR, KNOWN_FEATURES, SectionKind, ProgramEncoding } from './container.js';
export type { Header, Section, Container } from './container.js';
export { crc32 } from './crc32.js';
export { deriveDescriptor, describeSchema, schemaDescriptor } from './descriptor.js';
export { DEFAULT_MAX_DEPTH } from './verify.js';
export { DESC, descOf, bitsNumber, numberBits } from './tree.js';
export type { TTable, TValue } from './tree.js';
export { validatePackage } from './validate.js';
export { checkStringClass } from './strings.js';
export {
  Pt2fError, FormatError, HeaderError, ChecksumError, SegmentError, EncodingError, LimitError, VersionError,
  UnsupportedFeatureError, UnsupportedEncodingError, ValidationError, StringClassError, StaleShardError,
} from './errors.js';
/** The flatc-generated classes and enums (Package, Program, Graph, Node, ScalarType, ...). */
export * as schema from './_build/classes.js';
