# embed.cmake — turn a file into a C source defining a byte array, so the
# flame graph template (flame.html) ships inside the hotspur binary.
#   cmake -DIN=flame.html -DOUT=flame_html.c -DNAME=hs_flame_html -P embed.cmake
# defines: const unsigned char NAME[]; const size_t NAME_len; (NUL-terminated)
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}.tmp"
  "/* generated from ${IN} by embed.cmake; do not edit */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
