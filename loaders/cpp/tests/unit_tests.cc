// Unit tests of the C++ reader's pure parts: CRC-32, dump spellings, the
// schema cross-check and symbolic evaluation (expected values are Python's,
// written out by hand). Run by tests/native/test_cpp_reader.py.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "pt2f/json_text.h"
#include "pt2f/pt2f.h"
#include "pt2f/schema.h"

namespace {

int g_checks = 0, g_failures = 0;

#define CHECK(cond)                                                              \
  do {                                                                           \
    ++g_checks;                                                                  \
    if (!(cond)) {                                                               \
      ++g_failures;                                                              \
      std::printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
    }                                                                            \
  } while (0)

#define CHECK_EQ(a, b)                                                           \
  do {                                                                           \
    ++g_checks;                                                                  \
    auto _a = (a);                                                               \
    auto _b = (b);                                                               \
    if (!(_a == _b)) {                                                           \
      ++g_failures;                                                              \
      std::printf("FAIL %s:%d: %s != %s\n", __FILE__, __LINE__, #a, #b);         \
    }                                                                            \
  } while (0)

// The error message of `f`, or "" when it does not throw a pt2f::Error.
std::string error_of(const std::function<void()> &f) {
  try {
    f();
  } catch (const pt2f::Error &e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string &s, const std::string &part) { return s.find(part) != std::string::npos; }

// Bit-at-a-time CRC-32, the textbook definition, to check the sliced one.
uint32_t crc32_reference(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
  }
  return ~c;
}

void test_crc32() {
  const char *check = "123456789";
  CHECK_EQ(pt2f::crc32(reinterpret_cast<const uint8_t *>(check), 9), 0xCBF43926u);  // the CRC catalogue's check value
  CHECK_EQ(pt2f::crc32(nullptr, 0), 0u);
  CHECK_EQ(pt2f::crc32(reinterpret_cast<const uint8_t *>("a"), 1), 0xE8B7BE43u);
  std::vector<uint8_t> buf(1000);
  uint32_t x = 12345;
  for (auto &b : buf) b = uint8_t((x = x * 1103515245u + 12345u) >> 16);
  for (size_t n : {0, 1, 7, 8, 9, 63, 64, 65, 999, 1000}) {
    CHECK_EQ(pt2f::crc32(buf.data(), n), crc32_reference(buf.data(), n));
    for (size_t split : {size_t(0), n / 3, n})
      CHECK_EQ(pt2f::crc32_update(pt2f::crc32(buf.data(), split), buf.data() + split, n - split),
               crc32_reference(buf.data(), n));
  }
}

std::string js(const std::string &s, bool *ok = nullptr) {
  std::string out;
  bool r = pt2f::append_json_string(out, s.data(), s.size());
  if (ok) *ok = r;
  return out;
}

void test_json_text() {
  // Expected spellings are json.dumps(s, ensure_ascii=False).
  CHECK_EQ(js("abc"), std::string("\"abc\""));
  CHECK_EQ(js("a\"b\\c"), std::string("\"a\\\"b\\\\c\""));
  CHECK_EQ(js("\b\f\n\r\t"), std::string("\"\\b\\f\\n\\r\\t\""));
  CHECK_EQ(js(std::string("\x00\x01\x1f\x7f", 4)), std::string("\"\\u0000\\u0001\\u001f\x7f\""));
  CHECK_EQ(js("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), std::string("\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""));
  CHECK_EQ(js("\xe2\x80\xa8"), std::string("\"\xe2\x80\xa8\""));  // U+2028 stays raw
  for (const char *bad : {"\xff", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xc3", "\xe2\x82",
                          "\x80", "\xf8\x88\x80\x80\x80"}) {
    bool ok = true;
    std::string out = js(bad, &ok);
    CHECK(!ok);
    CHECK(out.empty());
  }
  std::string out;
  pt2f::append_float_json(out, 1.0);
  CHECK_EQ(out, std::string("\"0x3ff0000000000000\""));
  out.clear();
  pt2f::append_float_json(out, -0.0);
  CHECK_EQ(out, std::string("\"0x8000000000000000\""));
  out.clear();
  pt2f::append_float_json(out, double(0.1f));  // float32 widened
  CHECK_EQ(out, std::string("\"0x3fb99999a0000000\""));
  out.clear();
  pt2f::append_int(out, std::numeric_limits<int64_t>::min());
  out += ',';
  pt2f::append_uint(out, std::numeric_limits<uint64_t>::max());
  CHECK_EQ(out, std::string("-9223372036854775808,18446744073709551615"));
}

void test_schema() {
  CHECK_EQ(error_of([] { pt2f::check_schema_matches_generated(); }), std::string());
  CHECK_EQ(pt2f::binary_schema().root_table()->name()->str(), std::string("pt2format.Package"));
}

using pt2f::SymValue;
using Op = pt2format::SymOp;

SymValue I(int64_t v) { return SymValue::integer(v); }
SymValue R(int64_t n, int64_t d) { return SymValue::rational(n, d); }
SymValue F(double v) { return SymValue::real(v); }
SymValue B(bool v) { return SymValue::boolean(v); }

SymValue ap(Op op, std::vector<SymValue> args) { return pt2f::apply_sym_op(op, args); }
std::string ap_err(Op op, std::vector<SymValue> args) {
  return error_of([&] { pt2f::apply_sym_op(op, args); });
}

void test_sym_ops() {
  // Python floor division and modulus.
  CHECK_EQ(ap(Op::FLOOR_DIV, {I(7), I(2)}), I(3));
  CHECK_EQ(ap(Op::FLOOR_DIV, {I(-7), I(2)}), I(-4));
  CHECK_EQ(ap(Op::FLOOR_DIV, {I(7), I(-2)}), I(-4));
  CHECK_EQ(ap(Op::FLOOR_DIV, {I(-7), I(-2)}), I(3));
  CHECK_EQ(ap(Op::PYTHON_MOD, {I(-7), I(2)}), I(1));
  CHECK_EQ(ap(Op::PYTHON_MOD, {I(7), I(-2)}), I(-1));
  CHECK_EQ(ap(Op::PYTHON_MOD, {I(-7), I(-2)}), I(-1));
  CHECK_EQ(ap(Op::MOD, {I(10), I(3)}), I(1));
  CHECK_EQ(ap(Op::CLEAN_DIV, {I(12), I(4)}), I(3));
  CHECK_EQ(ap(Op::FLOOR_DIV, {F(-7.5), F(2.0)}), F(-4.0));   // -7.5 // 2.0
  CHECK_EQ(ap(Op::PYTHON_MOD, {F(-7.5), F(2.0)}), F(0.5));   // -7.5 % 2.0
  CHECK_EQ(ap(Op::FLOOR_DIV, {R(7, 2), I(1)}), I(3));
  CHECK(contains(ap_err(Op::FLOOR_DIV, {I(1), I(0)}), "division by zero"));
  CHECK(contains(ap_err(Op::PYTHON_MOD, {I(1), I(0)}), "division by zero"));
  CHECK(contains(ap_err(Op::FLOOR_DIV, {I(INT64_MIN), I(-1)}), "overflow"));
  // Sums and products, exact with rationals.
  CHECK_EQ(ap(Op::ADD, {I(1), I(2), I(3)}), I(6));
  CHECK_EQ(ap(Op::ADD, {R(1, 2), R(1, 3)}), R(5, 6));
  CHECK_EQ(ap(Op::MUL, {R(1, 2), I(4)}), I(2));
  CHECK_EQ(ap(Op::ADD, {I(1), F(0.5)}), F(1.5));
  CHECK(contains(ap_err(Op::ADD, {I(INT64_MAX), I(1)}), "overflow"));
  CHECK(contains(ap_err(Op::MUL, {I(INT64_MAX), I(2)}), "overflow"));
  CHECK(contains(ap_err(Op::ADD, {I(1), B(true)}), "boolean"));
  // Powers.
  CHECK_EQ(ap(Op::POW, {I(2), I(10)}), I(1024));
  CHECK_EQ(ap(Op::POW, {I(2), I(-2)}), R(1, 4));
  CHECK_EQ(ap(Op::POW, {I(0), I(0)}), I(1));
  CHECK_EQ(ap(Op::POW, {I(4), R(1, 2)}), I(2));
  CHECK_EQ(ap(Op::POW, {I(27), R(2, 3)}), I(9));
  CHECK_EQ(ap(Op::POW, {R(2, 3), I(2)}), R(4, 9));
  CHECK_EQ(ap(Op::POW, {I(2), R(1, 2)}), F(std::sqrt(2.0)));
  CHECK(contains(ap_err(Op::POW, {I(0), I(-1)}), "negative power"));
  CHECK(contains(ap_err(Op::POW, {I(3), I(64)}), "overflow"));
  CHECK_EQ(ap(Op::POW_BY_NATURAL, {I(-3), I(3)}), I(-27));
  CHECK(contains(ap_err(Op::POW_BY_NATURAL, {I(2), I(-1)}), "negative exponent"));
  CHECK_EQ(ap(Op::FLOAT_POW, {F(2.0), F(0.5)}), F(std::sqrt(2.0)));
  CHECK(contains(ap_err(Op::FLOAT_POW, {F(-8.0), R(1, 3)}), "fractional"));
  // Min, max, comparisons (Python compares int and float exactly).
  CHECK_EQ(ap(Op::MIN, {I(3), I(-1), I(2)}), I(-1));
  CHECK_EQ(ap(Op::MAX, {I(3), F(std::numeric_limits<double>::infinity())}),
           F(std::numeric_limits<double>::infinity()));
  CHECK_EQ(ap(Op::MIN, {I(3), F(std::numeric_limits<double>::infinity())}), I(3));
  CHECK_EQ(ap(Op::GT, {I(9007199254740993), F(9007199254740992.0)}), B(true));   // 2**53+1 > 2.0**53
  CHECK_EQ(ap(Op::EQ, {I(9007199254740993), F(9007199254740992.0)}), B(false));
  CHECK_EQ(ap(Op::EQ, {R(1, 2), F(0.5)}), B(true));
  CHECK_EQ(ap(Op::LT, {R(1, 3), F(0.3333333333333333)}), B(false));  // 1/3 > 0.333...3 (binary)
  CHECK_EQ(ap(Op::LE, {I(2), I(2)}), B(true));
  CHECK_EQ(ap(Op::NE, {F(NAN), F(NAN)}), B(true));
  CHECK_EQ(ap(Op::EQ, {B(true), I(1)}), B(true));
  CHECK_EQ(ap(Op::GE, {I(-1), F(-1.5)}), B(true));
  // Logic.
  CHECK_EQ(ap(Op::AND, {B(true), B(false)}), B(false));
  CHECK_EQ(ap(Op::OR, {B(false), B(true)}), B(true));
  CHECK_EQ(ap(Op::NOT, {B(false)}), B(true));
  CHECK(contains(ap_err(Op::AND, {B(true), I(1)}), "boolean operand expected"));
  // Divisions to float and rounding (Python's round is half to even).
  CHECK_EQ(ap(Op::INT_TRUE_DIV, {I(7), I(2)}), F(3.5));
  // Correctly rounded beyond 2^53, as Python: (2**62 + 1) / 3 == 1.5372286728091292e+18.
  CHECK_EQ(ap(Op::INT_TRUE_DIV, {I((int64_t(1) << 62) + 1), I(3)}), F(1.5372286728091292e+18));
  CHECK_EQ(ap(Op::INT_TRUE_DIV, {I(INT64_MAX), I(-7)}), F(-1.3176245766935393e+18));
  CHECK(contains(ap_err(Op::INT_TRUE_DIV, {I(7), I(0)}), "division by zero"));
  CHECK_EQ(ap(Op::FLOAT_TRUE_DIV, {F(1.0), F(4.0)}), F(0.25));
  CHECK_EQ(ap(Op::TRUNC_TO_INT, {F(-2.7)}), I(-2));
  CHECK_EQ(ap(Op::FLOOR_TO_INT, {F(-2.5)}), I(-3));
  CHECK_EQ(ap(Op::CEIL_TO_INT, {F(-2.5)}), I(-2));
  CHECK_EQ(ap(Op::ROUND_TO_INT, {F(2.5)}), I(2));
  CHECK_EQ(ap(Op::ROUND_TO_INT, {F(3.5)}), I(4));
  CHECK_EQ(ap(Op::ROUND_TO_INT, {F(-2.5)}), I(-2));
  CHECK_EQ(ap(Op::ROUND_TO_INT, {R(5, 2)}), I(2));
  CHECK_EQ(ap(Op::ROUND_TO_INT, {R(-7, 2)}), I(-4));
  CHECK(contains(ap_err(Op::TRUNC_TO_INT, {F(NAN)}), "NaN"));
  CHECK(contains(ap_err(Op::FLOOR_TO_INT, {F(1e300)}), "overflow"));
  CHECK_EQ(ap(Op::TRUNC_TO_FLOAT, {F(-2.7)}), F(-2.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(2.675), I(2)}), F(2.67));    // round(2.675, 2)
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(0.125), I(2)}), F(0.12));    // exact tie -> even
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(1234.5), I(-1)}), F(1230.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(1250.0), I(-2)}), F(1200.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(51.0), I(-2)}), F(100.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {F(50.0), I(-2)}), F(0.0));
  // torch's RoundDecimal is round(float(x), n): a float even for an integer.
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {I(1250), I(-2)}), F(1200.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {I(1350), I(-2)}), F(1400.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {I(-1350), I(-2)}), F(-1400.0));
  CHECK_EQ(ap(Op::ROUND_DECIMAL, {I(17), I(3)}), F(17.0));
  CHECK_EQ(ap(Op::TO_FLOAT, {I(3)}), F(3.0));
  CHECK_EQ(ap(Op::IDENTITY, {R(1, 2)}), R(1, 2));
  CHECK_EQ(ap(Op::ABS, {I(-5)}), I(5));
  CHECK_EQ(ap(Op::ABS, {R(-1, 2)}), R(1, 2));
  CHECK(contains(ap_err(Op::ABS, {I(INT64_MIN)}), "overflow"));
  CHECK_EQ(ap(Op::FLOOR, {R(-1, 2)}), I(-1));
  CHECK_EQ(ap(Op::CEILING, {R(-1, 2)}), I(0));
  CHECK_EQ(ap(Op::CEILING, {F(2.1)}), I(3));
  // Bits and logs.
  CHECK_EQ(ap(Op::BITWISE_AND, {I(12), I(10)}), I(8));
  CHECK_EQ(ap(Op::BITWISE_OR, {I(12), I(10)}), I(14));
  CHECK_EQ(ap(Op::BITWISE_XOR, {I(12), I(10)}), I(6));
  CHECK_EQ(ap(Op::BITWISE_AND, {I(-1), I(5)}), I(5));
  CHECK_EQ(ap(Op::BITWISE_OR, {B(true), B(false)}), B(true));
  // LOG2 is torch's float OpaqueUnaryFn_log2, never an integer floor.
  CHECK_EQ(ap(Op::LOG2, {I(1)}), F(0.0));
  CHECK_EQ(ap(Op::LOG2, {I(1024)}), F(10.0));
  CHECK_EQ(ap(Op::LOG2, {I(1023)}), F(std::log2(1023.0)));
  CHECK(contains(ap_err(Op::LOG2, {I(0)}), "domain"));
  CHECK_EQ(ap(Op::SQRT, {I(16)}), F(4.0));
  CHECK_EQ(ap(Op::EXP, {I(0)}), F(1.0));
  CHECK_EQ(ap(Op::LOG, {F(1.0)}), F(0.0));
  CHECK(contains(ap_err(Op::LOG, {I(0)}), "domain"));
  CHECK(contains(ap_err(Op::SQRT, {I(-1)}), "domain"));
  CHECK_EQ(ap(Op::EXP, {F(1000.0)}), F(std::numeric_limits<double>::infinity()));  // sympy's overflow, as torch
  CHECK(contains(ap_err(Op::ASIN, {F(2.0)}), "domain"));
  CHECK_EQ(ap(Op::WHERE, {B(false), I(1), I(2)}), I(2));
  CHECK_EQ(ap(Op::MODULAR_INDEXING, {I(-7), I(2), I(3)}), I(2));  // (-7 // 2) % 3
  CHECK_EQ(ap(Op::IS_NON_OVERLAPPING_AND_DENSE, {I(2), I(3), I(1), I(2)}), I(1));
  CHECK_EQ(ap(Op::IS_NON_OVERLAPPING_AND_DENSE, {I(2), I(3), I(3), I(2)}), I(0));
  CHECK(contains(ap_err(Op::POW_BY_NATURAL, {I(int64_t(1) << 40), I(50)}), "overflow"));
  // Piecewise and divisibility.
  CHECK_EQ(ap(Op::PIECEWISE, {I(1), B(false), I(2), B(true), I(3), B(true)}), I(2));
  CHECK(contains(ap_err(Op::PIECEWISE, {I(1), B(false)}), "no condition holds"));
  CHECK(contains(ap_err(Op::PIECEWISE, {I(1)}), "pairs"));
  CHECK(contains(ap_err(Op::IS_MULTIPLE, {I(12), I(4)}), "reserved"));
  // Arity and unknown operations.
  CHECK(contains(ap_err(Op::FLOOR_DIV, {I(1)}), "wrong number of arguments"));
  CHECK(contains(ap_err(Op::UNSPECIFIED, {I(1)}), "unknown"));
  CHECK(contains(ap_err(Op(250), {I(1)}), "unknown"));
  // Spellings.
  CHECK_EQ(R(-1, 2).to_string(), std::string("-1/2"));
  CHECK_EQ(F(0.1).to_string(), std::string("0.1"));
  CHECK_EQ(B(true).to_string(), std::string("True"));
  CHECK_EQ(R(6, -3), I(-2));
}

// A program whose sym_exprs pool is built by `fill`, for evaluator tests.
struct PoolBuilder {
  flatbuffers::FlatBufferBuilder fbb;
  std::vector<flatbuffers::Offset<pt2format::SymExpr>> exprs;
  std::vector<flatbuffers::Offset<pt2format::Symbol>> symbols;

  uint32_t add(pt2format::SymExprKind kind, int64_t iv = 0, std::vector<uint32_t> args = {},
               pt2format::SymOp op = pt2format::SymOp::UNSPECIFIED, uint32_t symbol = 0, int64_t den = 1) {
    auto a = args.empty() ? 0 : fbb.CreateVector(args);
    exprs.push_back(pt2format::CreateSymExpr(fbb, kind, symbol, iv, den, 0.0, false, op, a));
    return uint32_t(exprs.size() - 1);
  }
  uint32_t integer(int64_t v) { return add(pt2format::SymExprKind::INTEGER, v); }
  uint32_t apply(pt2format::SymOp op, std::vector<uint32_t> args) {
    return add(pt2format::SymExprKind::APPLY, 0, std::move(args), op);
  }
  uint32_t symbol_ref(uint32_t s) { return add(pt2format::SymExprKind::SYMBOL, 0, {}, pt2format::SymOp::UNSPECIFIED, s); }
  void symbol(const char *name, int64_t hint, bool has_hint) {
    symbols.push_back(pt2format::CreateSymbol(fbb, fbb.CreateString(name), pt2format::SymbolKind::INT, 0, hint, has_hint));
  }
  const pt2format::Program *finish() {
    auto p = pt2format::CreateProgram(fbb, 0, 0, 0, 0, fbb.CreateVector(symbols), fbb.CreateVector(exprs));
    fbb.Finish(p);
    return flatbuffers::GetRoot<pt2format::Program>(fbb.GetBufferPointer());
  }
};

void test_evaluator() {
  using K = pt2format::SymExprKind;
  {
    // s0 // 2 + s1 * 3, with s0 = -7, s1 = 5  ->  -4 + 15 = 11
    PoolBuilder b;
    b.symbol("s0", 8, true);
    b.symbol("s1", 0, false);
    uint32_t s0 = b.symbol_ref(0), two = b.integer(2), s1 = b.symbol_ref(1), three = b.integer(3);
    uint32_t fd = b.apply(Op::FLOOR_DIV, {s0, two});
    uint32_t mul = b.apply(Op::MUL, {s1, three});
    uint32_t sum = b.apply(Op::ADD, {fd, mul});
    const auto *prog = b.finish();
    pt2f::SymEvaluator ev(prog);
    CHECK(contains(error_of([&] { ev.evaluate(sum); }), "symbol 's0' has no value"));
    ev.set("s0", I(-7));
    ev.set("s1", I(5));
    CHECK_EQ(ev.evaluate(sum), I(11));
    ev.set(1u, I(-1));
    CHECK_EQ(ev.evaluate(sum), I(-7));
    pt2f::SymEvaluator hints(prog);
    hints.bind_hints();
    CHECK_EQ(hints.evaluate(fd), I(4));
    CHECK(contains(error_of([&] { hints.evaluate(sum); }), "symbol 's1' has no value"));
    CHECK(contains(error_of([&] { ev.evaluate(99); }), "out of range"));
    CHECK(contains(error_of([&] { ev.set("nope", I(1)); }), "no symbol named"));
    pt2format::SymInt concrete(-1, 42), symbolic(int32_t(sum), 0);
    CHECK_EQ(ev.evaluate(concrete), int64_t(42));
    CHECK_EQ(ev.evaluate(symbolic), int64_t(-7));
  }
  {
    // Piecewise is lazy: the branch not taken may divide by zero.
    PoolBuilder b;
    uint32_t one = b.integer(1), zero = b.integer(0);
    uint32_t bad = b.apply(Op::FLOOR_DIV, {one, zero});
    uint32_t t = b.add(K::BOOLEAN, 0);  // bool_value false
    uint32_t lt = b.apply(Op::LT, {zero, one});  // true
    uint32_t pw = b.apply(Op::PIECEWISE, {bad, t, one, lt});
    uint32_t pw_bad = b.apply(Op::PIECEWISE, {bad, lt});
    uint32_t uses_bad = b.apply(Op::ADD, {bad, one});
    const auto *prog = b.finish();
    pt2f::SymEvaluator ev(prog);
    CHECK_EQ(ev.evaluate(pw), I(1));
    const std::string e1 = error_of([&] { ev.evaluate(pw_bad); });
    CHECK(contains(e1, "sym_exprs[2]: FLOOR_DIV: division by zero"));
    CHECK(contains(error_of([&] { ev.evaluate(uses_bad); }), "sym_exprs[2]"));
  }
  {
    // Invalid pools: forward references, bad kinds, bad rationals, missing symbols.
    PoolBuilder b;
    uint32_t fwd = b.apply(Op::ADD, {0, 1});        // refers to itself and a later node
    uint32_t unspecified = b.add(K::UNSPECIFIED);
    uint32_t rat = b.add(K::RATIONAL, 1, {}, Op::UNSPECIFIED, 0, 0);
    uint32_t sym = b.symbol_ref(5);
    uint32_t rat_ok = b.add(K::RATIONAL, 3, {}, Op::UNSPECIFIED, 0, 6);
    uint32_t inf = b.add(K::POSITIVE_INFINITY);
    uint32_t ninf = b.add(K::NEGATIVE_INFINITY);
    uint32_t mn = b.apply(Op::MIN, {inf, ninf});
    const auto *prog = b.finish();
    pt2f::SymEvaluator ev(prog);
    CHECK(contains(error_of([&] { ev.evaluate(fwd); }), "not an earlier one"));
    CHECK(contains(error_of([&] { ev.evaluate(unspecified); }), "unspecified"));
    CHECK(contains(error_of([&] { ev.evaluate(rat); }), "denominator"));
    CHECK(contains(error_of([&] { ev.evaluate(sym); }), "out of range"));
    CHECK_EQ(ev.evaluate(rat_ok), R(1, 2));
    CHECK_EQ(ev.evaluate(mn), F(-std::numeric_limits<double>::infinity()));
  }
  {
    // The deepest chain the expanded-size bound allows (2047 ADDs: 4095 nodes of tree) evaluates;
    // a 200,000-node one is refused when the evaluator is made, before anything walks it.
    PoolBuilder b;
    uint32_t prev = b.integer(0), one = b.integer(1);
    for (int i = 0; i < 2047; ++i) prev = b.apply(Op::ADD, {prev, one});
    const auto *prog = b.finish();
    pt2f::SymEvaluator ev(prog);
    CHECK_EQ(ev.evaluate(prev), I(2047));
    PoolBuilder deep;
    prev = deep.integer(0), one = deep.integer(1);
    for (int i = 0; i < 200000; ++i) prev = deep.apply(Op::ADD, {prev, one});
    const auto *deep_prog = deep.finish();
    CHECK(contains(error_of([&] { pt2f::SymEvaluator refused(deep_prog); }), "expanded size is too large"));
  }
  {
    // Max(e, e) 40 deep: 41 nodes of pool, 2^41 - 1 of tree; the size saturates, the node is named.
    PoolBuilder b;
    uint32_t e = b.integer(3);
    for (int i = 0; i < 40; ++i) e = b.apply(Op::MAX, {e, e});
    const auto *prog = b.finish();
    CHECK(contains(error_of([&] { pt2f::SymEvaluator refused(prog); }), "sym_exprs[12]: symbolic expression expanded size"));
  }
}

}  // namespace

int main() {
  test_crc32();
  test_json_text();
  test_schema();
  test_sym_ops();
  test_evaluator();
  std::printf("%d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
