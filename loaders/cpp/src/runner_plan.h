// runner_plan.h: the compiled form of a graph that the runner interprets (private to runner*.cc).
//
// A graph becomes a list of steps over a table of value slots: every name of
// the graph (placeholder, node output) gets one slot index at load, every
// argument a plan that reads slots or holds a constant already converted to
// the type the operator's schema declares. Running a graph is then a loop
// over steps with no string lookups.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/ivalue.h>

#include "pt2f/reader.h"
#include "pt2f/runner.h"
#include "pt2f/symexpr.h"

namespace pt2format {
namespace detail {

/// How to build one argument value at run time.
struct ArgPlan {
  enum Op : uint8_t {
    kConst,          // `constant`
    kSlot,           // env[slot]
    kTensorList,     // c10::List<Tensor> of env[slots[i]]
    kOptTensorList,  // c10::List<optional<Tensor>>; slots[i] < 0 is None
    kIntList,        // c10::List<int64_t>: env[slots[i]] or consts[i] when slots[i] < 0
    kDoubleList,     // same, doubles
    kBoolList,       // same, bools
    kMixed,          // a tuple of `items` (higher-order operators' operand lists)
    kGraph,          // subgraph `graph` (higher-order operators only)
  };
  Op op = kConst;
  bool wrap_scalar = false;  // a Tensor parameter given a number: a 0-dim "wrapped number" tensor, as Python passes it
  c10::IValue constant;
  int slot = -1;
  std::vector<int> slots;
  std::vector<c10::IValue> consts;
  std::vector<ArgPlan> items;
  int graph = -1;
};

/// Where one returned value goes.
struct OutBind {
  enum Op : uint8_t { kIgnore, kSlot, kList };  // kList: a returned list spread over `slots` (-1: unused)
  Op op = kIgnore;
  int slot = -1;
  std::vector<int> slots;
};

enum class Builtin : uint8_t {
  Getitem, Add, Sub, Mul, TrueDiv, FloorDiv, Mod, Pow, Neg, Pos, Abs, Eq, Ne, Lt, Le, Gt, Ge, And, Or, Not,
  SymMax, SymMin, SymNot, SymInt, SymFloat, SymIte, SymSum, Floor, Ceil, Trunc, Sqrt, SetGradEnabled,
};

enum class Hop : uint8_t { Cond, WhileLoop, Map, Scan, InvokeSubgraph, SetGradEnabled, Autocast };

/// One node.
struct Step {
  enum Kind : uint8_t { kOp, kBuiltin, kHop } kind = kOp;
  std::optional<c10::OperatorHandle> op;
  Builtin builtin = Builtin::Getitem;
  Hop hop = Hop::Cond;
  std::vector<ArgPlan> args;
  std::vector<OutBind> outs;
  size_t num_returns = 0;
  std::string where;  // "graph.nodes[12] (name, target)" for messages
};

/// A compiled graph (the root graph or a subgraph).
struct Plan {
  int num_slots = 0;
  std::vector<int> inputs;      // slot of each placeholder
  std::vector<ArgPlan> outputs;  // each graph output
  std::vector<Step> steps;
  std::vector<std::vector<int>> frees;  // per step: slots no later step reads (released after it)
  std::string path;              // "graph" or "graph.nodes[3].inputs[1].graph" for messages
};

/// What a flat user input is checked against.
struct InputCheck {
  InputSlot slot;
  int placeholder = -1;  // index into graph inputs
  // Tensors:
  at::ScalarType dtype = at::ScalarType::Undefined;
  std::vector<const pt2format::SymInt *> sizes;  // from the placeholder's TensorMeta
  // Constants:
  c10::IValue constant;
};

/// A mutation written back after a run.
struct Mutation {
  int output = -1;        // index into the root graph's outputs
  int state = -1;         // index into Program::state tensors (buffer), or -1
  int user_input = -1;    // index into the flat user inputs, or -1
  std::string name;
};

/// Everything run() needs.
struct Program {
  std::shared_ptr<pt2f::File> file;
  const pt2format::Program *program = nullptr;
  std::vector<Plan> graphs;  // graphs[0] is the root
  std::vector<InputCheck> user_inputs;
  std::vector<InputSlot> input_slots;
  std::vector<std::pair<int, int>> state_inputs;  // (placeholder index, state tensor index)
  std::vector<std::pair<int, c10::IValue>> constant_inputs;  // (placeholder index, value)
  std::vector<std::string> state_names;
  std::vector<at::Tensor> state;
  std::vector<int> user_outputs;  // indices into root outputs
  std::vector<Mutation> mutations;
  bool mutates = false;
  mutable std::mutex run_mutex;    // held for a whole run of a mutating program
  mutable std::mutex guard_mutex;  // the evaluator memoises
  mutable std::unique_ptr<pt2f::SymEvaluator> evaluator;
};

/// Build the plans of `program` (the root graph and every subgraph). Throws RunnerError.
void compile_program(Program &p);
/// Interpret plan `index` on `inputs`; returns its outputs.
std::vector<c10::IValue> execute(const Program &p, int index, std::vector<c10::IValue> inputs);
/// c10 dtype of a schema ScalarType; Undefined for one libtorch has no equivalent of.
at::ScalarType to_aten_dtype(pt2format::ScalarType t);
/// A number as the 0-dim "wrapped number" tensor torch makes of a Python scalar passed for a Tensor parameter.
c10::IValue wrapped_number(const c10::IValue &v);

[[noreturn]] void fail(RunnerErrorKind kind, const std::string &message);

}  // namespace detail
}  // namespace pt2format
