#pragma once
// On-disk cubin cache: one self-validating file per key, published by atomic rename.
//
// Layout: <dir>/<key>.gtcubin =
//   "GTCUBIN1" | u32 meta_len (LE) | u64 image_len (LE) | meta (JSON, meta_len bytes) | image (CUBIN, image_len bytes)
// meta holds kernel_name, resources, the NVRTC log and image_sha256. A file whose size, magic, JSON, ELF magic,
// kernel name or SHA-256 does not check out is a miss (with a warning), never a crash; the recompile overwrites it.
#include <memory>
#include <string>

#include "jit/jit.h"

namespace gemmtune::jit::detail {

// nullptr on a miss. `corrupt` is set when an entry existed but was rejected.
std::shared_ptr<Cubin> disk_load(const std::string& dir, const std::string& key, const std::string& kernel_name,
                                 bool* corrupt);

// Best effort: a read-only or full disk gives a warning, not an error.
void disk_store(const std::string& dir, const Cubin& cubin);

std::string disk_entry_path(const std::string& dir, const std::string& key);

void warn(const std::string& msg);

}  // namespace gemmtune::jit::detail
