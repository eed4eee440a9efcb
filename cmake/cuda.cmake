# Resolves MSTAR_CUDA (AUTO | ON | OFF) into MSTAR_WITH_CUDA and, when on,
# enables CMake's CUDA language for the whole project.
#   OFF   never looks for a toolkit: builds on a machine without one.
#   AUTO  builds the CUDA backend wherever nvcc is found: on PATH, named by
#         CUDACXX or CMAKE_CUDA_COMPILER, or at the toolkit's standard prefix
#         /usr/local/cuda/bin/nvcc (where the installers put it without
#         touching PATH); otherwise the CPU backends only.
#   ON    the same search, and an error when nothing is found.
string(TOUPPER "${MSTAR_CUDA}" _mstar_cuda)
set(MSTAR_WITH_CUDA OFF)
if(_mstar_cuda STREQUAL "OFF")
  message(STATUS "mstar: CUDA backend off (MSTAR_CUDA=OFF)")
elseif(_mstar_cuda STREQUAL "ON" OR _mstar_cuda STREQUAL "AUTO")
  # check_language(CUDA) configures a throwaway project to find and test the
  # compiler. That project reads CUDACXX from the environment, so pointing
  # CUDACXX at the standard prefix (only when nothing names a compiler
  # already) lets it find an nvcc that is not on PATH and still test it: a
  # broken toolkit under AUTO falls back to the CPU backends instead of
  # failing the configure.
  if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(_mstar_nvcc_on_path nvcc NO_CACHE)
    if(NOT _mstar_nvcc_on_path AND EXISTS /usr/local/cuda/bin/nvcc)
      set(ENV{CUDACXX} /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(MSTAR_WITH_CUDA ON)
    message(STATUS "mstar: CUDA compiler found at ${CMAKE_CUDA_COMPILER}")
    # The shared runtime for every target, executables included: the CUDA
    # library links CUDA::cudart (shared), and CMake's default (the static
    # runtime added to each CUDA-linked target) would put a second copy of
    # the runtime into the same program.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # The CUDA sources are C++20 like the rest (the params headers use
    # std::span), and a target's CUDA standard follows its C++ one. CMake
    # 3.25, the minimum here, knows no C++20 flag for nvcc (later versions
    # do); nvcc 12 and newer take -std=c++20.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
  elseif(_mstar_cuda STREQUAL "ON")
    message(FATAL_ERROR "mstar: MSTAR_CUDA=ON but no CUDA compiler (nvcc) was found on PATH, in CUDACXX or at "
                        "/usr/local/cuda/bin/nvcc")
  else()
    message(STATUS "mstar: no CUDA compiler found; building the CPU backends only")
  endif()
else()
  message(FATAL_ERROR "mstar: MSTAR_CUDA must be AUTO, ON or OFF, got '${MSTAR_CUDA}'")
endif()
