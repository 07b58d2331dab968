# verl_link_torch_runtime(target): lets `target` find the CUDA libraries that the PyPI torch
# wheel depends on (site-packages/nvidia/*/lib). libtorch_cuda carries no RUNPATH for them
# (Python's `import torch` preloads them), so a C++ program must: we add those directories as
# rpath-link at link time and as DT_RPATH (inherited by indirect dependencies) at run time.
# Installed with the verl CMake package so applications linking verl::verl get the same.
function(verl_torch_runtime_dirs out)
  set(_dirs "")
  if(TORCH_INSTALL_PREFIX)
    file(GLOB _dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
    list(PREPEND _dirs "${TORCH_INSTALL_PREFIX}/lib")
  endif()
  set(${out} "${_dirs}" PARENT_SCOPE)
endfunction()

function(verl_link_torch_runtime target)
  verl_torch_runtime_dirs(_dirs)
  get_target_property(_type ${target} TYPE)
  set(_scope PRIVATE)
  if(_type STREQUAL "INTERFACE_LIBRARY")
    set(_scope INTERFACE)
  endif()
  foreach(_d IN LISTS _dirs)
    target_link_options(${target} ${_scope} "LINKER:-rpath-link,${_d}")
  endforeach()
  if(NOT _type STREQUAL "INTERFACE_LIBRARY" AND NOT _type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} ${_scope} "LINKER:--disable-new-dtags")
    set_property(TARGET ${target} APPEND PROPERTY BUILD_RPATH ${_dirs})
    set_property(TARGET ${target} APPEND PROPERTY INSTALL_RPATH ${_dirs})
  endif()
endfunction()
