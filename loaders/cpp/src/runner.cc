// pt2format::Runner: load (reader, validation, state over the map, compiled plans), input checks and guards,
// one run with the signature's mutations written back.
#include "pt2f/runner.h"

#include <c10/core/CPUAllocator.h>
#include <c10/core/GradMode.h>
#include <c10/core/TensorImpl.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <cstring>
#include <map>
#include <set>

#include "pt2f/validate.h"
#include "runner_plan.h"

namespace pt2format {

using pt2f::str;

template <class V>
static uint32_t len(const V *v) { return v ? v->size() : 0; }

const char *runner_error_kind_name(RunnerErrorKind kind) {
  switch (kind) {
    case RunnerErrorKind::Load: return "LoadError";
    case RunnerErrorKind::UnsupportedNode: return "UnsupportedNode";
    case RunnerErrorKind::UnknownOperator: return "UnknownOperator";
    case RunnerErrorKind::Input: return "InputError";
    case RunnerErrorKind::Guard: return "GuardError";
    case RunnerErrorKind::Execution: return "ExecutionError";
    case RunnerErrorKind::Library: return "LibraryError";
  }
  return "RunnerError";
}

RunnerError::RunnerError(RunnerErrorKind kind, const std::string &message)
    : std::runtime_error(std::string(runner_error_kind_name(kind)) + ": " + message), kind_(kind) {}

void load_library(const std::string &path) {
  // RTLD_GLOBAL: the library's static initialisers register its operators with libtorch's dispatcher.
  if (!dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL)) {
    const char *e = dlerror();
    throw RunnerError(RunnerErrorKind::Library, path + ": " + (e ? e : "cannot be loaded"));
  }
}

namespace detail {

void fail(RunnerErrorKind kind, const std::string &message) { throw RunnerError(kind, message); }

at::ScalarType to_aten_dtype(pt2format::ScalarType t) {
  using S = pt2format::ScalarType;
  using A = at::ScalarType;
  switch (t) {
    case S::UINT8: return A::Byte;
    case S::INT8: return A::Char;
    case S::INT16: return A::Short;
    case S::INT32: return A::Int;
    case S::INT64: return A::Long;
    case S::FLOAT16: return A::Half;
    case S::FLOAT32: return A::Float;
    case S::FLOAT64: return A::Double;
    case S::COMPLEX32: return A::ComplexHalf;
    case S::COMPLEX64: return A::ComplexFloat;
    case S::COMPLEX128: return A::ComplexDouble;
    case S::BOOL: return A::Bool;
    case S::BFLOAT16: return A::BFloat16;
    case S::UINT16: return A::UInt16;
    case S::UINT32: return A::UInt32;
    case S::UINT64: return A::UInt64;
    case S::FLOAT8_E4M3FN: return A::Float8_e4m3fn;
    case S::FLOAT8_E5M2: return A::Float8_e5m2;
    case S::FLOAT8_E4M3FNUZ: return A::Float8_e4m3fnuz;
    case S::FLOAT8_E5M2FNUZ: return A::Float8_e5m2fnuz;
    case S::FLOAT8_E8M0FNU: return A::Float8_e8m0fnu;
    case S::FLOAT4_E2M1FN_X2: return A::Float4_e2m1fn_x2;
    case S::BITS8: return A::Bits8;
    case S::BITS16: return A::Bits16;
    case S::BITS1X8: return A::Bits1x8;
    case S::BITS2X4: return A::Bits2x4;
    case S::BITS4X2: return A::Bits4x2;
    case S::UINT1: return A::UInt1;
    case S::UINT2: return A::UInt2;
    case S::UINT3: return A::UInt3;
    case S::UINT4: return A::UInt4;
    case S::UINT5: return A::UInt5;
    case S::UINT6: return A::UInt6;
    case S::UINT7: return A::UInt7;
    case S::INT1: return A::Int1;
    case S::INT2: return A::Int2;
    case S::INT3: return A::Int3;
    case S::INT4: return A::Int4;
    case S::INT5: return A::Int5;
    case S::INT6: return A::Int6;
    case S::INT7: return A::Int7;
    default: return A::Undefined;  // quantized dtypes need a quantizer: not built by the runner
  }
}

namespace {

/// A private, writable map of a whole file (MAP_PRIVATE: pages are shared with the page cache until written;
/// a write, such as a buffer the graph mutates in place, stays in this process), as pt2format.load_module maps.
struct PrivateMap {
  void *base = nullptr;
  size_t size = 0;
  ~PrivateMap() {
    if (base && size) ::munmap(base, size);
  }
};

std::shared_ptr<PrivateMap> map_private(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(RunnerErrorKind::Load, path + ": cannot open: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(RunnerErrorKind::Load, path + ": not a regular file");
  }
  auto m = std::make_shared<PrivateMap>();
  m->size = size_t(st.st_size);
  if (m->size) {
    void *p = ::mmap(nullptr, m->size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      ::close(fd);
      fail(RunnerErrorKind::Load, path + ": cannot map: " + std::strerror(errno));
    }
    m->base = p;
  }
  ::close(fd);
  return m;
}

void release_map(void *ctx) { delete static_cast<std::shared_ptr<PrivateMap> *>(ctx); }

/// The storages of a file over private maps of the main file, its shards and its external files.
class PrivateStorages {
 public:
  explicit PrivateStorages(const pt2f::File &file) : file_(file) {
    auto slash = file.path().rfind('/');
    dir_ = slash == std::string::npos ? std::string() : file.path().substr(0, slash + 1);
  }

  c10::Storage get(uint32_t index, const std::string &where) {
    const pt2format::Package *pkg = file_.package();
    const pt2format::Storage *st = pkg->storages()->Get(index);
    const pt2format::Segment *seg = pkg->segments()->Get(st->segment());
    std::shared_ptr<PrivateMap> m;
    uint64_t pos = 0;
    if (seg->external() > 0) {
      m = open(pkg->external_files()->Get(seg->external() - 1)->name()->str(), false);
      pos = st->offset();
    } else if (seg->file() > 0) {
      const std::string name = pkg->shard_files()->Get(seg->file() - 1)->name()->str();
      m = open(name, false);
      pt2f::Header h = pt2f::parse_container(static_cast<const uint8_t *>(m->base), m->size, pt2f::FileRole::Shard, name);
      if (seg->section() >= h.sections.size()) fail(RunnerErrorKind::Load, where + ": shard section out of range");
      pos = h.sections[seg->section()].offset + st->offset();
    } else {
      m = open(file_.path(), true);
      if (seg->section() >= file_.header().sections.size()) fail(RunnerErrorKind::Load, where + ": section out of range");
      pos = file_.header().sections[seg->section()].offset + st->offset();
    }
    if (pos > m->size || st->size() > m->size - pos)
      fail(RunnerErrorKind::Load, where + ": storage " + std::to_string(index) + " lies outside its file (changed since it was checked?)");
    c10::DataPtr ptr(static_cast<uint8_t *>(m->base) + pos, new std::shared_ptr<PrivateMap>(m), &release_map,
                     c10::Device(c10::kCPU));
    return c10::Storage(c10::Storage::use_byte_size_t(), size_t(st->size()), std::move(ptr), nullptr, false);
  }

 private:
  std::shared_ptr<PrivateMap> open(const std::string &name, bool main) {
    const std::string path = main ? name : dir_ + name;
    auto it = maps_.find(path);
    if (it != maps_.end()) return it->second;
    return maps_[path] = map_private(path);
  }
  const pt2f::File &file_;
  std::string dir_;
  std::map<std::string, std::shared_ptr<PrivateMap>> maps_;
};

at::Tensor view_of(const pt2f::TensorView &tv, const c10::Storage &storage, const std::string &where) {
  at::ScalarType dtype = detail::to_aten_dtype(tv.dtype);
  if (dtype == at::ScalarType::Undefined)
    fail(RunnerErrorKind::UnsupportedNode, where + ": dtype " + pt2format::EnumNameScalarType(tv.dtype) +
                                               " is not supported by the C++ runner");
  if (tv.table->quantization() || tv.table->subclass() || (tv.table->parts() && tv.table->parts()->size()))
    fail(RunnerErrorKind::UnsupportedNode, where + ": quantized, sparse and subclass tensors are not supported by the C++ runner");
  std::vector<int64_t> sizes, strides;
  for (size_t d = 0; d < tv.dim(); ++d) {
    sizes.push_back(tv.size(d));
    strides.push_back(tv.stride(d));
  }
  auto impl = c10::make_intrusive<c10::TensorImpl>(c10::Storage(storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
                                                  caffe2::TypeMeta::fromScalarType(dtype));
  impl->set_sizes_and_strides(sizes, strides, tv.storage_offset);
  return at::Tensor(std::move(impl));
}

}  // namespace
}  // namespace detail

using detail::fail;

struct Runner::Impl {
  detail::Program p;
  std::string name;

  void load_state(const std::shared_ptr<pt2f::File> &file);
  void signature();
  void check_inputs(const std::vector<c10::IValue> &inputs) const;
};

void Runner::Impl::load_state(const std::shared_ptr<pt2f::File> &file) {
  const pt2format::Program *prog = p.program;
  // One c10::Storage per stored storage, so tensors that share one stay aliased.
  detail::PrivateStorages maps(*file);
  std::map<uint32_t, c10::Storage> storages;
  uint32_t i = 0;
  for (auto *e : pt2f::each(prog->state())) {
    std::string where = "programs[" + name + "].state[" + std::to_string(i++) + "] (" + str(e->name()) + ")";
    pt2f::TensorView tv;
    try {
      tv = file->tensor(e->tensor());  // every check of the reader: extents inside the storage, storage in its segment
    } catch (const pt2f::Error &err) {
      fail(RunnerErrorKind::Load, where + ": " + err.what());
    }
    const uint32_t sid = tv.table->storage();
    auto it = storages.find(sid);
    if (it == storages.end()) it = storages.emplace(sid, maps.get(sid, where)).first;
    p.state_names.push_back(str(e->name()));
    p.state.push_back(detail::view_of(tv, it->second, where));
  }
}

void Runner::Impl::signature() {
  const pt2format::Program *prog = p.program;
  const pt2format::Graph *g = prog->graph();
  const auto *sig = prog->signature();
  const std::string at = "programs[" + name + "].signature";
  if (len(sig->input_specs()) != len(g->inputs()))
    fail(RunnerErrorKind::Load, at + ".input_specs: " + std::to_string(len(sig->input_specs())) + " specs for " +
                                    std::to_string(len(g->inputs())) + " graph inputs");
  if (len(sig->output_specs()) != len(g->outputs()))
    fail(RunnerErrorKind::Load, at + ".output_specs: " + std::to_string(len(sig->output_specs())) + " specs for " +
                                    std::to_string(len(g->outputs())) + " graph outputs");
  std::map<std::string, int> state_index;
  for (size_t i = 0; i < p.state_names.size(); ++i) state_index[p.state_names[i]] = int(i);
  std::map<std::string, const pt2format::TensorMeta *> metas;
  for (auto *v : pt2f::each(g->tensor_values())) metas[str(v->name())] = v->meta();
  std::map<std::string, int> user_input_index;  // placeholder name -> flat user input

  auto from_state = [&](int placeholder, const std::string &fqn, const std::string &path) {
    auto it = state_index.find(fqn);
    if (it == state_index.end()) fail(RunnerErrorKind::Load, path + ": no state entry named '" + fqn + "'");
    p.state_inputs.emplace_back(placeholder, it->second);
  };
  using IK = pt2format::InputSpecKind;
  for (uint32_t i = 0; i < len(sig->input_specs()); ++i) {
    auto *spec = sig->input_specs()->Get(i);
    const std::string path = at + ".input_specs[" + std::to_string(i) + "]";
    detail::InputCheck chk;
    chk.placeholder = int(i);
    switch (spec->spec_type()) {
      case IK::UserInputSpec: {
        const pt2format::Argument *a = spec->spec_as_UserInputSpec()->arg();
        using AV = pt2format::ArgumentValue;
        switch (a ? a->value_type() : AV::NONE) {
          case AV::TensorArgument: {
            chk.slot.kind = InputSlot::Kind::Tensor;
            chk.slot.name = str(a->value_as_TensorArgument()->name());
            auto m = metas.find(chk.slot.name);
            if (m == metas.end() || !m->second) fail(RunnerErrorKind::Load, path + ": user input '" + chk.slot.name + "' has no tensor metadata");
            chk.dtype = detail::to_aten_dtype(m->second->dtype());
            for (auto *s : pt2f::each(m->second->sizes())) chk.sizes.push_back(s);
            break;
          }
          case AV::SymIntArgument: chk.slot = {InputSlot::Kind::Int, str(a->value_as_SymIntArgument()->name())}; break;
          case AV::SymFloatArgument: chk.slot = {InputSlot::Kind::Float, str(a->value_as_SymFloatArgument()->name())}; break;
          case AV::SymBoolArgument: chk.slot = {InputSlot::Kind::Bool, str(a->value_as_SymBoolArgument()->name())}; break;
          case AV::IntArgument: chk.slot.kind = InputSlot::Kind::Constant; chk.constant = int64_t(a->value_as_IntArgument()->value()); break;
          case AV::FloatArgument: chk.slot.kind = InputSlot::Kind::Constant; chk.constant = a->value_as_FloatArgument()->value(); break;
          case AV::BoolArgument: chk.slot.kind = InputSlot::Kind::Constant; chk.constant = bool(a->value_as_BoolArgument()->value()); break;
          case AV::StringArgument: chk.slot.kind = InputSlot::Kind::Constant; chk.constant = str(a->value_as_StringArgument()->value()); break;
          case AV::NoneArgument: chk.slot.kind = InputSlot::Kind::Constant; break;
          default:
            fail(RunnerErrorKind::UnsupportedNode, path + ": a user input of kind " +
                                                       std::string(pt2format::EnumNameArgumentValue(a ? a->value_type() : AV::NONE)) +
                                                       " is not supported by the C++ runner");
        }
        user_input_index[chk.slot.name] = int(p.user_inputs.size());
        p.user_inputs.push_back(chk);
        break;
      }
      case IK::InputToConstantInputSpec: {
        auto *c = spec->spec_as_InputToConstantInputSpec();
        chk.slot = {InputSlot::Kind::Constant, str(c->name())};
        const pt2format::Value *v = c->value();
        using VK = pt2format::ValueKind;
        switch (v ? v->value_type() : VK::NONE) {
          case VK::NullValue: break;
          case VK::IntValue: chk.constant = int64_t(v->value_as_IntValue()->value()); break;
          case VK::FloatValue: chk.constant = v->value_as_FloatValue()->value(); break;
          case VK::BoolValue: chk.constant = bool(v->value_as_BoolValue()->value()); break;
          case VK::StringValue: chk.constant = str(v->value_as_StringValue()->value()); break;
          default: fail(RunnerErrorKind::UnsupportedNode, path + ": a constant input of this kind is not supported by the C++ runner");
        }
        user_input_index[chk.slot.name] = int(p.user_inputs.size());
        p.user_inputs.push_back(chk);
        break;
      }
      case IK::InputToParameterSpec: from_state(int(i), str(spec->spec_as_InputToParameterSpec()->parameter_name()), path); break;
      case IK::InputToBufferSpec: from_state(int(i), str(spec->spec_as_InputToBufferSpec()->buffer_name()), path); break;
      case IK::InputToTensorConstantSpec:
        from_state(int(i), str(spec->spec_as_InputToTensorConstantSpec()->tensor_constant_name()), path);
        break;
      case IK::InputToCustomObjSpec:
        fail(RunnerErrorKind::UnsupportedNode, path + ": custom (torchbind) objects are not supported by the C++ runner");
      case IK::InputTokenSpec:
        fail(RunnerErrorKind::UnsupportedNode, path + ": effect tokens are not supported by the C++ runner");
      default: fail(RunnerErrorKind::UnsupportedNode, path + ": unknown input spec kind");
    }
  }
  for (const auto &c : p.user_inputs) p.input_slots.push_back(c.slot);

  using OK = pt2format::OutputSpecKind;
  for (uint32_t i = 0; i < len(sig->output_specs()); ++i) {
    auto *spec = sig->output_specs()->Get(i);
    const std::string path = at + ".output_specs[" + std::to_string(i) + "]";
    detail::Mutation m;
    m.output = int(i);
    switch (spec->spec_type()) {
      case OK::UserOutputSpec:
      case OK::LossOutputSpec: p.user_outputs.push_back(int(i)); break;
      case OK::BufferMutationSpec:
      case OK::ParameterMutationSpec: {
        m.name = spec->spec_type() == OK::BufferMutationSpec ? str(spec->spec_as_BufferMutationSpec()->buffer_name())
                                                             : str(spec->spec_as_ParameterMutationSpec()->parameter_name());
        auto it = state_index.find(m.name);
        if (it == state_index.end()) fail(RunnerErrorKind::Load, path + ": mutated '" + m.name + "' is not a state entry");
        m.state = it->second;
        p.mutations.push_back(m);
        break;
      }
      case OK::UserInputMutationSpec: {
        m.name = str(spec->spec_as_UserInputMutationSpec()->user_input_name());
        auto it = user_input_index.find(m.name);
        if (it == user_input_index.end()) fail(RunnerErrorKind::Load, path + ": mutated '" + m.name + "' is not a user input");
        m.user_input = it->second;
        p.mutations.push_back(m);
        break;
      }
      case OK::OutputTokenSpec:
        fail(RunnerErrorKind::UnsupportedNode, path + ": effect tokens are not supported by the C++ runner");
      default:
        fail(RunnerErrorKind::UnsupportedNode, path + ": output spec kind " +
                                                   std::string(pt2format::EnumNameOutputSpecKind(spec->spec_type())) +
                                                   " is not supported by the C++ runner");
    }
  }
  p.mutates = !p.mutations.empty();
}

namespace {

std::string range_text(const pt2format::ValueRange *r) {
  return "[" + (r->has_lower() ? std::to_string(r->lower()) : std::string("-oo")) + ", " +
         (r->has_upper() ? std::to_string(r->upper()) : std::string("oo")) + "]";
}

bool in_range(const pt2f::SymValue &v, const pt2format::ValueRange *r) {
  if (!r) return true;
  double x = v.kind == pt2f::SymValue::Kind::Int ? double(v.num)
             : v.kind == pt2f::SymValue::Kind::Rational ? double(v.num) / double(v.den)
             : v.kind == pt2f::SymValue::Kind::Bool ? double(v.b) : v.f;
  if (v.kind == pt2f::SymValue::Kind::Int) {
    if (r->has_lower() && v.num < r->lower()) return false;
    if (r->has_upper() && v.num > r->upper()) return false;
    return true;
  }
  if (r->has_lower() && x < r->lower()) return false;
  if (r->has_upper() && x > r->upper()) return false;
  return true;
}

}  // namespace

void Runner::Impl::check_inputs(const std::vector<c10::IValue> &inputs) const {
  const auto &ins = p.user_inputs;
  if (inputs.size() != ins.size())
    fail(RunnerErrorKind::Input, "program '" + name + "' takes " + std::to_string(ins.size()) + " user inputs, got " +
                                     std::to_string(inputs.size()));
  const pt2format::Program *prog = p.program;
  std::lock_guard<std::mutex> lock(p.guard_mutex);
  pt2f::SymEvaluator &ev = *p.evaluator;
  std::vector<int64_t> bound(len(prog->symbols()), 0);
  std::vector<std::string> bound_by(len(prog->symbols()));
  std::vector<std::pair<std::string, std::pair<uint32_t, int64_t>>> derived;  // (what, (expr, actual))
  auto bind = [&](uint32_t expr, int64_t actual, const std::string &what) {
    auto *e = prog->sym_exprs()->Get(expr);
    if (e->kind() == pt2format::SymExprKind::SYMBOL && e->symbol() < bound.size()) {
      const uint32_t s = e->symbol();
      if (!bound_by[s].empty()) {
        if (bound[s] != actual)
          fail(RunnerErrorKind::Guard, what + " is " + std::to_string(actual) + " but " + bound_by[s] + " is " +
                                           std::to_string(bound[s]) + " (both are symbol " + str(prog->symbols()->Get(s)->name()) + ")");
        return;
      }
      bound[s] = actual;
      bound_by[s] = what;
      ev.set(s, pt2f::SymValue::integer(actual));
    } else {
      derived.push_back({what, {expr, actual}});
    }
  };
  for (size_t i = 0; i < ins.size(); ++i) {
    const auto &c = ins[i];
    const c10::IValue &v = inputs[i];
    const std::string what = "input " + std::to_string(i) + " (" + c.slot.name + ")";
    switch (c.slot.kind) {
      case InputSlot::Kind::Tensor: {
        if (!v.isTensor()) fail(RunnerErrorKind::Input, what + ": expected a tensor, got " + v.tagKind());
        const at::Tensor &t = v.toTensor();
        if (t.scalar_type() != c.dtype)
          fail(RunnerErrorKind::Input, what + ": expected dtype " + std::string(c10::toString(c.dtype)) + ", got " +
                                           c10::toString(t.scalar_type()));
        if (size_t(t.dim()) != c.sizes.size())
          fail(RunnerErrorKind::Input, what + ": expected " + std::to_string(c.sizes.size()) + " dimensions, got " +
                                           std::to_string(t.dim()));
        for (size_t d = 0; d < c.sizes.size(); ++d) {
          const pt2format::SymInt *s = c.sizes[d];
          const std::string dim = what + ".size(" + std::to_string(d) + ")";
          if (s->expr() < 0) {
            if (t.size(int64_t(d)) != s->value())
              fail(RunnerErrorKind::Input, dim + ": expected " + std::to_string(s->value()) + ", got " +
                                               std::to_string(t.size(int64_t(d))));
          } else {
            bind(uint32_t(s->expr()), t.size(int64_t(d)), dim);
          }
        }
        break;
      }
      case InputSlot::Kind::Int:
        if (!v.isInt()) fail(RunnerErrorKind::Input, what + ": expected an int, got " + v.tagKind());
        for (auto *sv : pt2f::each(prog->graph()->sym_int_values()))
          if (str(sv->name()) == c.slot.name && sv->value()->expr() >= 0) bind(uint32_t(sv->value()->expr()), v.toInt(), what);
        break;
      case InputSlot::Kind::Float:
        if (!v.isDouble()) fail(RunnerErrorKind::Input, what + ": expected a float, got " + v.tagKind());
        break;
      case InputSlot::Kind::Bool:
        if (!v.isBool()) fail(RunnerErrorKind::Input, what + ": expected a bool, got " + v.tagKind());
        break;
      case InputSlot::Kind::Constant: {
        bool same = (v.isNone() && c.constant.isNone()) || (v.isInt() && c.constant.isInt() && v.toInt() == c.constant.toInt()) ||
                    (v.isDouble() && c.constant.isDouble() && v.toDouble() == c.constant.toDouble()) ||
                    (v.isBool() && c.constant.isBool() && v.toBool() == c.constant.toBool()) ||
                    (v.isString() && c.constant.isString() && v.toStringRef() == c.constant.toStringRef());
        if (!same) fail(RunnerErrorKind::Guard, what + ": the program was exported for the constant " + c10::toString(c.constant.type()->str()) + " value this input had then");
        break;
      }
    }
  }
  // Stored guard sources (1.1): every symbol the input guards read.
  for (auto *gs : pt2f::each(prog->guard_sources())) {
    if (gs->input() >= inputs.size() || gs->symbol() >= bound.size()) continue;
    const c10::IValue &v = inputs[gs->input()];
    int64_t x = 0;
    if (gs->kind() == pt2format::GuardSourceKind::VALUE && v.isInt()) x = v.toInt();
    else if (!v.isTensor()) continue;
    else if (gs->kind() == pt2format::GuardSourceKind::SIZE && gs->dim() < v.toTensor().dim()) x = v.toTensor().size(gs->dim());
    else if (gs->kind() == pt2format::GuardSourceKind::STRIDE && gs->dim() < v.toTensor().dim()) x = v.toTensor().stride(gs->dim());
    else if (gs->kind() == pt2format::GuardSourceKind::STORAGE_OFFSET) x = v.toTensor().storage_offset();
    else continue;
    if (bound_by[gs->symbol()].empty()) {
      bound[gs->symbol()] = x;
      bound_by[gs->symbol()] = "input " + std::to_string(gs->input());
      ev.set(gs->symbol(), pt2f::SymValue::integer(x));
    }
  }
  // A size that is only a derived expression of a symbol no plain size binds (torch's Dim `2 * d + 1` with
  // no input of size d): the symbol is solved from it when the expression is linear in that one symbol,
  // a * s + b, as torch's derived dims are; the check below then evaluates it with the solution.
  auto unbound_symbols = [&](uint32_t root) {
    std::vector<uint32_t> out, stack{root};
    std::vector<bool> seen(len(prog->sym_exprs()), false);
    while (!stack.empty()) {
      const uint32_t i = stack.back();
      stack.pop_back();
      if (i >= seen.size() || seen[i]) continue;
      seen[i] = true;
      auto *e = prog->sym_exprs()->Get(i);
      if (e->kind() == pt2format::SymExprKind::SYMBOL) {
        if (e->symbol() < bound.size() && bound_by[e->symbol()].empty() &&
            std::find(out.begin(), out.end(), e->symbol()) == out.end())
          out.push_back(e->symbol());
      } else {
        for (auto a : pt2f::each(e->args())) stack.push_back(uint32_t(a));
      }
    }
    return out;
  };
  std::vector<uint32_t> probed;
  for (bool progress = true; progress;) {
    progress = false;
    for (const auto &d : derived) {
      const auto free = unbound_symbols(d.second.first);
      if (free.size() != 1) continue;
      const uint32_t sym = free[0];
      probed.push_back(sym);
      try {
        ev.set(sym, pt2f::SymValue::integer(0));
        const pt2f::SymValue f0 = ev.evaluate(d.second.first);
        ev.set(sym, pt2f::SymValue::integer(1));
        const pt2f::SymValue f1 = ev.evaluate(d.second.first);
        using K = pt2f::SymValue::Kind;
        if (f0.kind != K::Int || f1.kind != K::Int) continue;
        const int64_t b = f0.num, a = f1.num - b;
        if (a == 0 || (d.second.second - b) % a != 0) continue;
        bound[sym] = (d.second.second - b) / a;
        bound_by[sym] = d.first;
        ev.set(sym, pt2f::SymValue::integer(bound[sym]));
        progress = true;
      } catch (const pt2f::Error &) {
        continue;  // not solvable this way: the check below names the expression
      }
    }
  }
  for (uint32_t s : probed)  // a probe that solved nothing must not stand for a value
    if (bound_by[s].empty()) ev.unset(s);
  for (const auto &d : derived) {
    pt2f::SymValue want;
    try {
      want = ev.evaluate(d.second.first);
    } catch (const pt2f::Error &e) {
      fail(RunnerErrorKind::Guard, d.first + ": cannot evaluate its expression sym_exprs[" + std::to_string(d.second.first) + "]: " + e.what());
    }
    if (!(want == pt2f::SymValue::integer(d.second.second)))
      fail(RunnerErrorKind::Guard, d.first + ": expected " + want.to_string() + " (sym_exprs[" + std::to_string(d.second.first) +
                                       "]), got " + std::to_string(d.second.second));
  }
  // Ranges of the symbols bound from the inputs, then the program's range constraints.
  for (size_t s = 0; s < bound.size(); ++s) {
    if (bound_by[s].empty()) continue;
    auto *sym = prog->symbols()->Get(uint32_t(s));
    if (!in_range(pt2f::SymValue::integer(bound[s]), sym->range()))
      fail(RunnerErrorKind::Guard, bound_by[s] + " is " + std::to_string(bound[s]) + ", outside the range " +
                                       range_text(sym->range()) + " of symbol " + str(sym->name()));
  }
  uint32_t k = 0;
  for (auto *rc : pt2f::each(prog->range_constraints())) {
    const uint32_t idx = k++;
    pt2f::SymValue v;
    try {
      v = ev.evaluate(rc->expr());
    } catch (const pt2f::Error &) {
      continue;  // a constraint on a symbol no input binds (an unbacked value): checked where it is produced
    }
    if (!in_range(v, rc->range()))
      fail(RunnerErrorKind::Guard, "range_constraints[" + std::to_string(idx) + "] (sym_exprs[" + std::to_string(rc->expr()) +
                                       "]) is " + v.to_string() + ", outside " + range_text(rc->range()));
  }
  k = 0;
  for (uint32_t g : pt2f::each(prog->input_guards())) {
    const uint32_t idx = k++;
    std::string text = idx < len(prog->guards_code()) ? " (" + prog->guards_code()->Get(idx)->str() + ")" : "";
    pt2f::SymValue v;
    try {
      v = ev.evaluate(g);
    } catch (const pt2f::Error &e) {
      fail(RunnerErrorKind::Guard, "input_guards[" + std::to_string(idx) + "]" + text + " cannot be evaluated: " + e.what());
    }
    bool ok = v.kind == pt2f::SymValue::Kind::Bool ? v.b : v.kind == pt2f::SymValue::Kind::Int ? v.num != 0 : v.f != 0.0;
    if (!ok) fail(RunnerErrorKind::Guard, "input_guards[" + std::to_string(idx) + "] (sym_exprs[" + std::to_string(g) + "])" + text + " is false");
  }
}

Runner::Runner(const std::string &path, const RunnerOptions &options) : impl_(new Impl) {
  std::shared_ptr<pt2f::File> file;
  try {
    file = std::make_shared<pt2f::File>(pt2f::File::open(path));
    pt2f::validate(*file);
    if (options.verify_data) file->verify_data();
  } catch (const pt2f::Error &e) {
    fail(RunnerErrorKind::Load, std::string(pt2f::error_kind_name(e.kind())) + ": " + e.what());
  }
  const auto *progs = file->package()->programs();
  const pt2format::Program *prog = nullptr;
  if (!options.program.empty()) {
    prog = file->program(options.program);
  } else if (len(progs) == 1) {
    prog = progs->Get(0);
  } else {
    prog = file->program("forward");
  }
  if (!prog) {
    std::string names;
    for (auto *q : pt2f::each(progs)) names += (names.empty() ? "" : ", ") + str(q->name());
    fail(RunnerErrorKind::Load, path + ": no program " + (options.program.empty() ? "to run" : "named '" + options.program + "'") +
                                    "; the file holds: " + (names.empty() ? "no program (a weights-only file)" : names));
  }
  Impl &im = *impl_;
  im.p.file = file;
  im.p.program = prog;
  im.name = str(prog->name());
  try {
    im.load_state(file);
    im.signature();
    detail::compile_program(im.p);
    im.p.evaluator.reset(new pt2f::SymEvaluator(prog));
  } catch (const pt2f::Error &e) {
    fail(RunnerErrorKind::Load, path + ": " + e.what());
  }
}

Runner::~Runner() = default;
Runner::Runner(Runner &&) noexcept = default;
Runner &Runner::operator=(Runner &&) noexcept = default;

const std::vector<InputSlot> &Runner::inputs() const { return impl_->p.input_slots; }
const std::string &Runner::program_name() const { return impl_->name; }

std::vector<std::pair<std::string, at::Tensor>> Runner::state() const {
  std::unique_lock<std::mutex> lock(impl_->p.run_mutex);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < impl_->p.state.size(); ++i) out.emplace_back(impl_->p.state_names[i], impl_->p.state[i]);
  return out;
}

std::vector<c10::IValue> Runner::run(const std::vector<c10::IValue> &inputs) const {
  const detail::Program &p = impl_->p;
  std::unique_lock<std::mutex> lock(p.run_mutex, std::defer_lock);
  if (p.mutates) lock.lock();  // each run sees the state the previous one left
  impl_->check_inputs(inputs);
  std::vector<c10::IValue> graph_inputs(p.graphs[0].inputs.size());
  size_t u = 0;
  for (const auto &c : p.user_inputs) {
    const c10::IValue &v = inputs[u++];
    graph_inputs[size_t(c.placeholder)] = c.slot.kind == InputSlot::Kind::Constant ? c.constant : v;
  }
  for (const auto &si : p.state_inputs) graph_inputs[size_t(si.first)] = p.state[size_t(si.second)];
  c10::AutoGradMode no_grad(false);
  std::vector<c10::IValue> outs = detail::execute(p, 0, std::move(graph_inputs));
  // Mutations, as torch's unlifted module writes them: copy_ into the buffer or the caller's input tensor.
  static const c10::OperatorHandle &copy = c10::Dispatcher::singleton().findSchemaOrThrow("aten::copy_", "");
  std::map<const c10::TensorImpl *, c10::IValue> written;
  for (const auto &m : p.mutations) {
    const c10::IValue &value = outs[size_t(m.output)];
    c10::IValue target = m.state >= 0 ? c10::IValue(p.state[size_t(m.state)]) : inputs[size_t(m.user_input)];
    if (!value.isTensor() || !target.isTensor()) fail(RunnerErrorKind::Execution, "mutation of '" + m.name + "': not a tensor");
    std::vector<c10::IValue> stack{target, value, false};
    try {
      copy.callBoxed(stack);
    } catch (const c10::Error &e) {
      fail(RunnerErrorKind::Execution, "mutation of '" + m.name + "': " + e.what_without_backtrace());
    }
    written[value.toTensor().unsafeGetTensorImpl()] = target;
  }
  std::vector<c10::IValue> result;
  for (int i : p.user_outputs) {
    c10::IValue v = outs[size_t(i)];
    if (v.isTensor()) {  // an output that is also a mutation's value is the written tensor (the copy_ node's result)
      auto it = written.find(v.toTensor().unsafeGetTensorImpl());
      if (it != written.end()) v = it->second;
    }
    result.push_back(std::move(v));
  }
  return result;
}

}  // namespace pt2format
