# Turn a .bfbs file into a C++ source with the bytes as an array.
# Usage: cmake -DIN=schema.bfbs -DOUT=schema_bfbs.cc -P embed_bfbs.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR size "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n  " body "${body}")
file(WRITE "${OUT}.tmp"
  "// @generated from schema/pt2format.fbs by loaders/cpp/cmake/embed_bfbs.cmake; do not edit\n"
  "alignas(8) extern const unsigned char pt2f_schema_bfbs[] = {\n  ${body}\n};\n"
  "extern const unsigned long pt2f_schema_bfbs_size = ${size}UL;\n")
file(RENAME "${OUT}.tmp" "${OUT}")
