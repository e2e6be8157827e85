#pragma once
// On-disk cubin cache: one self-validating file per key, published by atomic rename.
//
// Layout: <dir>/<key>.gtcubin =
//   "GTCUBIN1" | u32 meta_len (LE) | u64 image_len (LE) | meta (JSON, meta_len bytes) | image (CUBIN, image_len bytes)
// meta holds kernel_name, resources, the NVRTC log and image_sha256. A file whose size, magic, JSON, ELF magic,
// kernel name or SHA-256 does not check out is a miss (with a warning), never a crash; the recompile overwrites it.
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "jit/jit.h"

namespace gemmtune::jit::detail {

// The entry format every compiled-kernel cache shares (NVRTC cubins here, Triton cubins with their launch facts):
//   magic (8 bytes) | u32 meta_len (LE) | u64 image_len (LE) | meta (JSON object, meta_len bytes) | image (an ELF)
// meta always holds "key" and "image_sha256"; a reader checks both, and the caller checks the rest of meta.
enum class EntryRead { ok, missing, corrupt };
// Reads the entry at `path` written with `magic` for `key`. ok: `meta` and `image` are filled; missing: no file;
// corrupt: `why` says what did not check out (the caller warns and recompiles). When the system refused to read the
// file (EACCES, EIO) rather than its content failing a check, `*os_error` (if given) is set to the errno and `why` is
// its text: the entry is unreadable, not corrupt.
EntryRead read_entry(const std::string& path, const char (&magic)[8], const std::string& key, nlohmann::json& meta,
                     std::string& image, std::string& why, int* os_error = nullptr);
// Publishes an entry by atomic rename (concurrent writers of one key write the same bytes; the last rename wins),
// adding "key" and "image_sha256" to `meta`. Best effort: a read-only or full disk gives a warning, not an error.
void write_entry(const std::string& path, const char (&magic)[8], const std::string& key, nlohmann::json meta,
                 std::string_view image);

// nullptr on a miss. `corrupt` is set when an entry existed but was rejected.
std::shared_ptr<Cubin> disk_load(const std::string& dir, const std::string& key, const std::string& kernel_name,
                                 bool* corrupt);

// Best effort: a read-only or full disk gives a warning, not an error.
void disk_store(const std::string& dir, const Cubin& cubin);

std::string disk_entry_path(const std::string& dir, const std::string& key);

// Whether the `n` bytes at `p` start with the ELF magic (a CUBIN's first check).
bool is_elf(const char* p, std::size_t n);

}  // namespace gemmtune::jit::detail
