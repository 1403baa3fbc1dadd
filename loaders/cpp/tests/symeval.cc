// pt2f-symeval FILE PROGRAM [NAME=VALUE ...]: evaluate every node of a
// program's sym_exprs pool and print "index value" or "index error: reason"
// per line. Test driver: tests/native/test_cpp_reader.py compares its output
// with Python's own arithmetic. VALUE is an integer, a float (has '.', 'e',
// 'inf' or 'nan'), True or False.
//
// pt2f-symeval FILE -: many evaluations in one process (the guard property
// test, tests/loaders/test_guard_text.py). Each line of stdin is
// "PROGRAM NAME=VALUE ..."; the answer is one line: whether the program's
// last node holds as an input guard (SymEvaluator::guard_holds), "True" or
// "False", or "limit: reason" (a LimitError).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "pt2f/pt2f.h"

namespace {

pt2f::SymValue parse_value(const std::string &text) {
  if (text == "True" || text == "False") return pt2f::SymValue::boolean(text == "True");
  if (text.find_first_of(".eEn") != std::string::npos) return pt2f::SymValue::real(std::strtod(text.c_str(), nullptr));
  return pt2f::SymValue::integer(std::strtoll(text.c_str(), nullptr, 10));
}

int batch(const pt2f::File &file) {
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream words(line);
    std::string name, binding;
    words >> name;
    const pt2format::Program *program = file.program(name);
    if (!program) {
      std::printf("error: no program named %s\n", name.c_str());
      continue;
    }
    try {
      pt2f::SymEvaluator ev(program);
      while (words >> binding) {
        const size_t eq = binding.find('=');
        ev.set(binding.substr(0, eq), parse_value(binding.substr(eq + 1)));
      }
      std::printf("%s\n", ev.guard_holds(uint32_t(ev.pool_size() - 1)) ? "True" : "False");
    } catch (const pt2f::Error &e) {
      std::printf("%s: %s\n", e.kind() == pt2f::ErrorKind::Limit ? "limit" : "error", e.detail().c_str());
    }
  }
  return 0;
}

}  // namespace


int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: pt2f-symeval FILE PROGRAM [NAME=VALUE ...]\n");
    return 2;
  }
  try {
    const pt2f::File file = pt2f::File::open(argv[1]);
    if (std::strcmp(argv[2], "-") == 0) return batch(file);
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
      ev.set(name, parse_value(text));
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
