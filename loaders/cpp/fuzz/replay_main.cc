// pt2f-fuzz-replay FILE...: run the fuzz target's entry point on each file
// (any compiler; used under ASan+UBSan by the hostile-input tests and to
// replay libFuzzer findings). Prints "ok N" when every input was handled.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  int n = 0;
  for (int i = 1; i < argc; ++i) {
    std::ifstream in(argv[i], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "pt2f-fuzz-replay: cannot read %s\n", argv[i]);
      return 2;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
    ++n;
  }
  std::printf("ok %d\n", n);
  return 0;
}
