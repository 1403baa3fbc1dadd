// Print every node's target and the shape of every parameter (README example).
#include <cstdio>
#include "pt2f/pt2f.h"

int main(int argc, char **argv) try {
  const pt2f::File file = pt2f::File::open(argc > 1 ? argv[1] : "model.pt2f");  // mmap + all checks
  for (const auto *program : pt2f::each(file.package()->programs())) {
    for (const auto *node : pt2f::each(program->graph() ? program->graph()->nodes() : nullptr))
      std::printf("node %s\n", pt2f::str(node->target()).c_str());
    for (const auto *entry : pt2f::each(program->state())) {
      if (entry->kind() != pt2format::StateKind::PARAMETER) continue;
      const pt2f::TensorView t = file.tensor(entry->tensor());  // bounds-checked; t.data points into the map
      std::printf("param %s [", pt2f::str(entry->name()).c_str());
      for (size_t d = 0; d < t.dim(); ++d) std::printf(d ? ", %lld" : "%lld", (long long)t.size(d));
      std::printf("] %s\n", pt2format::EnumNameScalarType(t.dtype));
    }
  }
} catch (const pt2f::Error &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
