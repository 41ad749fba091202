# The wheel's layout (pyproject.toml, scikit-build-core sets SKBUILD): everything under the
# `nanscope` package, install component `wheel` only:
#   nanscope/lib/libnanscope.so                 one file (a wheel cannot hold the soname links)
#   nanscope/lib/libnanscope_torch_shim.so      when the build found a torch (see below)
#   nanscope/bin/nanscope                       the launcher, run by the `nanscope` console script
# The Python sources come from python/nanscope (wheel.packages), _version.py from the build.
#
# nanscope_wheel_find_torch(): before the shim's add_subdirectory. The shim is built for one
# torch (its headers and libc10_cuda.so): NANSCOPE_TORCH_INCLUDE when given, else the torch the
# build's Python imports (pip's build isolation hides it: `pip wheel --no-build-isolation`).
function(nanscope_wheel_find_torch)
  if(NOT SKBUILD OR NANSCOPE_TORCH_INCLUDE)
    return()
  endif()
  set(py "${Python_EXECUTABLE}")
  if(NOT py)
    set(py "${Python3_EXECUTABLE}")
  endif()
  if(py)
    execute_process(
      COMMAND "${py}" -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'include'))"
      RESULT_VARIABLE rc OUTPUT_VARIABLE include ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  endif()
  if(py AND rc EQUAL 0 AND EXISTS "${include}/c10/cuda/CUDACachingAllocator.h")
    message(STATUS "nanscope wheel: torch allocator shim for the torch at ${include}")
    set(NANSCOPE_TORCH_INCLUDE "${include}" CACHE PATH "torch/include of the PyTorch to build libnanscope_torch_shim.so for" FORCE)
  else()
    message(STATUS "nanscope wheel: no NANSCOPE_TORCH_INCLUDE and no torch importable by ${py}: the wheel "
                   "leaves out libnanscope_torch_shim.so (torch outputs get their driver allocation's extent)")
  endif()
endfunction()

function(nanscope_wheel_install)
  if(NOT SKBUILD)
    return()
  endif()
  install(FILES $<TARGET_FILE:nanscope> DESTINATION nanscope/lib RENAME libnanscope.so COMPONENT wheel)
  install(PROGRAMS $<TARGET_FILE:nanscope_cli> DESTINATION nanscope/bin COMPONENT wheel)
  if(TARGET nanscope_torch_shim)
    install(FILES $<TARGET_FILE:nanscope_torch_shim> DESTINATION nanscope/lib COMPONENT wheel)
  endif()
endfunction()
