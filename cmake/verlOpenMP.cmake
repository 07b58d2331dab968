# verl_use_torch_openmp(target): compile `target` with OpenMP and link the OpenMP runtime that
# LibTorch uses. A PyPI torch wheel ships its own libgomp in torch/lib; linking the system one as
# well would give the process two runtimes (two thread pools competing for the same cores), so that
# copy is preferred and the compiler's runtime (OpenMP::OpenMP_CXX) is the fallback.
function(verl_use_torch_openmp target)
  find_package(OpenMP REQUIRED COMPONENTS CXX)
  set(_gomp "")
  if(TORCH_INSTALL_PREFIX AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    file(GLOB _gomp "${TORCH_INSTALL_PREFIX}/lib/libgomp*.so*")
  endif()
  if(_gomp)
    list(GET _gomp 0 _gomp)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${OpenMP_CXX_FLAGS}>)
    target_link_libraries(${target} PRIVATE "${_gomp}")
    message(STATUS "verl: OpenMP through LibTorch's runtime ${_gomp}")
  else()
    target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
    message(STATUS "verl: OpenMP through the compiler's runtime (${OpenMP_CXX_LIB_NAMES})")
  endif()
endfunction()
