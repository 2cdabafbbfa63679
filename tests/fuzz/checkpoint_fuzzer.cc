// load_checkpoint (models/checkpoint/load.cc) on any bytes: a Checkpoint or a kolo::Error,
// and in a Checkpoint every tensor holds as many values as its shape says. The first byte
// is the mode: even, the rest is the file as it is (the envelope: magic, version, length,
// checksums); odd, the harness seals the rest first (writes its length and both CRC-32s),
// so that mutations get past the checksums to the sections behind them.
#include "fuzz_support.h"
#include "kolo/models.h"
#include "models/checkpoint/format.h"

namespace {

using namespace kolo::models::checkpoint_format;

std::string sealed(std::string bytes) {
  if (bytes.size() < kHeaderBytes + kTrailerBytes) return bytes;
  auto* p = reinterpret_cast<uint8_t*>(bytes.data());
  store_le(p + 12, bytes.size(), 8);
  store_le(p + 20, crc32_update(0, p, 20), 4);
  store_le(p + bytes.size() - kTrailerBytes, crc32_update(0, p, bytes.size() - kTrailerBytes), 4);
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  static kolo_fuzz::MemoryFile file("checkpoint");
  if (size == 0) return 0;
  std::string bytes(kolo_fuzz::as_text(data + 1, size - 1));
  if (data[0] % 2 == 1) bytes = sealed(std::move(bytes));
  kolo::models::Checkpoint checkpoint;
  try {
    checkpoint = kolo::models::load_checkpoint(file.hold(bytes));
  } catch (const kolo::Error&) {
    return 0;
  }
  kolo_fuzz::require(checkpoint.shapes.size() == checkpoint.tensors.size(), "every tensor has a shape");
  for (const auto& [name, values] : checkpoint.tensors) {
    uint64_t elements = 1;
    for (int64_t d : checkpoint.shapes.at(name)) elements *= static_cast<uint64_t>(d);
    kolo_fuzz::require(values.size() == elements, "a tensor holds as many values as its shape says");
  }
  return 0;
}
