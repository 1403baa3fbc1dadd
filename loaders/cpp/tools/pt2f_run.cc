// pt2f-run: run a program of a .pt2f file on libtorch, without Python.
//
//   pt2f-run MODEL.pt2f --inputs IN.pt2f --output OUT.pt2f [--program NAME] [--repeat N]
//            [--library LIB.so]... [--threads N] [--state STATE.pt2f]
//   pt2f-run --batch JOBS.tsv [--library LIB.so]... [--threads N]
//
// IN and OUT are weight files (pt2format.save_weights / pt2format.open) whose tensor names are the flat
// input and output positions "0", "1", ...; an int, float or bool input or output travels as a 0-dim
// int64, float64 or bool tensor; an output that is None has no tensor (its position is missing). --state
// writes the program's parameters and buffers after the runs (by their names). --repeat N runs N times
// on the same inputs (buffer mutations carry over) and prints the per-run latency on stderr.
// --batch runs one job per line, tab-separated: MODEL IN OUT [PROGRAM [REPEAT [STATE]]], in one process,
// and prints one line per job on stdout: "OK" or "ERROR <kind>: <message>".
//
// Exit status: 0 done; 1 the runner refused the file or the inputs (the message names the kind:
// LoadError, UnsupportedNode, UnknownOperator, InputError, GuardError, ExecutionError); 2 usage or I/O.
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "pt2f/runner.h"
#include "pt2f/runner_io.h"

namespace {

using pt2format::InputSlot;
using pt2format::RunnerError;
using pt2format::RunnerErrorKind;

struct Job {
  std::string model, inputs, output, program, state;
  long repeat = 1;
};

c10::IValue scalar_of(const at::Tensor &t, InputSlot::Kind kind, const c10::IValue &constant, size_t i) {
  auto need_scalar = [&]() {
    if (t.dim() != 0) throw RunnerError(RunnerErrorKind::Input, "input " + std::to_string(i) + ": expected a 0-dim tensor holding a scalar");
  };
  switch (kind) {
    case InputSlot::Kind::Tensor: return t;
    case InputSlot::Kind::Int: need_scalar(); return t.item<int64_t>();
    case InputSlot::Kind::Float: need_scalar(); return t.item<double>();
    case InputSlot::Kind::Bool: need_scalar(); return t.item<bool>();
    case InputSlot::Kind::Constant:
      need_scalar();
      if (t.scalar_type() == at::kBool) return t.item<bool>();
      if (at::isFloatingType(t.scalar_type())) return t.item<double>();
      return t.item<int64_t>();
  }
  return t;
}

at::Tensor tensor_of(const c10::IValue &v, size_t i) {
  if (v.isTensor()) return v.toTensor();
  at::Tensor t;
  if (v.isInt()) {
    int64_t x = v.toInt();
    t = at::detail::empty_cpu({}, at::kLong, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    *t.mutable_data_ptr<int64_t>() = x;
  } else if (v.isDouble()) {
    double x = v.toDouble();
    t = at::detail::empty_cpu({}, at::kDouble, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    *t.mutable_data_ptr<double>() = x;
  } else if (v.isBool()) {
    bool x = v.toBool();
    t = at::detail::empty_cpu({}, at::kBool, std::nullopt, std::nullopt, std::nullopt, std::nullopt);
    *t.mutable_data_ptr<bool>() = x;
  } else {
    throw RunnerError(RunnerErrorKind::Execution, "output " + std::to_string(i) + " is a " + v.tagKind() +
                                                      ", which a weight file cannot hold");
  }
  return t;
}

void run_job(const Job &job) {
  pt2format::RunnerOptions opts;
  opts.program = job.program;
  pt2format::Runner runner(job.model, opts);
  const auto &slots = runner.inputs();
  auto named = pt2format::read_tensors(job.inputs);
  std::vector<c10::IValue> inputs(slots.size());
  std::vector<bool> given(slots.size(), false);
  for (auto &nt : named) {
    char *end = nullptr;
    unsigned long i = std::strtoul(nt.first.c_str(), &end, 10);
    if (nt.first.empty() || *end || std::to_string(i) != nt.first || i >= slots.size())
      throw RunnerError(RunnerErrorKind::Input, job.inputs + ": tensor '" + nt.first + "' is not a position 0.." +
                                                    std::to_string(slots.size()) + " of the program's " +
                                                    std::to_string(slots.size()) + " user inputs");
    inputs[i] = scalar_of(nt.second, slots[i].kind, c10::IValue(), i);
    given[i] = true;
  }
  for (size_t i = 0; i < slots.size(); ++i)
    if (!given[i] && slots[i].kind != InputSlot::Kind::Constant)
      throw RunnerError(RunnerErrorKind::Input, job.inputs + ": no tensor '" + std::to_string(i) + "' for input " +
                                                    std::to_string(i) + " (" + slots[i].name + ")");
  std::vector<c10::IValue> outs;
  std::vector<double> ms;
  for (long r = 0; r < job.repeat; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    outs = runner.run(inputs);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  if (job.repeat > 1) {
    std::vector<double> sorted(ms);
    std::sort(sorted.begin(), sorted.end());
    double sum = 0;
    for (double x : ms) sum += x;
    std::fprintf(stderr, "pt2f-run: %ld runs: first %.3f ms, median %.3f ms, min %.3f ms, mean %.3f ms\n", job.repeat, ms[0],
                 sorted[sorted.size() / 2], sorted[0], sum / double(ms.size()));
  }
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (size_t i = 0; i < outs.size(); ++i)
    if (!outs[i].isNone()) out.emplace_back(std::to_string(i), tensor_of(outs[i], i));
  pt2format::write_tensors(job.output, out);
  if (!job.state.empty()) pt2format::write_tensors(job.state, runner.state());
}

int usage() {
  std::fprintf(stderr,
               "usage: pt2f-run MODEL.pt2f --inputs IN.pt2f --output OUT.pt2f [--program NAME] [--repeat N]\n"
               "                [--library LIB.so]... [--threads N] [--state STATE.pt2f]\n"
               "       pt2f-run --batch JOBS.tsv [--library LIB.so]... [--threads N]\n");
  return 2;
}

}  // namespace

int main(int argc, char **argv) {
  Job job;
  std::string batch;
  std::vector<std::string> libraries;
  long threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(a + " needs a value");
      return argv[++i];
    };
    try {
      if (a == "--inputs") job.inputs = value();
      else if (a == "--output") job.output = value();
      else if (a == "--program") job.program = value();
      else if (a == "--state") job.state = value();
      else if (a == "--repeat") job.repeat = std::stol(value());
      else if (a == "--threads") threads = std::stol(value());
      else if (a == "--library") libraries.push_back(value());
      else if (a == "--batch") batch = value();
      else if (a == "-h" || a == "--help") return usage();
      else if (!a.empty() && a[0] == '-') throw std::invalid_argument("unknown option " + a);
      else if (job.model.empty()) job.model = a;
      else throw std::invalid_argument("unexpected argument " + a);
    } catch (const std::exception &e) {
      std::fprintf(stderr, "pt2f-run: %s\n", e.what());
      return usage();
    }
  }
  if (batch.empty() && (job.model.empty() || job.inputs.empty() || job.output.empty() || job.repeat < 1)) return usage();
  if (threads > 0) at::set_num_threads(int(threads));
  try {
    for (const auto &lib : libraries) pt2format::load_library(lib);
  } catch (const RunnerError &e) {
    std::fprintf(stderr, "pt2f-run: %s\n", e.what());
    return 1;
  }
  if (batch.empty()) {
    try {
      run_job(job);
      return 0;
    } catch (const RunnerError &e) {
      std::fprintf(stderr, "pt2f-run: %s\n", e.what());
      return 1;
    } catch (const std::exception &e) {
      std::fprintf(stderr, "pt2f-run: ExecutionError: %s\n", e.what());
      return 1;
    }
  }
  std::ifstream in(batch);
  if (!in) {
    std::fprintf(stderr, "pt2f-run: cannot read %s\n", batch.c_str());
    return 2;
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) f.push_back(cell);
    Job j;
    if (f.size() < 3) {
      std::printf("ERROR usage: a job line needs MODEL IN OUT\n");
      continue;
    }
    j.model = f[0];
    j.inputs = f[1];
    j.output = f[2];
    if (f.size() > 3) j.program = f[3];
    if (f.size() > 4 && !f[4].empty()) j.repeat = std::stol(f[4]);
    if (f.size() > 5) j.state = f[5];
    try {
      run_job(j);
      std::printf("OK\n");
    } catch (const std::exception &e) {
      std::string msg = e.what();
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      std::printf("ERROR %s\n", msg.c_str());
    }
    std::fflush(stdout);
  }
  return 0;
}
