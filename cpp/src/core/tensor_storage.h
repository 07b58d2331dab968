// Memory of a tensor released and re-allocated while the tensor itself -- its identity, shape, and every view of its
// storage, including those autograd saved -- stays (FSDP frees and re-allocates its flat parameters' storage the same
// way). Used for ZeRO-3's gathered units (workers/fully_sharded.cpp) and the rollout engine's weights while it
// sleeps (rollout/engine.cpp). Reading a released tensor is not allowed: its owner tracks the state.
#pragma once

#include <c10/core/StorageImpl.h>
#include <torch/types.h>

#include "verl/core/error.h"

namespace verl::detail {

inline void release_storage(const torch::Tensor& t) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  storage->set_data_ptr_noswap(c10::DataPtr(nullptr, t.device()));
  storage->set_nbytes(0);
}

// New (uninitialised) memory of the storage's former size: `nbytes`.
inline void reallocate_storage(const torch::Tensor& t, size_t nbytes) {
  c10::StorageImpl* storage = t.storage().unsafeGetStorageImpl();
  VERL_CHECK(storage->allocator() != nullptr, "reallocate_storage: the tensor's storage has no allocator");
  storage->set_data_ptr_noswap(storage->allocator()->allocate(nbytes));
  storage->set_nbytes(nbytes);
}

}  // namespace verl::detail
