# The installed NVSHMEM the GPU tests (tests/gpu/nvshmem, tests/gpu/case_studies) and the examples
# (examples/nvshmem) build against: NVSHMEM_HOME, or the nvidia-nvshmem Python package. Sets
# SIGMATRACE_HAVE_NVSHMEM, or SIGMATRACE_NVSHMEM_MISSING to why not; sigmatrace_nvshmem_program()
# builds one program with it.
# Registers tests that say, when run, that they skipped and why (labelled gpu).
function(sigmatrace_gpu_tests_skip why)
  foreach(t IN LISTS ARGN)
    add_test(NAME ${t} COMMAND sh -c "echo 'skipped: ${why} when this tree was configured'; exit 77")
  endforeach()
  set_tests_properties(${ARGN} PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
endfunction()

set(SIGMATRACE_HAVE_NVSHMEM OFF)
set(NVSHMEM_HOME "" CACHE PATH "NVSHMEM's install (include/, lib/); empty: the nvidia-nvshmem Python package")
if(NOT SIGMATRACE_HAVE_CUDA)
  set(SIGMATRACE_NVSHMEM_MISSING "no CUDA toolkit")
  return()
endif()
if(NOT NVSHMEM_HOME)
  execute_process(COMMAND python3 -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])"
    OUTPUT_VARIABLE NVSHMEM_FOUND_HOME OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE nvshmem_py)
  if(nvshmem_py EQUAL 0)
    set(NVSHMEM_HOME ${NVSHMEM_FOUND_HOME})
  endif()
endif()
find_library(NVSHMEM_DEVICE_LIB NAMES libnvshmem_device.a PATHS ${NVSHMEM_HOME}/lib NO_DEFAULT_PATH)
find_file(NVSHMEM_HOST_LIB NAMES libnvshmem_host.so libnvshmem_host.so.3 PATHS ${NVSHMEM_HOME}/lib NO_DEFAULT_PATH)
if(NOT NVSHMEM_HOME OR NOT NVSHMEM_DEVICE_LIB OR NOT NVSHMEM_HOST_LIB OR NOT EXISTS ${NVSHMEM_HOME}/include/nvshmem.h)
  set(SIGMATRACE_NVSHMEM_MISSING "no NVSHMEM found (set NVSHMEM_HOME)")
  return()
endif()
set(SIGMATRACE_HAVE_NVSHMEM ON)
message(STATUS "sigmatrace: NVSHMEM in ${NVSHMEM_HOME}: its GPU tests and examples are built")

# One CUDA program of NVSHMEM (device library linked, relocatable device code), with the test
# bed's program support (testbed/nvshmem/program_support.h) on its include path.
function(sigmatrace_nvshmem_program target source)
  add_executable(${target} ${source})
  set_target_properties(${target} PROPERTIES CUDA_ARCHITECTURES "${SIGMATRACE_CUDA_ARCH}" CUDA_STANDARD 17
    CUDA_SEPARABLE_COMPILATION ON CUDA_RESOLVE_DEVICE_SYMBOLS ON BUILD_RPATH ${NVSHMEM_HOME}/lib)
  target_include_directories(${target} PRIVATE ${NVSHMEM_HOME}/include ${PROJECT_SOURCE_DIR}/testbed/nvshmem)
  target_link_libraries(${target} PRIVATE ${NVSHMEM_DEVICE_LIB} ${NVSHMEM_HOST_LIB} CUDA::cudart CUDA::cuda_driver)
endfunction()
