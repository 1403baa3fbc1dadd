// pt2f-dump FILE: print the canonical dump (SPEC.md §6) of a .pt2f file.
// pt2f-dump --error-class FILE: check FILE as `pt2format validate` does
// (container, program in any encoding, string classes, invariants, data and
// storage checksums) and print one line on stdout: OK, or the pt2format.errors
// class name of the first failure (HeaderError, StringClassError, ...), so
// tests compare readers without parsing messages (SPEC.md §7.1).
// pt2f-dump --no-validate FILE: the dump without string-class and invariant
// checks (as pt2format._dump.dump_text of an unvalidated tree), for tests of
// the rendering of trees no valid file holds (unknown enum values, ...).
//
// Exit status: 0 printed (or OK); 1 damaged or invalid file; 2 usage or I/O error;
// 4 the file needs a newer reader (format version or required feature).
// Errors are one line on stderr; with --error-class the class is also on stdout,
// otherwise nothing is printed on stdout on failure.
#include <cstdio>
#include <cstring>

#include "pt2f/pt2f.h"

int main(int argc, char **argv) {
  const bool error_class = argc == 3 && std::strcmp(argv[1], "--error-class") == 0;
  const bool no_validate = argc == 3 && std::strcmp(argv[1], "--no-validate") == 0;
  if ((argc != 2 && !error_class && !no_validate) || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: pt2f-dump [--error-class | --no-validate] FILE\n");
    return 2;
  }
  const char *path = argv[argc - 1];
  try {
    const pt2f::File file = pt2f::File::open(path);
    if (!no_validate) pt2f::validate(file);
    if (error_class) file.verify_data();  // as pt2format.validate: after the invariants
    const std::string out = pt2f::canonical_dump(file);
    if (error_class) {
      std::fputs("OK\n", stdout);
      return 0;
    }
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "pt2f-dump: cannot write to stdout\n");
      return 2;
    }
    return 0;
  } catch (const pt2f::Error &e) {
    std::fprintf(stderr, "pt2f-dump: %s\n", e.what());
    if (error_class) std::printf("%s\n", pt2f::error_kind_name(e.kind()));
    switch (e.kind()) {
      case pt2f::ErrorKind::Io: return 2;
      case pt2f::ErrorKind::UnsupportedEncoding: return 3;
      case pt2f::ErrorKind::Version:
      case pt2f::ErrorKind::UnsupportedFeature: return 4;
      default: return 1;
    }
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "pt2f-dump: out of memory\n");
    return 1;
  }
}
