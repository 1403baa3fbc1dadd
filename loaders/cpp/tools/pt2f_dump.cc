// pt2f-dump FILE: print the canonical dump (SPEC.md §6) of a .pt2f file.
//
// Exit status: 0 printed; 1 damaged or invalid file; 2 usage or I/O error;
// 3 program encoding not supported by this reader (MessagePack, JSON);
// 4 the file needs a newer reader (format version or required feature).
// Errors are one line on stderr; nothing is printed on stdout on failure.
#include <cstdio>
#include <cstring>

#include "pt2f/pt2f.h"

int main(int argc, char **argv) {
  if (argc != 2 || std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "--help") == 0) {
    std::fprintf(stderr, "usage: pt2f-dump FILE\n");
    return 2;
  }
  try {
    const pt2f::File file = pt2f::File::open(argv[1]);
    const std::string out = pt2f::canonical_dump(file);
    if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() || std::fflush(stdout) != 0) {
      std::fprintf(stderr, "pt2f-dump: cannot write to stdout\n");
      return 2;
    }
    return 0;
  } catch (const pt2f::Error &e) {
    std::fprintf(stderr, "pt2f-dump: %s\n", e.what());
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
