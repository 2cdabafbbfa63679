// Fashion-MNIST as a LibTorch dataset, read straight from the gzip-compressed IDX files of
// Debian's dataset-fashion-mnist (torch::data::datasets::MNIST reads uncompressed files
// only). Images come as [1, 28, 28] floats in [0, 1], targets as int64 class indices.
#pragma once

#include <torch/torch.h>

#include <cstddef>
#include <string>

class FashionMnist : public torch::data::datasets::Dataset<FashionMnist> {
 public:
  enum class Mode { kTrain, kTest };

  // The first `limit` examples of the split (0: all of them). Throws std::runtime_error
  // naming the file when one is missing or not an IDX file of the expected kind.
  FashionMnist(const std::string& root, Mode mode, int64_t limit = 0);

  torch::data::Example<> get(size_t index) override;
  torch::optional<size_t> size() const override;

 private:
  torch::Tensor images_, targets_;
};
