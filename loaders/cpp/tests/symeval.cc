// pt2f-symeval FILE PROGRAM [NAME=VALUE ...]: evaluate every node of a
// program's sym_exprs pool and print "index value" or "index error: reason"
// per line. Test driver: tests/native/test_cpp_reader.py compares its output
// with Python's own arithmetic. VALUE is an integer, a float (has '.', 'e',
// 'inf' or 'nan'), True or False.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "pt2f/pt2f.h"

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: pt2f-symeval FILE PROGRAM [NAME=VALUE ...]\n");
    return 2;
  }
  try {
    const pt2f::File file = pt2f::File::open(argv[1]);
    const pt2format::Program *program = file.program(argv[2]);
    if (!program) {
      std::fprintf(stderr, "pt2f-symeval: no program named '%s'\n", argv[2]);
      return 2;
    }
    pt2f::SymEvaluator ev(program);
    for (int i = 3; i < argc; ++i) {
      const char *eq = std::strchr(argv[i], '=');
      if (!eq) {
        std::fprintf(stderr, "pt2f-symeval: expected NAME=VALUE, got '%s'\n", argv[i]);
        return 2;
      }
      const std::string name(argv[i], size_t(eq - argv[i])), text(eq + 1);
      pt2f::SymValue v;
      if (text == "True" || text == "False")
        v = pt2f::SymValue::boolean(text == "True");
      else if (text.find_first_of(".eEn") != std::string::npos)
        v = pt2f::SymValue::real(std::strtod(text.c_str(), nullptr));
      else
        v = pt2f::SymValue::integer(std::strtoll(text.c_str(), nullptr, 10));
      ev.set(name, v);
    }
    for (uint32_t i = 0; i < ev.pool_size(); ++i) {
      try {
        std::printf("%u %s\n", i, ev.evaluate(i).to_string().c_str());
      } catch (const pt2f::Error &e) {
        std::printf("%u error: %s\n", i, e.detail().c_str());
      }
    }
    return 0;
  } catch (const pt2f::Error &e) {
    std::fprintf(stderr, "pt2f-symeval: %s\n", e.what());
    return 1;
  }
}
