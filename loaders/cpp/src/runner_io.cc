// Weight files in and out of pt2f-run (pt2f/runner_io.h).
#include "pt2f/runner_io.h"

#include <c10/core/CPUAllocator.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include "pt2f/crc32.h"
#include "pt2f/validate.h"
#include "runner_plan.h"

namespace pt2format {

using detail::fail;

std::vector<std::pair<std::string, at::Tensor>> read_tensors(const std::string &path) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  try {
    pt2f::File f = pt2f::File::open(path);
    pt2f::validate(f);
    const auto *sets = f.package()->weight_sets();
    if (!sets || sets->size() != 1)
      fail(RunnerErrorKind::Load, path + ": a weight file holds exactly one weight set, this one holds " +
                                      std::to_string(sets ? sets->size() : 0));
    for (auto *e : pt2f::each(sets->Get(0)->entries())) {
      const std::string where = path + ": weight_sets[0] entry '" + pt2f::str(e->name()) + "'";
      pt2f::TensorView tv = f.tensor(e->tensor());
      at::ScalarType dtype = detail::to_aten_dtype(tv.dtype);
      if (dtype == at::ScalarType::Undefined || tv.table->quantization() || tv.table->subclass() ||
          (tv.table->parts() && tv.table->parts()->size()))
        fail(RunnerErrorKind::Load, where + ": only plain strided tensors of torch dtypes are supported");
      std::vector<int64_t> sizes, strides;
      for (size_t d = 0; d < tv.dim(); ++d) {
        sizes.push_back(tv.size(d));
        strides.push_back(tv.stride(d));
      }
      // An owned copy of the whole storage (the file is unmapped when this returns), then the view.
      c10::Storage storage(c10::Storage::use_byte_size_t(), tv.storage.size, c10::GetCPUAllocator(), false);
      if (tv.storage.size) std::memcpy(storage.mutable_data(), tv.storage.data, tv.storage.size);
      auto impl = c10::make_intrusive<c10::TensorImpl>(std::move(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                      caffe2::TypeMeta::fromScalarType(dtype));
      impl->set_sizes_and_strides(sizes, strides, tv.storage_offset);
      out.emplace_back(pt2f::str(e->name()), at::Tensor(std::move(impl)));
    }
  } catch (const pt2f::Error &e) {
    fail(RunnerErrorKind::Load, std::string(pt2f::error_kind_name(e.kind())) + ": " + e.what());
  }
  return out;
}

namespace {

pt2format::ScalarType to_schema_dtype(at::ScalarType t) {
  for (int v = 1; v < 256; ++v)
    if (detail::to_aten_dtype(pt2format::ScalarType(v)) == t) return pt2format::ScalarType(v);
  return pt2format::ScalarType::UNSPECIFIED;
}

uint64_t align_up(uint64_t n, uint64_t a) { return (n + a - 1) / a * a; }

void put16(std::vector<uint8_t> &b, size_t at, uint16_t v) { std::memcpy(&b[at], &v, 2); }
void put32(std::vector<uint8_t> &b, size_t at, uint32_t v) { std::memcpy(&b[at], &v, 4); }
void put64(std::vector<uint8_t> &b, size_t at, uint64_t v) { std::memcpy(&b[at], &v, 8); }

void write_all(int fd, const uint8_t *p, size_t n, const std::string &path) {
  while (n) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(RunnerErrorKind::Execution, path + ": write failed: " + std::strerror(errno));
    p += w;
    n -= size_t(w);
  }
}

}  // namespace

void write_tensors(const std::string &path, const std::vector<std::pair<std::string, at::Tensor>> &given) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the writer lays out little-endian bytes as they are in memory");
  // Entries sorted by name (WeightSet.entries: pt2f_keys "name sorted"); tensors and storages in that order.
  std::vector<std::pair<std::string, at::Tensor>> tensors(given);
  std::stable_sort(tensors.begin(), tensors.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
  std::vector<at::Tensor> dense;
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<pt2format::Tensor>> trows;
  std::vector<flatbuffers::Offset<pt2format::Storage>> srows;
  std::vector<flatbuffers::Offset<pt2format::StateEntry>> entries;
  uint64_t data_len = 0;
  std::vector<uint64_t> offsets;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor &t0 = tensors[i].second;
    if (!t0.defined() || t0.device().type() != c10::kCPU || t0.layout() != c10::kStrided || t0.is_quantized())
      fail(RunnerErrorKind::Execution, "output '" + tensors[i].first + "': only strided CPU tensors can be written");
    pt2format::ScalarType dt = to_schema_dtype(t0.scalar_type());
    if (dt == pt2format::ScalarType::UNSPECIFIED)
      fail(RunnerErrorKind::Execution, "output '" + tensors[i].first + "': dtype " + c10::toString(t0.scalar_type()) + " has no schema value");
    at::Tensor t = t0;
    auto resolve = [&](const char *op) {  // apply a conjugate or negative bit: the file holds the values' bits
      std::vector<c10::IValue> stack{t};
      c10::Dispatcher::singleton().findSchemaOrThrow(op, "").callBoxed(stack);
      t = stack[0].toTensor();
    };
    if (t.is_conj()) resolve("aten::resolve_conj");
    if (t.is_neg()) resolve("aten::resolve_neg");
    if (!t.is_contiguous()) t = t.contiguous();
    dense.push_back(t);
    const uint64_t nbytes = uint64_t(t.numel()) * t.element_size();
    uint64_t off = align_up(data_len, 64);
    offsets.push_back(off);
    data_len = off + nbytes;
    uint32_t crc = pt2f::crc32(static_cast<const uint8_t *>(t.const_data_ptr()), nbytes);
    srows.push_back(pt2format::CreateStorage(fbb, 0, off, nbytes, pt2format::ChecksumKind::CRC32, crc));
    std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end()), strides(t.strides().begin(), t.strides().end());
    auto vs = sizes.empty() ? 0 : fbb.CreateVector(sizes);
    auto vt = strides.empty() ? 0 : fbb.CreateVector(strides);
    auto dev = pt2format::CreateDevice(fbb, fbb.CreateString("cpu"));
    trows.push_back(pt2format::CreateTensor(fbb, uint32_t(i), dt, vs, vt, 0, false, dev));
    entries.push_back(pt2format::CreateStateEntry(fbb, fbb.CreateString(tensors[i].first), pt2format::StateKind::BUFFER, uint32_t(i)));
  }
  auto set = pt2format::CreateWeightSet(fbb, fbb.CreateString("default"), entries.empty() ? 0 : fbb.CreateVector(entries));
  std::vector<flatbuffers::Offset<pt2format::Segment>> segs;
  if (!tensors.empty()) segs.push_back(pt2format::CreateSegment(fbb, 0, 1, 0));
  auto producer = pt2format::CreateProducer(fbb, fbb.CreateString("pt2f-run"), fbb.CreateString("0.1"));
  auto root = pt2format::CreatePackage(fbb, pt2format::CreateFormatVersion(fbb, 1, 0), producer, 0, 0,
                                       trows.empty() ? 0 : fbb.CreateVector(trows), srows.empty() ? 0 : fbb.CreateVector(srows),
                                       segs.empty() ? 0 : fbb.CreateVector(segs), 0, 0, 0, 0, 0, fbb.CreateVector(&set, 1));
  pt2format::FinishPackageBuffer(fbb, root);

  // Container (SPEC.md §1-3): header, section table, PROGRAM at header_length (alignment 8), DATA at 64.
  const uint16_t nsec = tensors.empty() ? 1 : 2;
  const uint64_t header_len = 64 + 48 * nsec;
  const uint64_t prog_off = align_up(header_len, 8), prog_len = fbb.GetSize();
  const uint64_t data_off = align_up(prog_off + prog_len, 64);
  const uint64_t file_len = nsec == 2 ? data_off + data_len : prog_off + prog_len;
  std::vector<uint8_t> head(size_t(prog_off), 0);
  std::vector<uint8_t> data(size_t(nsec == 2 ? data_len : 0), 0);
  for (size_t i = 0; i < dense.size(); ++i) {
    const uint64_t n = uint64_t(dense[i].numel()) * dense[i].element_size();
    if (n) std::memcpy(&data[size_t(offsets[i])], dense[i].const_data_ptr(), size_t(n));
  }
  static const uint8_t magic[8] = {0x89, 'P', 'T', '2', 'F', '\r', '\n', 0x1a};
  std::memcpy(&head[0], magic, 8);
  put16(head, 8, 1);
  put16(head, 10, nsec);
  put32(head, 12, uint32_t(header_len));
  put16(head, 16, 1);
  put16(head, 18, 0);
  put64(head, 24, 0);
  put64(head, 32, file_len);
  auto entry = [&](size_t k, uint16_t kind, uint16_t enc, uint32_t align, uint64_t off, uint64_t len, uint32_t crc) {
    size_t at = 64 + 48 * k;
    put16(head, at, kind);
    put16(head, at + 2, enc);
    put32(head, at + 4, align);
    put64(head, at + 8, off);
    put64(head, at + 16, len);
    put32(head, at + 24, 1);
    put32(head, at + 28, crc);
  };
  entry(0, 1, 1, 8, prog_off, prog_len, pt2f::crc32(fbb.GetBufferPointer(), prog_len));
  if (nsec == 2) entry(1, 2, 0, 64, data_off, data_len, pt2f::crc32(data.data(), data.size()));
  put32(head, 40, pt2f::crc32(head.data(), size_t(header_len)));

  const std::string tmp = path + ".tmp-pt2f-run";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(RunnerErrorKind::Execution, tmp + ": cannot create: " + std::strerror(errno));
  try {
    static const uint8_t zeros[64] = {};
    write_all(fd, head.data(), head.size(), tmp);
    write_all(fd, fbb.GetBufferPointer(), prog_len, tmp);
    if (nsec == 2) {
      write_all(fd, zeros, size_t(data_off - prog_off - prog_len), tmp);
      write_all(fd, data.data(), data.size(), tmp);
    }
    if (::fsync(fd) != 0) fail(RunnerErrorKind::Execution, tmp + ": fsync failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    fail(RunnerErrorKind::Execution, path + ": cannot rename the written file into place: " + std::strerror(e));
  }
}

}  // namespace pt2format
