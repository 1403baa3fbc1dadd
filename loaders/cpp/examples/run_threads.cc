// Concurrent runs of one loaded program (the Runner's promise: run() is const and thread-safe).
//
//   pt2f-run-threads MODEL.pt2f IN.pt2f THREADS RUNS
//
// Runs the program once alone, then THREADS threads each run it RUNS times on the same Runner and the
// same inputs, and compares every output bit for bit with the first. Prints "OK" or what differs (exit
// 1). For programs without state mutation: concurrent writes to one buffer are the caller's race.
#include <ATen/Parallel.h>

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "pt2f/runner.h"
#include "pt2f/runner_io.h"

int main(int argc, char **argv) try {
  if (argc != 5) {
    std::fprintf(stderr, "usage: pt2f-run-threads MODEL.pt2f IN.pt2f THREADS RUNS\n");
    return 2;
  }
  at::set_num_threads(1);
  const pt2format::Runner runner(argv[1]);
  std::vector<c10::IValue> inputs(runner.inputs().size());
  for (auto &named : pt2format::read_tensors(argv[2])) inputs.at(std::stoul(named.first)) = named.second;
  const auto want = runner.run(inputs);
  const int threads = std::stoi(argv[3]), runs = std::stoi(argv[4]);
  std::atomic<int> bad{0};
  std::vector<std::string> why(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      try {
        for (int r = 0; r < runs; ++r) {
          const auto got = runner.run(inputs);
          for (size_t i = 0; i < want.size(); ++i)
            if (want[i].isTensor() && !want[i].toTensor().equal(got.at(i).toTensor())) {
              why[size_t(t)] = "output " + std::to_string(i) + " differs in run " + std::to_string(r);
              ++bad;
              return;
            }
        }
      } catch (const std::exception &e) {
        why[size_t(t)] = e.what();
        ++bad;
      }
    });
  for (auto &th : pool) th.join();
  for (const auto &w : why)
    if (!w.empty()) std::printf("%s\n", w.c_str());
  if (bad) return 1;
  std::printf("OK\n");
  return 0;
} catch (const std::exception &e) {
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
