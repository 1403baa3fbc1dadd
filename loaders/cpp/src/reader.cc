// File: mapping, the open-time checks (container, CRC, verifier) and
// bounds-checked access to storages and tensors.
#include "pt2f/reader.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "pt2f/crc32.h"
#include "pt2format_itemsize.h"
#include "pt2format_limits.h"
#include "program_decode.h"

namespace pt2f {
namespace {

std::string num(uint64_t v) { return std::to_string(v); }

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

Error err(ErrorKind kind, const std::string &msg, const std::string &file, const std::string &section,
          const std::string &path, const std::string &expected = "", const std::string &got = "") {
  Error::Where w;
  w.file = file;
  w.section = section;
  w.path = path;
  w.expected = expected;
  w.got = got;
  return Error(kind, msg, w);
}

// Read access to the verifier's private depth and table counters, through
// the one standard loophole: access checks do not apply to the names in an
// explicit instantiation. Used only to word the error after a failure.
struct VerifierCounters {
  flatbuffers::uoffset_t depth, tables;
};
template <typename Tag, typename Tag::type Member>
struct Expose {
  friend typename Tag::type member_of(Tag) { return Member; }
};
struct DepthTag {
  using type = flatbuffers::uoffset_t flatbuffers::Verifier::*;
  friend type member_of(DepthTag);
};
struct TablesTag {
  using type = flatbuffers::uoffset_t flatbuffers::Verifier::*;
  friend type member_of(TablesTag);
};
template struct Expose<DepthTag, &flatbuffers::Verifier::depth_>;
template struct Expose<TablesTag, &flatbuffers::Verifier::num_tables_>;

VerifierCounters verifier_counters(const flatbuffers::Verifier &v) {
  return {v.*member_of(DepthTag{}), v.*member_of(TablesTag{})};
}

std::string dirname_of(const std::string &path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
}

}  // namespace

// ---------------------------------------------------------------------------
// MappedFile

std::shared_ptr<MappedFile> MappedFile::map(const std::string &path) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->name_ = path;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw err(ErrorKind::Io, std::string("cannot open: ") + std::strerror(errno), path, "", "");
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw err(ErrorKind::Format, "not a regular file", path, "", "");
  }
  f->size_ = size_t(st.st_size);
  if (f->size_ > 0) {
    void *p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw err(ErrorKind::Io, std::string("cannot mmap: ") + std::strerror(e), path, "", "");
    }
    f->data_ = static_cast<const uint8_t *>(p);
    f->mapped_ = true;
  } else {
    static const uint64_t empty = 0;
    f->data_ = reinterpret_cast<const uint8_t *>(&empty);
  }
  ::close(fd);
  return f;
}

std::shared_ptr<MappedFile> MappedFile::copy_of(const uint8_t *data, size_t size, const std::string &name) {
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->name_ = name;
  f->owned_.resize(size / 8 + 1);
  if (size) std::memcpy(f->owned_.data(), data, size);
  f->data_ = reinterpret_cast<const uint8_t *>(f->owned_.data());
  f->size_ = size;
  return f;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t *>(data_), size_);
}

// ---------------------------------------------------------------------------
// dtypes

size_t dtype_itemsize(pt2format::ScalarType dtype) {
  // From the schema's pt2f_itemsize attributes (regen.py), shared with the other readers.
  if (size_t size = generated::scalar_type_itemsize(dtype)) return size;
  throw Error(ErrorKind::Validation, "tensor dtype is unspecified or unknown to this reader",
              {"", "", {}, "", "a ScalarType value with data", num(uint64_t(dtype))});
}

// ---------------------------------------------------------------------------
// Opening

File File::open(const std::string &path, const Limits &limits) {
  return from_mapped(MappedFile::map(path), limits, /*in_memory=*/false);
}

File File::from_bytes(const uint8_t *data, size_t size, const Limits &limits, const std::string &name) {
  return from_mapped(MappedFile::copy_of(data, size, name), limits, /*in_memory=*/true);
}

File File::from_mapped(std::shared_ptr<MappedFile> mapped, const Limits &limits, bool in_memory) {
  File f;
  f.in_memory_ = in_memory;
  f.file_ = std::move(mapped);
  f.limits_ = limits;
  const std::string &name = f.file_->name();
  const uint8_t *base = f.file_->data();
  f.header_ = parse_container(base, f.file_->size(), FileRole::Main, name);
  const Section &ps = f.header_.sections[0];
  const std::string label = section_label(f.header_, 0);
  f.program_ = Bytes{base + ps.offset, size_t(ps.length)};

  if (ps.length > limits.max_program_bytes || ps.length >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    Error::Where w{name, label, ps.offset, "", "<= " + num(limits.max_program_bytes) + " bytes", num(ps.length)};
    throw Error(ErrorKind::Limit, "program section larger than max_program_bytes", w);
  }
  const uint32_t crc = crc32(f.program_.data, f.program_.size);
  if (crc != ps.checksum) {
    Error::Where w{name, label, ps.offset, "", hex32(ps.checksum), hex32(crc)};
    throw Error(ErrorKind::Checksum, "section checksum mismatch", w);
  }
  // The one in-memory view is FlatBuffers: a MessagePack or JSON program is rebuilt as
  // FlatBuffers (checking every value against its field) and then verified like a file's.
  Bytes fb = f.program_;
  if (ps.encoding != uint16_t(ProgramEncoding::FlatBuffers)) {
    try {
      auto rebuilt = std::make_shared<std::vector<uint8_t>>(
          ps.encoding == uint16_t(ProgramEncoding::MsgPack)
              ? msgpack_to_flatbuffers(f.program_.data, f.program_.size, limits.max_depth)
              : json_to_flatbuffers(f.program_.data, f.program_.size, limits.max_depth));
      f.rebuilt_program_ = std::move(rebuilt);
    } catch (const Error &e) {
      throw e.with_context(name, label).with_versions(f.header_.format_major, f.header_.format_minor);
    }
    fb = Bytes{f.rebuilt_program_->data(), f.rebuilt_program_->size()};
  }
  if (fb.size < 8 || !pt2format::PackageBufferHasIdentifier(fb.data)) {
    Error::Where w{name, label, ps.offset + 4, "", "file identifier P2FP", "other bytes"};
    throw Error(ErrorKind::Encoding, "program is not a pt2format FlatBuffers buffer", w);
  }
  // The schema's bound (pt2f_limits verifier_min_tables, verifier_bytes_per_table), as the TypeScript verifier's.
  const uint32_t max_tables =
      limits.max_tables ? limits.max_tables
                        : uint32_t(std::max<uint64_t>(pt2f::limits::kVerifierMinTables,
                                                      std::min<uint64_t>(ps.length / pt2f::limits::kVerifierBytesPerTable,
                                                                         UINT32_MAX)));
  flatbuffers::Verifier::Options o;
  o.max_depth = limits.max_depth;
  o.max_tables = max_tables;
  o.check_alignment = true;
  flatbuffers::Verifier v(fb.data, fb.size, o);
  if (!pt2format::VerifyPackageBuffer(v)) {
    // The verifier stops at the first failed check; its counters tell a limit from damage.
    const VerifierCounters c = verifier_counters(v);
    Error::Where w{name, label, ps.offset, "", "", ""};
    if (c.depth > limits.max_depth) {
      w.expected = "<= " + num(limits.max_depth);
      w.got = "deeper";
      throw Error(ErrorKind::Limit, "tables nested deeper than max_depth", w);
    }
    if (c.tables > max_tables) {
      w.expected = "<= " + num(max_tables);
      w.got = "more";
      throw Error(ErrorKind::Limit, "more table visits than the verifier's max_tables (shared sub-tables?)", w);
    }
    throw Error(ErrorKind::Encoding, "FlatBuffers verifier rejected the program (damaged or hostile bytes)", w);
  }
  f.package_ = pt2format::GetPackage(fb.data);
  const auto *fv = f.package_->format_version();
  if (fv->major() != f.header_.format_major || fv->minor() != f.header_.format_minor) {
    throw err(ErrorKind::Validation, "Package.format_version differs from the header's", name, label,
              "format_version", num(f.header_.format_major) + "." + num(f.header_.format_minor),
              num(fv->major()) + "." + num(fv->minor()));
  }
  if (f.package_->required_features() != f.header_.required_features) {
    throw err(ErrorKind::Validation, "Package.required_features differs from the header's", name, label,
              "required_features", num(f.header_.required_features), num(f.package_->required_features()));
  }
  if (limits.verify_data) f.verify_data();
  return f;
}

const pt2format::Program *File::program(const std::string &name) const {
  const auto *programs = package_->programs();
  if (!programs) return nullptr;
  for (const auto *p : *programs)
    if (p->name() && p->name()->str() == name) return p;
  return nullptr;
}

// ---------------------------------------------------------------------------
// Storages and tensors

static std::string hex_bytes(const uint8_t *p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

const MappedFile &File::shard(uint32_t file_index, Header *header_out, const std::string &path) const {
  auto it = shards_.find(file_index);
  if (it == shards_.end()) {
    const auto *shard_files = package_->shard_files();
    const uint32_t n = shard_files ? shard_files->size() : 0;
    if (file_index - 1 >= n)
      throw err(ErrorKind::Validation, "segment names a shard file that does not exist", file_->name(), "program",
                path + ".file", "1.." + num(n), num(file_index));
    const std::string sf_path = "shard_files[" + num(file_index - 1) + "]";
    const auto *sf = shard_files->Get(file_index - 1);
    const std::string name = sf->name() ? sf->name()->str() : "";
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
        name.find("..") != std::string::npos || name.find('\0') != std::string::npos)
      throw err(ErrorKind::Validation, "shard file name must be a plain file name", file_->name(), "program",
                sf_path + ".name", "no '/', '\\\\', '..'", name);
    if (in_memory_)
      throw err(ErrorKind::Segment, "shard files cannot be resolved for an in-memory file", file_->name(),
                "program", sf_path);
    Shard s;
    const std::string shard_path = dirname_of(file_->name()) + name;
    try {
      s.file = MappedFile::map(shard_path);
    } catch (const Error &e) {
      if (e.kind() == ErrorKind::Format) throw e.with_context(shard_path, "", sf_path);  // not a regular file
      throw err(ErrorKind::Segment, "shard file is missing or unreadable: " + e.detail(), shard_path, "", sf_path);
    }
    if (s.file->size() != sf->size())
      throw err(ErrorKind::Header, "shard file size differs from shard_files entry", s.file->name(), "",
                sf_path + ".size", num(sf->size()), num(s.file->size()));
    s.header = parse_container(s.file->data(), s.file->size(), FileRole::Shard, s.file->name());
    {
      // A shard from another save (same name, even same size) carries another package id: refuse it.
      const auto *recorded = sf->package_id();
      const uint8_t *want = header_.package_id;
      if (recorded && recorded->size() != 0) {
        if (recorded->size() != 16 || std::memcmp(recorded->data(), header_.package_id, 16) != 0)
          throw err(ErrorKind::StaleShard, "shard_files entry names another save than this file's header", file_->name(),
                    "program", sf_path + ".package_id", hex_bytes(header_.package_id, 16),
                    hex_bytes(recorded->data(), recorded->size()));
        want = recorded->data();
      }
      if (std::memcmp(s.header.package_id, want, 16) != 0)
        throw err(ErrorKind::StaleShard, "shard file belongs to another save (package_id differs)", s.file->name(),
                  "header", sf_path + ".package_id", hex_bytes(want, 16), hex_bytes(s.header.package_id, 16));
    }
    if (s.header.format_major != header_.format_major || s.header.format_minor != header_.format_minor)
      throw err(ErrorKind::Header, "shard file format version differs from the main file's", s.file->name(), "",
                sf_path, num(header_.format_major) + "." + num(header_.format_minor),
                num(s.header.format_major) + "." + num(s.header.format_minor));
    it = shards_.emplace(file_index, std::move(s)).first;
  }
  *header_out = it->second.header;
  return *it->second.file;
}

const MappedFile &File::external(uint32_t file_index, const std::string &path) const {
  auto it = externals_.find(file_index);
  if (it != externals_.end()) return *it->second;
  const auto *files = package_->external_files();
  const uint32_t n = files ? files->size() : 0;
  if (file_index - 1 >= n)
    throw err(ErrorKind::Validation, "segment external index out of range", file_->name(), "program",
              path + ".external", "1.." + num(n), num(file_index));
  const auto *ef = files->Get(file_index - 1);
  const std::string ef_path = "external_files[" + num(file_index - 1) + "]";
  const std::string name = ef->name() ? ef->name()->str() : "";
  if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos ||
      name.find("..") != std::string::npos || name.find('\0') != std::string::npos)
    throw err(ErrorKind::Validation, "external file name must be a plain file name", file_->name(), "program",
              ef_path + ".name", "no '/', '\\\\', '..'", name);
  if (in_memory_)
    throw err(ErrorKind::Segment, "external files cannot be resolved for an in-memory file", file_->name(),
              "program", ef_path);
  const std::string ext_path = dirname_of(file_->name()) + name;
  std::shared_ptr<MappedFile> mf;
  try {
    mf = MappedFile::map(ext_path);
  } catch (const Error &e) {
    if (e.kind() == ErrorKind::Format) throw e.with_context(ext_path, "", ef_path);
    throw err(ErrorKind::Segment, "external data file is missing: " + e.detail(), ext_path, "", ef_path);
  }
  if (mf->size() != ef->size())
    throw err(ErrorKind::Segment, "external file size differs from external_files entry", ext_path, "",
              ef_path + ".size", num(ef->size()), num(mf->size()));
  return *externals_.emplace(file_index, std::move(mf)).first->second;
}

Bytes File::segment_bytes(uint32_t segment, const std::string &path) const {
  const auto *segments = package_->segments();
  const uint32_t n = segments ? segments->size() : 0;
  if (segment >= n)
    throw err(ErrorKind::Validation, "segment index out of range", file_->name(), "program", path + ".segment",
              "< " + num(n), num(segment));
  const auto *seg = segments->Get(segment);
  const std::string seg_path = "segments[" + num(segment) + "]";
  if (seg->external() != 0) {
    const MappedFile &ext = external(seg->external(), seg_path);
    return Bytes{ext.data(), ext.size()};
  }
  const MappedFile *mf = file_.get();
  Header shard_header;
  const Header *h = &header_;
  if (seg->file() != 0) {
    mf = &shard(seg->file(), &shard_header, seg_path);
    h = &shard_header;
  }
  if (seg->section() >= h->sections.size() ||
      h->sections[seg->section()].kind != uint16_t(SectionKind::Data))
    throw err(ErrorKind::Segment, "segment does not name a DATA section", mf->name(), "program",
              seg_path + ".section", "a DATA section index < " + num(h->sections.size()), num(seg->section()));
  const Section &s = h->sections[seg->section()];
  return Bytes{mf->data() + s.offset, size_t(s.length)};
}

Bytes File::storage_bytes(uint32_t index) const {
  const auto *storages = package_->storages();
  const uint32_t n = storages ? storages->size() : 0;
  if (index >= n)
    throw err(ErrorKind::Validation, "storage index out of range", file_->name(), "program", "storages",
              "< " + num(n), num(index));
  const std::string path = "storages[" + num(index) + "]";
  const auto *st = storages->Get(index);
  const Bytes seg = segment_bytes(st->segment(), path);
  const bool external = package_->segments()->Get(st->segment())->external() != 0;
  if (!external && st->offset() % 64 != 0)
    throw err(ErrorKind::Segment, "storage offset is not a multiple of 64", file_->name(), "program",
              path + ".offset", "multiple of 64", num(st->offset()));
  if (st->offset() > seg.size || st->size() > seg.size - st->offset())
    throw err(ErrorKind::Segment, "storage extends past its segment", file_->name(), "program", path,
              "end <= " + num(seg.size), st->offset() > seg.size ? num(st->offset()) : num(st->offset() + st->size()));
  return Bytes{seg.data + st->offset(), size_t(st->size())};
}

void File::verify_storage(uint32_t index) const {
  const Bytes b = storage_bytes(index);
  const auto *st = package_->storages()->Get(index);
  const std::string path = "storages[" + num(index) + "].checksum";
  if (st->checksum_kind() == pt2format::ChecksumKind::NONE) return;
  if (st->checksum_kind() != pt2format::ChecksumKind::CRC32)
    throw err(ErrorKind::Validation, "unknown storage checksum_kind", file_->name(), "program",
              path + "_kind", "NONE or CRC32", num(uint64_t(st->checksum_kind())));
  const uint32_t crc = crc32(b.data, b.size);
  if (crc != st->checksum())
    throw err(ErrorKind::Checksum, "storage data checksum mismatch", file_->name(), "program", path,
              hex32(st->checksum()), hex32(crc));
}

void File::verify_data() const {
  for (size_t i = 0; i < header_.sections.size(); ++i) {
    const Section &s = header_.sections[i];
    if (s.kind != uint16_t(SectionKind::Data) || s.checksum_kind != kChecksumCrc32) continue;
    const uint32_t crc = crc32(file_->data() + s.offset, size_t(s.length));
    if (crc != s.checksum) {
      Error::Where w{file_->name(), section_label(header_, i), s.offset, "", hex32(s.checksum), hex32(crc)};
      throw Error(ErrorKind::Checksum, "data section checksum mismatch", w);
    }
  }
  const uint32_t n = package_->storages() ? package_->storages()->size() : 0;
  for (uint32_t i = 0; i < n; ++i) verify_storage(i);
  const uint32_t ne = package_->external_files() ? package_->external_files()->size() : 0;
  for (uint32_t k = 1; k <= ne; ++k) {
    const auto *ef = package_->external_files()->Get(k - 1);
    if (ef->checksum_kind() != pt2format::ChecksumKind::CRC32) continue;
    const MappedFile &mf = external(k, "external_files[" + num(k - 1) + "]");
    const uint32_t crc = crc32(mf.data(), mf.size());
    if (crc != ef->checksum())
      throw err(ErrorKind::Checksum, "external file checksum mismatch", mf.name(), "",
                "external_files[" + num(k - 1) + "].checksum", hex32(ef->checksum()), hex32(crc));
  }
}

TensorView File::tensor(uint32_t index) const {
  const auto *tensors = package_->tensors();
  const uint32_t n = tensors ? tensors->size() : 0;
  if (index >= n)
    throw err(ErrorKind::Validation, "tensor index out of range", file_->name(), "program", "tensors",
              "< " + num(n), num(index));
  const std::string path = "tensors[" + num(index) + "]";
  TensorView t;
  t.index = index;
  t.table = tensors->Get(index);
  if (t.table->layout() != pt2format::Layout::STRIDED || t.table->subclass() != nullptr)
    throw err(ErrorKind::Validation,
              "tensor is built from other tensor rows (a sparse layout or a wrapper subclass); read its parts",
              file_->name(), "program", path, "a strided tensor", t.table->subclass() ? "a subclass" : "a sparse layout");
  t.dtype = t.table->dtype();
  try {
    t.itemsize = dtype_itemsize(t.dtype);
  } catch (const Error &e) {
    throw e.with_context(file_->name(), "program", path + ".dtype");
  }
  const auto *storages = package_->storages();
  if (storages && t.table->storage() < storages->size() && storages->Get(t.table->storage())->meta_nbytes())
    throw err(ErrorKind::Validation,
              "tensor is a meta-device tensor: its storage holds no data (Storage.meta_nbytes); read its metadata only",
              file_->name(), "program", path + ".storage", "a storage with data",
              "storages[" + num(t.table->storage()) + "] without data");
  t.storage = storage_bytes(t.table->storage());
  t.storage_offset = t.table->storage_offset();
  const uint32_t ndim = t.table->sizes() ? t.table->sizes()->size() : 0;
  const uint32_t nstride = t.table->strides() ? t.table->strides()->size() : 0;
  if (ndim != nstride)
    throw err(ErrorKind::Validation, "sizes and strides differ in length", file_->name(), "program",
              path + ".strides", num(ndim), num(nstride));
  if (t.storage_offset < 0)
    throw err(ErrorKind::Validation, "negative storage_offset", file_->name(), "program", path + ".storage_offset",
              ">= 0", std::to_string(t.storage_offset));
  // Reachable element range [lo, hi], in 128-bit arithmetic so nothing overflows.
  __int128 lo = t.storage_offset, hi = t.storage_offset;
  unsigned __int128 numel = 1;
  const unsigned __int128 kHuge = (unsigned __int128)1 << 100;
  for (uint32_t d = 0; d < ndim; ++d) {
    const int64_t size = t.table->sizes()->Get(d);
    const int64_t stride = t.table->strides()->Get(d);
    if (size < 0)
      throw err(ErrorKind::Validation, "negative size", file_->name(), "program",
                path + ".sizes[" + num(d) + "]", ">= 0", std::to_string(size));
    // Saturate at 2^100: anything that large is out of bounds of every storage.
    numel = (size != 0 && numel > kHuge / (unsigned __int128)size) ? kHuge : numel * (unsigned __int128)size;
    const __int128 reach = (__int128)(size > 0 ? size - 1 : 0) * stride;  // |reach| < 2^126
    if (stride < 0) {
      lo += reach;
      if (lo < -(__int128)kHuge) lo = -(__int128)kHuge;
    } else {
      hi += reach;
      if (hi > (__int128)kHuge) hi = (__int128)kHuge;
    }
  }
  if (numel == 0) return t;  // no element is reachable
  const __int128 end = (hi + 1) * (__int128)t.itemsize;
  if (lo < 0 || end > (__int128)t.storage.size)
    throw err(ErrorKind::Segment, "tensor reaches bytes outside its storage", file_->name(), "program", path,
              "bytes within [0, " + num(t.storage.size) + ")",
              lo < 0 ? "negative element offset" : "end at byte " + std::to_string((long long)(end > INT64_MAX ? INT64_MAX : end)));
  t.numel = uint64_t(numel);
  t.data = t.storage.data + size_t(t.storage_offset) * t.itemsize;
  return t;
}

}  // namespace pt2f
