// Validator, the data: shard and external files, segments, storages inside their sections and never
// overlapping, tensor rows inside their storages (composite rows: parts and quantization parameters).
#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "pt2format_limits.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {
namespace {

// Bit 2 (1.1): storages without data (meta-device state); bit 3 (1.1): tensors built from other tensor rows.
constexpr uint32_t kDataAlignment = 64;

bool known_itemsize(ScalarType t, size_t *out) {
  try {
    *out = dtype_itemsize(t);
    return true;
  } catch (const Error &) {
    return false;
  }
}

}  // namespace

void Validator::check_data() {
  std::set<std::string> shard_names;  // names unique within each vector: pt2f_keys, generated
  const auto *shards = p_->shard_files();
  for (uint32_t i = 0; i < len(shards); ++i) {
    const auto *sh = shards->Get(i);
    const std::string path = at("shard_files", i);
    check_plain_name(sh->name(), path + ".name");
    shard_names.insert(s(sh->name()));
    const uint32_t n = len(sh->package_id());
    if (n != 0 && n != 16) invalid("shard package_id must be 16 bytes", path + ".package_id", "0 or 16", num(n));
  }
  const auto *externals = p_->external_files();
  for (uint32_t i = 0; i < len(externals); ++i) {
    const auto *ex = externals->Get(i);
    const std::string path = at("external_files", i);
    check_plain_name(ex->name(), path + ".name");
    if (shard_names.count(s(ex->name())))  // one directory holds both kinds of data file
      invalid("duplicate data file name", path + ".name", "", s(ex->name()));
  }
  const auto *segments = p_->segments();
  const Header &h = file_.header();
  for (uint32_t i = 0; i < len(segments); ++i) {
    const auto *seg = segments->Get(i);
    const std::string path = at("segments", i);
    if (seg->external()) {
      if (!(p_->required_features() & kFeatureExternalFiles))
        invalid("segment in an external file but required_features lacks bit 1 (external files)",
                path + ".external", "", num(seg->external()));
      if (seg->file() || seg->section())
        invalid("a segment in an external file has file and section 0", path, "file 0, section 0",
                "file " + num(seg->file()) + ", section " + num(seg->section()));
      continue;
    }
    if (seg->file() > 0 && !(p_->required_features() & kFeatureShardFiles))
      invalid("segment in a shard file but required_features lacks bit 0 (shard files)", path + ".file", "",
              num(seg->file()));
    if (seg->file() == 0 && (seg->section() >= h.sections.size() ||
                             h.sections[seg->section()].kind != uint16_t(SectionKind::Data)))
      fail(ErrorKind::Segment, "segment does not name a DATA section of this file", path + ".section",
           "a DATA section index", num(seg->section()));
  }
  const auto *storages = p_->storages();
  for (uint32_t i = 0; i < len(storages); ++i) {
    const auto *st = storages->Get(i);
    const std::string path = at("storages", i);
    const auto *seg = segments->Get(st->segment());
    if (seg->external()) {
      const uint64_t size = externals->Get(seg->external() - 1)->size();
      if (st->offset() > size || st->size() > size - st->offset())
        fail(ErrorKind::Segment, "storage ends past its external file", path, "offset + size <= " + num(size));
    } else if (st->offset() % kDataAlignment) {
      fail(ErrorKind::Segment, "storage offset is not a multiple of 64", path + ".offset", "multiple of 64",
           num(st->offset()));
    }
    if (st->meta_nbytes()) {
      if (st->size())
        invalid("a storage without data (meta_nbytes) holds bytes", path + ".size", "0", num(st->size()));
      if (!(p_->required_features() & kFeatureMetaStorages))
        invalid("storage without data but required_features lacks bit 2 (meta storages)", path + ".meta_nbytes", "",
                num(st->meta_nbytes()));
    }
    if (seg->file() == 0 && !seg->external()) {
      const uint64_t limit = h.sections[seg->section()].length;
      if (st->offset() > limit || st->size() > limit - st->offset())
        fail(ErrorKind::Segment, "storage ends past its segment", path, "offset + size <= " + num(limit));
    }
  }
  check_no_overlap();
  std::vector<uint32_t> nesting(len(p_->tensors()), 0);
  for (uint32_t i = 0; i < len(p_->tensors()); ++i) {
    if (check_composite(p_->tensors()->Get(i), i, nesting, at("tensors", i))) continue;
    check_tensor(p_->tensors()->Get(i), at("tensors", i));
  }
}

void Validator::check_plain_name(const flatbuffers::String *name, const std::string &path) {
  const std::string n = s(name);
  if (!name || n.empty() || n == "." || n.find("..") != std::string::npos || n.find('/') != std::string::npos ||
      n.find('\\') != std::string::npos || n.find('\0') != std::string::npos)
    invalid("shard file name must be a plain file name (no '/', '\\', '..' or NUL)", path, "plain file name", n);
}

void Validator::check_no_overlap() {
  const auto *storages = p_->storages();
  std::unordered_map<uint32_t, std::vector<std::tuple<uint64_t, uint64_t, uint32_t>>> by_segment;
  for (uint32_t i = 0; i < len(storages); ++i) {
    const auto *st = storages->Get(i);
    if (st->size()) by_segment[st->segment()].emplace_back(st->offset(), st->offset() + st->size(), i);
  }
  // Report the same pair as Python: sorted by (offset, end, index), first overlap in that order.
  std::vector<uint32_t> segs;
  for (const auto &kv : by_segment) segs.push_back(kv.first);
  std::sort(segs.begin(), segs.end());
  for (uint32_t seg : segs) {
    auto &ranges = by_segment[seg];
    std::sort(ranges.begin(), ranges.end());
    for (size_t k = 1; k < ranges.size(); ++k)
      if (std::get<0>(ranges[k]) < std::get<1>(ranges[k - 1]))
        fail(ErrorKind::Segment, "storages overlap; tensors that alias must share one storage",
             at("storages", std::get<2>(ranges[k])),
             "offset >= " + num(std::get<1>(ranges[k - 1])) + " (end of storages[" + num(std::get<2>(ranges[k - 1])) + "])",
             num(std::get<0>(ranges[k])));
  }
}

// 1.1 rows (quantized, sparse, subclass), as pt2format/_validate.py _check_composite: true when the row
// has no strided view of a storage. Every index a row holds is smaller than its own, so rows never loop.
bool Validator::check_composite(const Tensor *t, uint32_t i, std::vector<uint32_t> &nesting, const std::string &path) {
  constexpr uint64_t kMaxNesting = limits::kMaxTensorNesting;
  const auto *q = t->quantization();
  const bool quantized = t->dtype() == ScalarType::QUINT8 || t->dtype() == ScalarType::QINT8 ||
                         t->dtype() == ScalarType::QINT32;
  if (quantized != (q != nullptr) && !t->subclass())
    invalid("quantized dtypes, and only they, carry quantization parameters", path + ".quantization",
            quantized ? "present" : "absent", q ? "present" : "absent");
  if (q && q->qscheme() != QScheme::PER_TENSOR_AFFINE) {
    for (int k = 0; k < 2; ++k) {
      const uint32_t idx = k ? q->zero_points() : q->scales();
      if (idx >= i)
        invalid("per-channel parameters must refer to an earlier tensor row",
                path + (k ? ".quantization.zero_points" : ".quantization.scales"), "< " + num(i), num(idx));
      nesting[i] = std::max(nesting[i], nesting[idx] + 1);
    }
    if (nesting[i] > kMaxNesting)
      invalid("tensor parts nest too deeply", path + ".quantization", "<= " + num(kMaxNesting) + " levels",
              num(nesting[i]));
  }
  const bool composite = t->subclass() != nullptr || t->layout() != Layout::STRIDED;
  const uint32_t nparts = len(t->parts());
  if (nparts && !composite) invalid("only sparse and subclass tensors have parts", path + ".parts", "", num(nparts));
  if (!composite) return false;
  if (!(p_->required_features() & 0x8))
    invalid("a sparse or subclass tensor needs required_features bit 3", path + ".required_features", "bit 0x8 set", "");
  if (t->subclass() && t->subclass()->context())
    check_value(t->subclass()->context(), 0, false, path + ".subclass.context", true, 0);
  for (uint32_t j = 0; j < nparts; ++j) {  // names unique: pt2f_keys, generated
    const auto *part = t->parts()->Get(j);
    if (part->tensor() >= i)
      invalid("a part must refer to an earlier tensor row", path + ".parts[" + num(j) + "].tensor", "< " + num(i),
              num(part->tensor()));
    nesting[i] = std::max(nesting[i], nesting[part->tensor()] + 1);
  }
  if (nesting[i] > kMaxNesting)
    invalid("tensor parts nest too deeply", path + ".parts", "<= " + num(kMaxNesting) + " levels", num(nesting[i]));
  return true;
}

void Validator::check_tensor(const Tensor *t, const std::string &path) {
  const uint32_t n_storages = len(p_->storages());
  if (t->storage() >= n_storages)
    invalid("tensor storage index out of range", path + ".storage", "< " + num(n_storages), num(t->storage()));
  size_t itemsize;
  if (!known_itemsize(t->dtype(), &itemsize))
    invalid("dtype is unspecified or unknown", path + ".dtype", "", num(uint32_t(t->dtype())));
  const uint32_t nd = len(t->sizes()), ns = len(t->strides());
  if (nd != ns) invalid("sizes and strides differ in length", path + ".strides", num(nd), num(ns));
  if (t->storage_offset() < 0) invalid("negative storage_offset", path + ".storage_offset", "", snum(t->storage_offset()));
  __int128 last = t->storage_offset();
  bool empty = false;
  for (uint32_t d = 0; d < nd; ++d) {
    const int64_t size = t->sizes()->Get(d), stride = t->strides()->Get(d);
    if (size < 0) invalid("negative size", path + ".sizes[" + num(d) + "]", "", snum(size));
    if (stride < 0) invalid("negative stride", path + ".strides[" + num(d) + "]", "", snum(stride));
    if (size == 0) {
      empty = true;
      break;
    }
    last += (__int128)(size - 1) * stride;  // < 2^126 in total
  }
  // A storage without data (bit 2): its tensors are meta-device tensors, bounded by meta_nbytes.
  const auto *st = p_->storages()->Get(t->storage());
  uint64_t size = st->size();
  if (st->meta_nbytes()) {
    const auto *dev = t->device();
    const std::string type = dev && dev->type() ? dev->type()->str() : std::string();
    if (type != "meta")
      invalid("a tensor on a storage without data must be on the meta device", path + ".device", "meta",
              dev ? type : "None");
    size = st->meta_nbytes();
  }
  if (empty) return;
  // last < 2^126 and itemsize <= 16, so the product fits in unsigned 128 bits.
  const unsigned __int128 need = (unsigned __int128)(last + 1) * (unsigned)itemsize;
  if (need > (unsigned __int128)size) {
    std::string digits;  // decimal, as Python prints the byte count
    for (unsigned __int128 v = need; v; v /= 10) digits.insert(digits.begin(), char('0' + int(v % 10)));
    invalid("tensor reaches past the end of its storage", path, "<= " + num(size) + " bytes", digits + " bytes");
  }
}

// A ShardFile.package_id that is present names this save: the main header's id (SPEC.md §5).
void check_shard_ids(const File &file) {
  const auto *shards = file.package()->shard_files();
  for (uint32_t i = 0; i < len(shards); ++i) {
    const auto *id = shards->Get(i)->package_id();
    if (!id || id->size() == 0) continue;
    if (id->size() != 16 || std::memcmp(id->data(), file.header().package_id, 16) != 0)
      fail(ErrorKind::StaleShard, "shard_files entry names another save than this file's header",
           at("shard_files", i) + ".package_id", "the header's package_id", "another id");
  }
}

}  // namespace validation
}  // namespace pt2f
