# nanscope_embed_fatbin(<target> SOURCE <file.cu> SYMBOL <c_symbol> [INCLUDES dirs...] [HEADERS files...])
# Compiles a .cu file into a fatbin for CMAKE_CUDA_ARCHITECTURES and wraps it in a static
# library exposing `extern const unsigned char <SYMBOL>[]` and `<SYMBOL>_size`. The injected
# library loads it with cuModuleLoadData, so it never needs the CUDA runtime. HEADERS are the
# .cuh files SOURCE includes: a custom command sees no includes, so they must be named to
# rebuild the fatbin when one changes.
function(nanscope_embed_fatbin target)
  cmake_parse_arguments(ARG "" "SOURCE;SYMBOL" "INCLUDES;HEADERS" ${ARGN})
  set(gencode "")
  foreach(arch IN LISTS CMAKE_CUDA_ARCHITECTURES)
    string(REGEX MATCH "^[0-9]+[a-z]?" num "${arch}")
    if(arch MATCHES "-virtual$")
      list(APPEND gencode "-gencode=arch=compute_${num},code=compute_${num}")
    elseif(arch MATCHES "-real$")
      list(APPEND gencode "-gencode=arch=compute_${num},code=sm_${num}")
    else()
      list(APPEND gencode "-gencode=arch=compute_${num},code=[sm_${num},compute_${num}]")
    endif()
  endforeach()
  set(inc "")
  foreach(d IN LISTS ARG_INCLUDES)
    list(APPEND inc "-I${d}")
  endforeach()
  set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${target}.fatbin)
  set(csrc ${CMAKE_CURRENT_BINARY_DIR}/${target}_embed.c)
  add_custom_command(
    OUTPUT ${fatbin}
    COMMAND ${CMAKE_CUDA_COMPILER} --fatbin -std=c++17 -O3 ${gencode} ${inc} -o ${fatbin} ${ARG_SOURCE}
    DEPENDS ${ARG_SOURCE} ${ARG_HEADERS} ${CMAKE_SOURCE_DIR}/src/scan_abi.h
    COMMENT "nvcc --fatbin ${ARG_SOURCE}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${csrc}
    COMMAND ${CMAKE_COMMAND} -DIN=${fatbin} -DOUT=${csrc} -DSYMBOL=${ARG_SYMBOL}
            -P ${CMAKE_SOURCE_DIR}/cmake/NanscopeBin2C.cmake
    DEPENDS ${fatbin} ${CMAKE_SOURCE_DIR}/cmake/NanscopeBin2C.cmake
    VERBATIM)
  add_library(${target} STATIC ${csrc})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON C_VISIBILITY_PRESET hidden)
endfunction()
