# Finds LibTorch: from Torch_DIR / CMAKE_PREFIX_PATH, else from the Python interpreter's torch
# package (the venv that `make` creates). Sets TORCH_LIBRARIES and, when found,
# VERL_TORCH_PYTHON_LIBRARY (libtorch_python, needed by the tensor caster in verl._C).
find_package(Python 3.10 COMPONENTS Interpreter Development.Module)
if(VERL_BUILD_PYTHON AND NOT Python_Development.Module_FOUND)
  message(FATAL_ERROR "Python headers not found (Python.h), needed for the verl._C module: install the "
    "interpreter's development files (Debian: python3-dev), or configure with -DVERL_BUILD_PYTHON=OFF")
endif()
if(NOT Torch_DIR AND Python_EXECUTABLE)
  execute_process(
    COMMAND "${Python_EXECUTABLE}" -c "import torch; print(torch.utils.cmake_prefix_path)"
    OUTPUT_VARIABLE _verl_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _verl_torch_rc)
  if(_verl_torch_rc EQUAL 0)
    list(APPEND CMAKE_PREFIX_PATH "${_verl_torch_prefix}")
  endif()
endif()
# Torch's CUDA probe warns without an arch list; ours (VERL_CUDA_ARCHITECTURES, cmake/verlCuda.cmake) are these.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "8.0;9.0")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  # One line saying what to do, instead of find_package's generic advice about TorchConfig.cmake.
  message(FATAL_ERROR "LibTorch not found: install the pinned torch into the Python that builds verl-cpp "
    "(pip install torch==<the pin in pyproject.toml>; `pip install .` does this itself in its isolated build "
    "environment), or point Torch_DIR at a LibTorch's share/cmake/Torch. Python used: ${Python_EXECUTABLE}")
endif()
find_library(VERL_TORCH_PYTHON_LIBRARY torch_python PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
include(verlTorchRuntime)
