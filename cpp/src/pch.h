// Precompiled header for every libverl target: LibTorch's headers dominate compile time.
#pragma once
#include <torch/torch.h>
