// Rendering of pt2f::Error messages, in the same shape as pt2format.errors.
#include "pt2f/error.h"

#include "pt2f/container.h"

namespace pt2f {

const char *error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io: return "IOError";
    case ErrorKind::Header: return "HeaderError";
    case ErrorKind::Checksum: return "ChecksumError";
    case ErrorKind::Segment: return "SegmentError";
    case ErrorKind::Encoding: return "EncodingError";
    case ErrorKind::Limit: return "LimitError";
    case ErrorKind::Version: return "VersionError";
    case ErrorKind::UnsupportedFeature: return "UnsupportedFeatureError";
    case ErrorKind::UnsupportedEncoding: return "UnsupportedEncodingError";
    case ErrorKind::Validation: return "ValidationError";
    case ErrorKind::StringClass: return "StringClassError";
    case ErrorKind::StaleShard: return "StaleShardError";
    case ErrorKind::Format: return "FormatError";
    case ErrorKind::Evaluation: return "EvaluationError";
  }
  return "Error";
}

Error Error::with_versions(uint16_t file_major, uint16_t file_minor) const {
  if (kind_ != ErrorKind::Version || detail_.find("this reader reads") != std::string::npos) return *this;
  return Error(kind_,
               detail_ + "; the file is format " + std::to_string(file_major) + "." + std::to_string(file_minor) +
                   ", this reader reads " + std::to_string(kReaderFormatMajor) + "." +
                   std::to_string(kReaderFormatMinor),
               where_);
}

Error::Error(ErrorKind kind, std::string detail, Where where)
    : std::runtime_error(render(kind, detail, where)),
      kind_(kind), detail_(std::move(detail)), where_(std::move(where)) {}

std::string Error::render(ErrorKind kind, const std::string &detail, const Where &w) {
  std::string where;
  auto add = [&](const std::string &part) {
    if (!where.empty()) where += ", ";
    where += part;
  };
  if (!w.file.empty()) add("file '" + w.file + "'");
  if (!w.section.empty()) add("section '" + w.section + "'");
  if (w.offset) add("offset " + std::to_string(*w.offset));
  if (!w.path.empty()) add("at " + w.path);
  std::string msg = detail;
  if (!w.expected.empty() || !w.got.empty())
    msg += " (expected " + (w.expected.empty() ? std::string("None") : w.expected) + ", got " +
           (w.got.empty() ? std::string("None") : w.got) + ")";
  std::string out = error_kind_name(kind);
  out += ": ";
  if (!where.empty()) out += where + ": ";
  out += msg;
  for (char &c : out)  // one line, always
    if (c == '\n' || c == '\r') c = ' ';
  return out;
}

Error Error::with_context(const std::string &file, const std::string &section,
                          const std::string &path_prefix) const {
  Where w = where_;
  if (w.file.empty()) w.file = file;
  if (w.section.empty()) w.section = section;
  if (!path_prefix.empty()) w.path = w.path.empty() ? path_prefix : path_prefix + "." + w.path;
  return Error(kind_, detail_, w);
}

}  // namespace pt2f
