# cmake -DIN=file -DOUT=file.c -DSYMBOL=name -P NanscopeBin2C.cmake
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" len)
math(EXPR size "${len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
# 8-byte alignment: cuModuleLoadData wants an aligned image.
file(WRITE ${OUT} "/* generated from ${IN} */\n#include <stddef.h>\n"
  "__attribute__((aligned(8))) const unsigned char ${SYMBOL}[] = {${body}};\n"
  "const size_t ${SYMBOL}_size = ${size};\n")
