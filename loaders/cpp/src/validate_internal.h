// validate_internal.h (internal): what the parts of validate() share.
//
// validate() (validate.cc) runs four walks over a decoded package: the
// string classes (validate_strings.cc), the shard ids, the label against the
// names used (validate_label.cc, SPEC.md §8.1), and the Validator
// below, the invariants of pt2format/_validate.py in the same order. The
// Validator is one class because its checks share the walk's state (the
// current program's pool sizes, the file's symbolic budget, the depth
// bound); its members are defined by topic:
//   validate.cc           run(): the package level, extra files, operators
//   validate_data.cc      shard and external files, segments, storages, tensor rows
//   validate_values.cc    generic Value trees and their dict keys
//   validate_program.cc   a program: its parts, tree specs, signature, state
//   validate_symbols.cc   the symbolic pool (acyclic, arity, bounds) and the file's budget
//   validate_graph.cc     graph rules: value names scoped to their graph, arguments, metadata
// The index, required, key and value checks are generated (pt2format_rules.h).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

#include "pt2f/error.h"
#include "pt2f/reader.h"
#include "pt2format_limits.h"

namespace pt2f {
namespace validation {

inline std::string num(uint64_t v) { return std::to_string(v); }
inline std::string snum(int64_t v) { return std::to_string(v); }

[[noreturn]] inline void fail(ErrorKind kind, const std::string &msg, const std::string &path,
                              const std::string &expected = "", const std::string &got = "") {
  Error::Where w;
  w.section = "program";
  w.path = path;
  w.expected = expected;
  w.got = got;
  throw Error(kind, msg, w);
}
[[noreturn]] inline void invalid(const std::string &msg, const std::string &path, const std::string &expected = "",
                                 const std::string &got = "") {
  fail(ErrorKind::Validation, msg, path, expected, got);
}

inline std::string s(const flatbuffers::String *x) { return x ? x->str() : std::string(); }
template <class V>
uint32_t len(const V *v) { return v ? v->size() : 0; }
inline std::string at(const std::string &path, uint32_t i) { return path + "[" + num(i) + "]"; }

// "pt2format.Node" -> "Node"
inline std::string short_name(const flatbuffers::String *name) {
  const std::string n = name->str();
  const size_t dot = n.rfind('.');
  return dot == std::string::npos ? n : n.substr(dot + 1);
}

// Every string field of every table reachable from Package in the class its field declares (validate_strings.cc).
void check_string_classes(const File &file);
// Present shard package ids name this save (validate_data.cc).
void check_shard_ids(const File &file);
// No name newer than the file's label: fields, enum values, union members, feature bits (validate_label.cc).
void check_label(const File &file);

// ---------------------------------------------------------------------------
// Invariants (pt2format/_validate.py, in the same order).

using namespace pt2format;

// Names declared by one graph (per kind), for the argument checks.
struct Scope {
  std::unordered_set<std::string> tensors, sym_ints, sym_floats, sym_bools, custom_objs;
};

class Validator {
 public:
  explicit Validator(const File &file) : file_(file), p_(file.package()) {}

  void run();  // validate.cc

 private:
  // validate.cc
  void check_extra_files();

  // validate_data.cc
  void check_data();
  void check_plain_name(const flatbuffers::String *name, const std::string &path);
  void check_no_overlap();
  bool check_composite(const Tensor *t, uint32_t i, std::vector<uint32_t> &nesting, const std::string &path);
  void check_tensor(const Tensor *t, const std::string &path);

  // validate_values.cc
  void check_value(const Value *v, uint32_t depth, bool identifier_keys, const std::string &path,
                   bool objects = false, int64_t n_refs = -1);
  void check_map(const MapValue *m, uint32_t depth, bool identifier_keys, const std::string &path,
                 bool objects = false, int64_t n_refs = -1);
  static void check_identifier_key(const Value *key, const std::string &path);
  static void check_module_key(const Value *key, const std::string &path);

  // validate_program.cc
  void check_program(const Program *p, const std::string &path);
  void check_tree_spec(const TreeSpec *spec, uint32_t depth, const std::string &path);
  void check_state_matches_placeholders(const Program *p, const std::string &path);
  void check_signature(const Program *p, const Scope &sc, const std::string &path);

  // validate_symbols.cc
  static bool op_known(uint8_t op);
  static void arity(SymOp op, uint32_t *lo, uint32_t *hi, bool *even);
  void check_symbols(const Program *p, const std::string &path);
  void charge(uint64_t size, const std::string &path);
  void use(uint32_t expr, const std::string &path);
  void check_sym(int32_t expr, const std::string &path);

  // validate_graph.cc
  template <class V>
  std::unordered_set<std::string> names(const V *values, const std::string &path);
  Scope check_graph(const Graph *g, uint32_t depth, const std::string &path);
  void check_metadata(const NodeMetadata *meta, const std::string &path);
  [[noreturn]] static void undeclared(const char *what, const flatbuffers::String *name, const std::string &path);
  template <class L>
  void optional_names(const L *list, const std::unordered_set<std::string> &scope, const char *what,
                      const std::string &path);
  void check_argument(const Scope &sc, ArgumentValue type, const void *v, uint32_t depth, const std::string &path);

  const File &file_;
  const Package *p_;
  uint32_t n_tensors_ = 0;
  uint32_t n_symbols_ = 0;
  uint32_t n_exprs_ = 0;
  uint32_t max_depth_ = uint32_t(limits::kMaxDepth);
  std::vector<uint64_t> sym_sizes_;  // expanded size of each node of the current program's pool
  uint64_t sym_spent_ = 0;           // the file's budget spent so far (every program)
};

}  // namespace validation
}  // namespace pt2f
