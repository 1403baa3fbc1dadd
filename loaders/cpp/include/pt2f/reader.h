// pt2f/reader.h: open a .pt2f file by mmap and read it without copying.
//
// File::open checks the header and section table (SPEC.md §2-3), the PROGRAM
// CRC-32 and runs the FlatBuffers verifier with explicit limits before any
// accessor touches the program. After that, package() is the flatc-generated
// root table over the mapped bytes, and tensor()/storage_bytes() hand out
// pointers into the map after bounds checks against storage and segment.
// A File is not safe to use from several threads at once (shards open lazily).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pt2f/container.h"
#include "pt2f/error.h"
#include "pt2f/generated.h"
#include "pt2format_limits.h"

namespace pt2f {

/// Iterate a possibly absent FlatBuffers vector: `for (auto *n : pt2f::each(g->nodes()))`.
template <class V>
struct Each {
  const V *v;
  auto begin() const { return v ? v->begin() : decltype(v->begin())(); }
  auto end() const { return v ? v->end() : decltype(v->end())(); }
};
template <class V>
Each<V> each(const V *v) { return Each<V>{v}; }

/// A possibly absent FlatBuffers string as a std::string ("" when absent).
inline std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

/// Safety limits for untrusted files. Defaults suit any real program.
struct Limits {
  /// Deepest table nesting accepted, the root being depth 1 (the same
  /// measure and default as pt2format.read's max_depth).
  uint32_t max_depth = uint32_t(limits::kMaxDepth);
  /// Most table visits the verifier accepts; 0 means max(1'000'000,
  /// program bytes / 4), which bounds work for files that share sub-tables.
  uint32_t max_tables = 0;
  /// Largest PROGRAM section accepted (as pt2format.read's max_program_bytes).
  uint64_t max_program_bytes = limits::kMaxProgramBytes;
  /// Also verify every DATA section and storage checksum on open.
  bool verify_data = false;
};

/// A read-only byte range, usually inside the mapped file.
struct Bytes {
  const uint8_t *data = nullptr;
  size_t size = 0;
};

/// Read-only bytes of a whole file: an mmap, or an owned aligned copy.
class MappedFile {
 public:
  static std::shared_ptr<MappedFile> map(const std::string &path);
  static std::shared_ptr<MappedFile> copy_of(const uint8_t *data, size_t size, const std::string &name);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const uint8_t *data() const { return data_; }
  size_t size() const { return size_; }
  const std::string &name() const { return name_; }

 private:
  MappedFile() = default;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint64_t> owned_;  // 8-byte aligned copy for copy_of()
  std::string name_;
};

/// Size in bytes of one element of `dtype`; throws for UNSPECIFIED/unknown.
size_t dtype_itemsize(pt2format::ScalarType dtype);

/// A tensor stored in the file: metadata from the program, data in the map.
struct TensorView {
  uint32_t index = 0;                    // position in Package.tensors
  const pt2format::Tensor *table = nullptr;
  pt2format::ScalarType dtype = pt2format::ScalarType::UNSPECIFIED;
  size_t itemsize = 0;
  int64_t storage_offset = 0;            // in elements
  uint64_t numel = 0;
  Bytes storage;                         // the whole storage the tensor views
  const uint8_t *data = nullptr;         // element 0, inside `storage` (nullptr when numel == 0)

  size_t dim() const { return table->sizes() ? table->sizes()->size() : 0; }
  int64_t size(size_t d) const { return table->sizes()->Get(uint32_t(d)); }
  int64_t stride(size_t d) const { return table->strides()->Get(uint32_t(d)); }
};

/// An open, checked .pt2f file.
class File {
 public:
  /// Map and check `path`: container, PROGRAM checksum, then the program in any
  /// encoding (MessagePack and JSON are rebuilt as FlatBuffers) and the verifier.
  /// Throws pt2f::Error.
  static File open(const std::string &path, const Limits &limits = {});
  /// Same checks on an in-memory copy of a file (fuzzing, tests). Shard files
  /// cannot be resolved and make storage access fail.
  static File from_bytes(const uint8_t *data, size_t size, const Limits &limits = {},
                         const std::string &name = "<memory>");

  const std::string &path() const { return file_->name(); }
  const Header &header() const { return header_; }
  /// The verified root table, over the mapped bytes.
  const pt2format::Package *package() const { return package_; }
  /// The raw PROGRAM section bytes (in the file's encoding).
  Bytes program_bytes() const { return program_; }
  /// The program named `name`, or nullptr.
  const pt2format::Program *program(const std::string &name) const;

  /// Bytes of Package.storages[index], checked against its segment. A storage without data
  /// (meta_nbytes > 0, size 0) gives an empty range, as pt2format.read's storage_view does.
  Bytes storage_bytes(uint32_t index) const;
  /// Package.tensors[index] with its extents checked against its storage. Throws a Validation error for
  /// a tensor on a storage without data (a meta-device tensor has no bytes to view).
  TensorView tensor(uint32_t index) const;
  /// Throw ChecksumError when storage `index` has a CRC-32 that does not match.
  void verify_storage(uint32_t index) const;
  /// Verify every DATA section checksum of this file and every storage checksum.
  void verify_data() const;

 private:
  File() = default;
  static File from_mapped(std::shared_ptr<MappedFile> file, const Limits &limits, bool in_memory);
  Bytes segment_bytes(uint32_t segment, const std::string &path) const;
  const MappedFile &shard(uint32_t file_index, Header *header_out, const std::string &path) const;
  const MappedFile &external(uint32_t file_index, const std::string &path) const;

  std::shared_ptr<MappedFile> file_;
  Header header_;
  Bytes program_;
  const pt2format::Package *package_ = nullptr;
  // A MessagePack or JSON program rebuilt as FlatBuffers; package_ points into it.
  std::shared_ptr<std::vector<uint8_t>> rebuilt_program_;
  Limits limits_;
  bool in_memory_ = false;
  struct Shard {
    std::shared_ptr<MappedFile> file;
    Header header;
  };
  mutable std::map<uint32_t, Shard> shards_;
  mutable std::map<uint32_t, std::shared_ptr<MappedFile>> externals_;  // Package.external_files, opened lazily
};

}  // namespace pt2f
