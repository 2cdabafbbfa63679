// load_idx (models/data/idx.cc) on any pair of files, plain or gzip: the input is split
// in two (fuzz_support.h), images then labels. A Dataset or a kolo::Error, and a Dataset
// whose sizes agree and whose labels are in range.
#include "fuzz_support.h"
#include "kolo/models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static kolo_fuzz::MemoryFile images("images"), labels("labels");
  const auto [image_bytes, label_bytes] = kolo_fuzz::split_in_two(kolo_fuzz::as_text(data, size));
  kolo::models::Dataset d;
  try {
    d = kolo::models::load_idx(images.hold(image_bytes), labels.hold(label_bytes), 10);
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(d.count > 0 && d.channels == 1, "a dataset of one-channel images");
  kolo_fuzz::require(d.images.size() == static_cast<std::size_t>(d.count * d.image_size()), "pixels for every image");
  kolo_fuzz::require(d.labels.size() == static_cast<std::size_t>(d.count), "a label for every image");
  for (int32_t label : d.labels) kolo_fuzz::require(label >= 0 && label < 10, "labels below the class count");
  return 0;
}
