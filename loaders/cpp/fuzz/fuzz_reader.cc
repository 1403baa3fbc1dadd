// libFuzzer target: every reader entry point on hostile bytes.
//
// Each input is tried three ways, so mutations are not all stopped by the
// CRCs: (1) as a whole file; (2) as a whole file after its header and
// PROGRAM checksums are recomputed (reaches the section-table and verifier
// checks); (3) as the PROGRAM section of a well-formed container (reaches the
// FlatBuffers verifier, the dump, tensors and symbolic evaluation).
// Any pt2f::Error is a clean rejection; a crash, sanitizer report, hang or
// other exception is a finding.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "pt2f/pt2f.h"

namespace {

void store_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}
void store_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = uint8_t(v >> (8 * i));
}

void exercise(const pt2f::File &file) {
  try {
    pt2f::validate(file);  // string classes and invariants, over any encoding's tree
  } catch (const pt2f::Error &) {
  }
  (void)pt2f::canonical_dump(file);
  const auto *pkg = file.package();
  const uint32_t nt = pkg->tensors() ? pkg->tensors()->size() : 0;
  for (uint32_t i = 0; i < nt && i < 64; ++i) {
    try {
      const pt2f::TensorView t = file.tensor(i);
      if (t.numel) {
        volatile uint8_t sink = t.data[0];  // first and last reachable bytes
        sink = t.storage.data[t.storage.size - 1];
        (void)sink;
      }
    } catch (const pt2f::Error &) {
    }
  }
  try {
    file.verify_data();
  } catch (const pt2f::Error &) {
  }
  for (const auto *program : pt2f::each(pkg->programs())) {
    pt2f::SymEvaluator ev(program);
    const auto *syms = program->symbols();
    for (uint32_t s = 0; syms && s < syms->size() && s < 64; ++s) ev.set(s, pt2f::SymValue::integer(int64_t(s) + 2));
    for (uint32_t i = 0; i < ev.pool_size() && i < 4096; ++i) {
      try {
        (void)ev.evaluate(i);
      } catch (const pt2f::Error &) {
      }
    }
  }
}

void try_file(const uint8_t *data, size_t size) {
  try {
    exercise(pt2f::File::from_bytes(data, size));
  } catch (const pt2f::Error &) {
  }
}

// Recompute the header and PROGRAM checksums of a would-be file in place.
void fix_checksums(std::vector<uint8_t> &f) {
  if (f.size() < 64) return;
  const uint32_t count = pt2f::load_u16(f.data() + 10);
  const uint64_t hlen = 64 + 48ull * count;
  store_u32(f.data() + 12, uint32_t(hlen));
  store_u64(f.data() + 32, f.size());
  if (hlen > f.size()) return;
  if (count >= 1) {
    uint8_t *e = f.data() + 64;
    const uint64_t off = pt2f::load_u64(e + 8), len = pt2f::load_u64(e + 16);
    if (off <= f.size() && len <= f.size() - off) store_u32(e + 28, pt2f::crc32(f.data() + off, size_t(len)));
  }
  store_u32(f.data() + 40, 0);
  store_u32(f.data() + 40, pt2f::crc32(f.data(), size_t(hlen)));
}

// A minimal valid container around `program` (one PROGRAM section).
std::vector<uint8_t> wrap_program(const uint8_t *program, size_t size) {
  std::vector<uint8_t> f(128 + size, 0);
  std::memcpy(f.data(), pt2f::kMagic, 8);
  f[8] = 1;   // header_version
  f[10] = 1;  // section_count
  f[16] = 1;  // format 1.0
  uint8_t *e = f.data() + 64;
  e[0] = 1;  // PROGRAM
  e[2] = 1;  // FLATBUFFERS
  store_u32(e + 4, 8);
  store_u64(e + 8, 128);
  store_u64(e + 16, size);
  store_u32(e + 24, 1);
  if (size) std::memcpy(f.data() + 128, program, size);
  fix_checksums(f);
  return f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try_file(data, size);
  std::vector<uint8_t> fixed(data, data + size);
  fix_checksums(fixed);
  try_file(fixed.data(), fixed.size());
  const std::vector<uint8_t> wrapped = wrap_program(data, size);
  try_file(wrapped.data(), wrapped.size());
  return 0;
}
