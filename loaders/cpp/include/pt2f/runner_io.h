// pt2f/runner_io.h: the tensors pt2f-run reads and writes, as pt2format weight files.
//
// A weight file (pt2format.save_weights) is a .pt2f file with no program and
// one weight set; pt2f-run names its tensors by flat position, "0", "1", ...
// read_tensors() opens one with the C++ reader (every check of
// pt2format.validate) and returns owned copies, so a program may write its
// inputs. write_tensors() is a minimal writer of SPEC.md §1-5: a FlatBuffers
// program section holding one weight set "default" and one DATA section with
// each tensor's bytes, contiguous, at a multiple of 64; it writes a temporary
// file beside `path` and renames it over `path`, so a failure never leaves a
// partial file in place.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

namespace pt2format {

/// The tensors of the only weight set of weight file `path`, by name. Throws RunnerError(Load).
std::vector<std::pair<std::string, at::Tensor>> read_tensors(const std::string &path);

/// Write `tensors` (CPU, strided; written contiguous) as a weight file with one set named "default".
/// Throws RunnerError(Execution) when the file cannot be written.
void write_tensors(const std::string &path, const std::vector<std::pair<std::string, at::Tensor>> &tensors);

}  // namespace pt2format
