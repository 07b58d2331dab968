// verl::data::RLDataLoader: epoch after epoch of prompt batches from an RLHFDataset, in the order of verl's
// train dataloader (python/verl/utils/dataset/dataloader.py), for C++ training loops (examples/cpp_app).
//
// With shuffle, each epoch's order is torch.randperm(n) from one CPU generator seeded once (seed, or torch's
// default seed when none), followed by the extra randperm draw torch's RandomSampler makes at the end of an
// epoch: the same seed gives the same batches as the Python loader, epoch after epoch. Without shuffle the
// order is the dataset's. drop_last drops a final short batch (verl's train loader does).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <ATen/core/Generator.h>

#include "verl/core/config.h"
#include "verl/core/export.h"
#include "verl/data/data_proto.h"
#include "verl/data/rl_dataset.h"

namespace verl::data {

class VERL_API RLDataLoader {
 public:
  // InvalidArgument for batch_size <= 0; DataError for an empty dataset, or fewer rows than one batch with
  // drop_last.
  RLDataLoader(RLHFDataset dataset, int64_t batch_size, bool shuffle = true, std::optional<uint64_t> seed = {},
               bool drop_last = true);

  // verl's train loader from the config: batches of data.gen_batch_size (else data.train_batch_size),
  // data.shuffle, data.seed, drop_last.
  static RLDataLoader from_config(RLHFDataset dataset, const Config& config);

  int64_t size() const;   // batches per epoch
  int64_t epoch() const;  // epochs handed out so far

  // The next epoch's batches in order (RLHFDataset::batch of each slice of the epoch's order), each with
  // meta_info {"epoch": <its epoch, counted from 0>}, which PPOTrainer reports as training/epoch.
  std::vector<DataProto> next_epoch();
  // The row indices of the next epoch's batches, without building them (advances like next_epoch).
  std::vector<std::vector<int64_t>> next_epoch_rows();

  const RLHFDataset& dataset() const { return dataset_; }

 private:
  RLHFDataset dataset_;
  int64_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  at::Generator generator_;
  int64_t epoch_ = 0;
};

}  // namespace verl::data
