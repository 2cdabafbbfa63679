// load_cifar10 (models/data/cifar10.cc) on any file, plain or gzip: a Dataset or a
// kolo::Error, and a Dataset of whole 3x32x32 images with labels in range.
#include "fuzz_support.h"
#include "kolo/models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static kolo_fuzz::MemoryFile file("cifar10");
  kolo::models::Dataset d;
  try {
    d = kolo::models::load_cifar10({file.hold(kolo_fuzz::as_text(data, size))});
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(d.count > 0 && d.image_size() == 3 * 32 * 32, "a dataset of 3x32x32 images");
  kolo_fuzz::require(d.images.size() == static_cast<std::size_t>(d.count * d.image_size()), "pixels for every image");
  kolo_fuzz::require(d.labels.size() == static_cast<std::size_t>(d.count), "a label for every image");
  for (int32_t label : d.labels) kolo_fuzz::require(label >= 0 && label < 10, "labels below 10");
  return 0;
}
