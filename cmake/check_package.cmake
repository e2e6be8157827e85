# The package as users consume it (ctest entry `package`): installs the build tree BUILD_DIR to a prefix under WORK_DIR,
# moves that prefix (the installed package must be relocatable), checks that the exported targets carry no absolute
# path of this machine, then configures, builds and runs examples/consumer against the moved prefix. The consumer is
# configured with CMAKE_CXX_STANDARD 17: gemmtune::gemmtune's cxx_std_20 compile feature must raise it to C++20.
# Inputs: SOURCE_DIR, BUILD_DIR, WORK_DIR, GENERATOR, CXX_COMPILER, CUDA_ROOT (may be empty).
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGV}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/installed)
file(RENAME ${WORK_DIR}/installed ${WORK_DIR}/moved)
set(prefix ${WORK_DIR}/moved)

file(GLOB_RECURSE exported ${prefix}/*.cmake)
foreach(f IN LISTS exported)
  file(READ ${f} text)
  foreach(path IN ITEMS "${WORK_DIR}" "${BUILD_DIR}" "${SOURCE_DIR}" "${CUDA_ROOT}" "/usr/local/cuda")
    string(FIND "${text}" "${path}" at)
    if(path AND at GREATER -1)
      message(FATAL_ERROR "${f} names the absolute path ${path}: the installed package is not relocatable")
    endif()
  endforeach()
endforeach()

set(cuda_arg)
if(CUDA_ROOT)
  set(cuda_arg -DCUDAToolkit_ROOT=${CUDA_ROOT})
endif()
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/consumer -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_STANDARD=17 ${cuda_arg})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/consumer)
# --list: enumerate and rank only, so this CPU test never tunes on a GPU host.
run(${WORK_DIR}/consumer/consumer --list)
