// pt2f/error.h: the typed error every pt2f function throws on bad input.
//
// Kinds mirror pt2format.errors (Python) so both readers name a failure the
// same way; the message says where (file, section, offset, field path) and
// what was expected, on one line.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace pt2f {

/// What went wrong, by what the caller can do about it (as in pt2format.errors).
enum class ErrorKind {
  Io,                   // the file cannot be opened or mapped
  Header,               // HeaderError: magic, header length/checksum, section table
  Checksum,             // ChecksumError: a section or storage fails its CRC-32
  Segment,              // SegmentError: out of bounds, misaligned, overlapping
  Encoding,             // EncodingError: the program section does not decode/verify
  Limit,                // LimitError: a size or depth exceeds a safety limit
  Version,              // VersionError: the file needs a newer reader
  UnsupportedFeature,   // UnsupportedFeatureError: unknown required feature bit
  UnsupportedEncoding,  // MessagePack/JSON program: not readable by this reader
  Validation,           // ValidationError: decodes but breaks an invariant
  StringClass,          // StringClassError (a ValidationError): a string outside its class (SPEC.md §9)
  StaleShard,           // StaleShardError (a HeaderError): a shard of another save (package_id differs)
  Format,               // FormatError: a main or shard file that is not a regular file
  Evaluation,           // a symbolic expression cannot be evaluated
};

/// Python-style class name of a kind ("HeaderError", ...).
const char *error_kind_name(ErrorKind kind);

/// One failure with its location. what() is the rendered one-line message.
class Error : public std::runtime_error {
 public:
  struct Where {
    std::string file;
    std::string section;
    std::optional<uint64_t> offset;
    std::string path;
    std::string expected;
    std::string got;
  };

  Error(ErrorKind kind, std::string detail, Where where = {});

  ErrorKind kind() const { return kind_; }
  const std::string &detail() const { return detail_; }
  const Where &where() const { return where_; }

  /// Copy with location added while unwinding (fields already set are kept;
  /// path_prefix is prepended to the path).
  Error with_context(const std::string &file, const std::string &section = "",
                     const std::string &path_prefix = "") const;

  /// For a VersionError (not an unsupported feature): a copy whose message names the file's
  /// format version and the reader's, as SPEC.md §8.2 requires; any other error unchanged.
  Error with_versions(uint16_t file_major, uint16_t file_minor) const;

 private:
  static std::string render(ErrorKind kind, const std::string &detail, const Where &w);
  ErrorKind kind_;
  std::string detail_;
  Where where_;
};

}  // namespace pt2f
