# VERL_WITH_CUDA: libverl's CUDA kernels (cpp/src/kernels/cuda: *.cu compiled by nvcc, and the *.cpp
# that register them for the CUDA dispatch key). ON by default when an nvcc is found and LibTorch is
# a CUDA build, so a machine without a GPU still compiles and links every kernel (CI); the kernels run
# only where torch sees a GPU, and every op keeps its ATen composition for devices without a kernel.
#
# LibTorch's CMake config (Caffe2's public/cuda.cmake) already enabled the CUDA language and found the
# toolkit when it is a CUDA build. The kernels' launches use the CUDA runtime linked statically and
# hidden (as NCCL does): libverl gains no NEEDED entry (libcudart.so.<major> of torch's nvidia-* package,
# or libc10_cuda, would have to be found by the loader of every C++ program -- libverl's RUNPATH names
# only torch/lib -- and excluded from auditwheel's grafting). Streams are the driver's objects, so the
# kernels run on the stream torch hands out (c10's generic stream interface, kernels/cuda/dtype.h).
#
# VERL_CUDA_ARCHITECTURES: the GPUs the kernels are compiled for (sm_80 A100, sm_90 H100/H200, and
# compute_90 PTX that newer GPUs compile at load time; the syntax of CUDA_ARCHITECTURES). The .cu
# files include no LibTorch header, so nvcc takes seconds per file and architecture: all of them in
# every build, `make test` and release wheels alike.
include(CheckLanguage)
check_language(CUDA)
set(_verl_cuda_default OFF)
if(CMAKE_CUDA_COMPILER AND C10_CUDA_LIBRARY AND NOT VERL_SANITIZE)
  # (Sanitizer builds pass -fsanitize to every compiler of the directory, nvcc included.)
  set(_verl_cuda_default ON)
endif()
option(VERL_WITH_CUDA "Compile libverl's CUDA kernels with nvcc (needs a CUDA build of LibTorch)" ${_verl_cuda_default})
set(VERL_CUDA_ARCHITECTURES "80-real;90" CACHE STRING
  "CUDA architectures of libverl's kernels (CUDA_ARCHITECTURES syntax; default: sm_80 and sm_90 code, compute_90 PTX)")

if(VERL_WITH_CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "VERL_WITH_CUDA=ON but no nvcc was found: install the CUDA toolkit (or set CUDACXX / "
      "CMAKE_CUDA_COMPILER), or configure with -DVERL_WITH_CUDA=OFF")
  endif()
  if(NOT C10_CUDA_LIBRARY)
    message(FATAL_ERROR "VERL_WITH_CUDA=ON but LibTorch (${TORCH_INSTALL_PREFIX}) is not a CUDA build: install a "
      "CUDA torch wheel, or configure with -DVERL_WITH_CUDA=OFF")
  endif()
  enable_language(CUDA)  # already enabled by LibTorch's config; a no-op then
  # LibTorch's config also appends -gencode flags for TORCH_CUDA_ARCH_LIST to CMAKE_CUDA_FLAGS; the
  # architectures are VERL_CUDA_ARCHITECTURES' alone (CUDA_ARCHITECTURES in verl_add_cuda_kernels).
  string(REGEX REPLACE "-gencode[ =]arch=compute_[0-9a-z]+,code=[a-z_0-9]+" "" CMAKE_CUDA_FLAGS "${CMAKE_CUDA_FLAGS}")
  message(STATUS "verl: CUDA kernels for architectures ${VERL_CUDA_ARCHITECTURES} (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
else()
  message(STATUS "verl: no CUDA kernels (VERL_WITH_CUDA=OFF); CUDA tensors run the ops' ATen compositions")
endif()

# Adds the CUDA sources (cpp/src/kernels/cuda, cpp/src/rollout/cuda) to `target` (libverl) when VERL_WITH_CUDA is
# on.
function(verl_add_cuda_kernels target)
  if(NOT VERL_WITH_CUDA)
    return()
  endif()
  file(GLOB _cu CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cpp/src/kernels/cuda/*.cu")
  # LibTorch-side CUDA code: the kernels' registrations, and the rollout engine's decode graphs.
  file(GLOB _cpp CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cpp/src/kernels/cuda/*.cpp"
       "${PROJECT_SOURCE_DIR}/cpp/src/rollout/cuda/*.cpp")
  target_sources(${target} PRIVATE ${_cu} ${_cpp})
  # The C++ precompiled header is LibTorch's, which the .cu files do not include.
  set_source_files_properties(${_cu} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  set_target_properties(${target} PROPERTIES
    CUDA_ARCHITECTURES "${VERL_CUDA_ARCHITECTURES}"
    CUDA_STANDARD 17 CUDA_STANDARD_REQUIRED ON
    CUDA_VISIBILITY_PRESET hidden
    CUDA_RUNTIME_LIBRARY Static)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-fvisibility-inlines-hidden>)
  # A direct link item, so it comes before LibTorch's shared libcudart on the link line and resolves the
  # launches (the shared one is then dropped: --as-needed); --exclude-libs keeps its symbols out of
  # libverl's dynamic table, where they would interpose on torch's runtime.
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(${target} PRIVATE CUDA::cudart_static)
  target_link_options(${target} PRIVATE "LINKER:--exclude-libs,libcudart_static.a")
endfunction()
