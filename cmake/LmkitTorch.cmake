# Finds LibTorch in either of its two homes:
#  - Debian's libtorch-dev (CPU only; plain find_package works);
#  - the CMake config shipped inside an installed PyTorch 2.x (GPU machines), found by asking python3.
# Defines the imported target lmkit::torch and LMKIT_WITH_CUDA.
if(NOT Torch_DIR AND NOT DEFINED ENV{Torch_DIR})
  find_package(Torch QUIET)
  if(NOT Torch_FOUND)
    find_package(Python3 COMPONENTS Interpreter QUIET)
    if(Python3_Interpreter_FOUND)
      execute_process(
        COMMAND ${Python3_EXECUTABLE} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
        OUTPUT_VARIABLE _lmkit_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(_lmkit_torch_prefix)
        list(APPEND CMAKE_PREFIX_PATH "${_lmkit_torch_prefix}")
      endif()
    endif()
  endif()
endif()
find_package(Torch REQUIRED)

# Torch 2.x exports c10_cuda as a target when it was built with CUDA; Debian's CPU build does not.
set(_torch_has_cuda OFF)
if(TARGET c10_cuda OR TARGET torch_cuda)
  set(_torch_has_cuda ON)
endif()
if(LMKIT_CUDA STREQUAL "AUTO")
  set(LMKIT_WITH_CUDA ${_torch_has_cuda})
elseif(LMKIT_CUDA)
  if(NOT _torch_has_cuda)
    message(FATAL_ERROR "LMKIT_CUDA=ON but the Torch found (${Torch_DIR}) was built without CUDA")
  endif()
  set(LMKIT_WITH_CUDA ON)
else()
  set(LMKIT_WITH_CUDA OFF)
endif()

# TORCH_LIBRARIES carries the link line; TORCH_CXX_FLAGS the libstdc++ ABI choice, which every
# C++ target linking Torch must share (PyTorch wheels have used both ABIs over time).
add_library(lmkit_torch INTERFACE)
add_library(lmkit::torch ALIAS lmkit_torch)
target_link_libraries(lmkit_torch INTERFACE ${TORCH_LIBRARIES})
target_include_directories(lmkit_torch SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
separate_arguments(_lmkit_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
target_compile_options(lmkit_torch INTERFACE ${_lmkit_torch_flags})
if(LMKIT_WITH_CUDA)
  target_compile_definitions(lmkit_torch INTERFACE LMKIT_WITH_CUDA=1)
endif()
