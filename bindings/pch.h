// Precompiled header for verl._C: LibTorch with its Python bridge (and its bundled pybind11).
#pragma once
#include <torch/python.h>
#include <torch/torch.h>
