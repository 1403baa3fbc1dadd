// pt2f-strings: read lines "CLASS<TAB>HEX" on stdin (HEX: the UTF-8 bytes of
// a string, hex-encoded so any byte can be given) and print "ok" or "bad"
// per line: whether the string belongs to the class (SPEC.md §9). Test
// driver: tests/native/test_cpp_strings.py compares it with pt2format._strings.
#include <cstdio>
#include <iostream>
#include <string>

#include "pt2f/pt2f.h"

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      std::fprintf(stderr, "pt2f-strings: expected CLASS<TAB>HEX\n");
      return 2;
    }
    const std::string cls = line.substr(0, tab);
    std::string s;
    for (size_t i = tab + 1; i + 1 < line.size(); i += 2) s += char(std::stoi(line.substr(i, 2), nullptr, 16));
    int index = -1;
    for (int k = 0; k < int(sizeof(pt2f::strings::kClassNames) / sizeof(*pt2f::strings::kClassNames)); ++k)
      if (cls == pt2f::strings::kClassNames[k]) index = k;
    if (index < 0) {
      std::fprintf(stderr, "pt2f-strings: unknown class %s\n", cls.c_str());
      return 2;
    }
    const bool ok = pt2f::string_class_violation(pt2f::strings::StringClass(index), s).empty();
    std::puts(ok ? "ok" : "bad");
  }
  return 0;
}
