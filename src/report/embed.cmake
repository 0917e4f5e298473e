# embed.cmake — turn files into C sources defining byte arrays, so the flame
# graph template and the web UI ship inside the hotspur binary.
#
# One file (flame.html), optionally with another file spliced in at a marker
# (the shared web/flamegraph.js):
#   cmake -DIN=flame.html -DOUT=flame_html.c -DNAME=hs_flame_html
#         [-DSPLICE_MARKER=/*@X@*/ -DSPLICE_FILE=web/flamegraph.js] -P embed.cmake
#   defines: const unsigned char NAME[]; const size_t NAME_len; (NUL-terminated)
#
# A directory (web/), every regular file in it:
#   cmake -DDIR=web -DOUT=web_assets.c -DNAME=hs_web_assets -P embed.cmake
#   defines: const hs_embedded_file NAME[] (path "/index.html", data, len;
#   sorted by path, ended by a {NULL, NULL, 0} entry), see assets.c.

# hs_embed_bytes(FILE VAR LEN): VAR = "0x..,0x..," lines of FILE, LEN = size
function(hs_embed_bytes file var lenvar)
  file(READ "${file}" hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
  set(${var} "${bytes}" PARENT_SCOPE)
  set(${lenvar} ${len} PARENT_SCOPE)
endfunction()

if(DEFINED DIR)
  file(GLOB files LIST_DIRECTORIES false RELATIVE "${DIR}" "${DIR}/*")
  list(SORT files)
  string(CONCAT body "/* generated from ${DIR} by embed.cmake; do not edit */\n#include <stddef.h>\n"
           "typedef struct { const char *path; const unsigned char *data; size_t len; } hs_embedded_file;\n")
  set(table "")
  set(k 0)
  foreach(f ${files})
    if(f MATCHES "^\\." OR f MATCHES "~$")
      continue()
    endif()
    hs_embed_bytes("${DIR}/${f}" bytes len)
    string(APPEND body "static const unsigned char ${NAME}_${k}[] = {\n${bytes}0x00};\n")
    string(APPEND table "    {\"/${f}\", ${NAME}_${k}, ${len}},\n")
    math(EXPR k "${k} + 1")
  endforeach()
  string(APPEND body "const hs_embedded_file ${NAME}[] = {\n${table}    {NULL, NULL, 0}};\n")
  file(WRITE "${OUT}.tmp" "${body}")
  file(RENAME "${OUT}.tmp" "${OUT}")
  return()
endif()

set(src "${IN}")
if(DEFINED SPLICE_MARKER)
  file(READ "${IN}" text)
  file(READ "${SPLICE_FILE}" part)
  string(FIND "${text}" "${SPLICE_MARKER}" at)
  if(at LESS 0)
    message(FATAL_ERROR "${IN} has no ${SPLICE_MARKER}")
  endif()
  string(REPLACE "${SPLICE_MARKER}" "${part}" text "${text}")
  set(src "${OUT}.spliced")
  file(WRITE "${src}" "${text}")
endif()
hs_embed_bytes("${src}" bytes len)
file(WRITE "${OUT}.tmp"
  "/* generated from ${IN} by embed.cmake; do not edit */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n${bytes}0x00};\n"
  "const size_t ${NAME}_len = ${len};\n")
file(RENAME "${OUT}.tmp" "${OUT}")
