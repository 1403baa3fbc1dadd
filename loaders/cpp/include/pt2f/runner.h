// pt2f/runner.h: run a program of a .pt2f file on libtorch, without Python.
//
// pt2format::Runner opens a file with the C++ reader (container, program in
// any encoding, validation), builds the stored weights on a private map of
// the file (no copy; MAP_PRIVATE, so a buffer the program writes changes in
// this process only, as with pt2format.load_module), resolves every operator once through
// the c10 dispatcher and compiles each node's arguments into a plan. run()
// checks the inputs (count, kind, dtype, rank, static sizes, the stored input
// guards and range constraints, evaluated with pt2f::SymEvaluator), then
// interprets the graph calling each operator boxed, writes the buffer and
// user-input mutations back as the graph signature says, and returns the
// user outputs flattened.
//
// Thread safety: run() may be called from several threads on one Runner. A
// program that mutates state (buffers or user inputs) runs one call at a
// time (a mutex), so each run sees the state the previous one left; other
// programs run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/ivalue.h>

namespace pt2format {

/// What went wrong, by what the caller can do about it.
enum class RunnerErrorKind {
  Load,             // the file does not open or validate (message carries the reader's error class)
  UnsupportedNode,  // a node kind, argument kind or higher-order op this runner does not execute
  UnknownOperator,  // an operator that no loaded library registers with the dispatcher
  Input,            // wrong number, kind, dtype or shape of inputs
  Guard,            // an input guard or range constraint of the program fails
  Execution,        // an operator failed while running
  Library,          // --library: the shared object does not load
};

/// Name of a kind as the messages spell it ("UnknownOperator", ...).
const char *runner_error_kind_name(RunnerErrorKind kind);

/// Every failure of the runner: a kind and a one-line message saying what and where.
class RunnerError : public std::runtime_error {
 public:
  RunnerError(RunnerErrorKind kind, const std::string &message);
  RunnerErrorKind kind() const { return kind_; }

 private:
  RunnerErrorKind kind_;
};

/// Options of Runner.
struct RunnerOptions {
  /// Program to run; "" means the file's only program, or "forward".
  std::string program;
  /// Verify every data checksum at load (as pt2format.validate does).
  bool verify_data = false;
};

/// dlopen a shared library that registers operators (a user's TORCH_LIBRARY), before loading a program that
/// uses them. Throws RunnerError(Library).
void load_library(const std::string &path);

/// One kind of flat user input, as the signature declares it.
struct InputSlot {
  enum class Kind { Tensor, Int, Float, Bool, Constant };
  Kind kind = Kind::Tensor;
  std::string name;  // the placeholder's name
};

/// A loaded program, ready to run.
class Runner {
 public:
  explicit Runner(const std::string &path, const RunnerOptions &options = {});
  ~Runner();
  Runner(Runner &&) noexcept;
  Runner &operator=(Runner &&) noexcept;

  /// Run on the flat user inputs (tensors; ints, floats and bools as scalars); returns the flat user outputs.
  /// Throws RunnerError (Input, Guard, Execution).
  std::vector<c10::IValue> run(const std::vector<c10::IValue> &inputs) const;

  /// The user inputs run() expects, in order.
  const std::vector<InputSlot> &inputs() const;
  /// Name of the program being run.
  const std::string &program_name() const;
  /// The program's parameters, buffers and tensor constants by name (the live tensors: a mutated buffer
  /// shows its current value).
  std::vector<std::pair<std::string, at::Tensor>> state() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pt2format
