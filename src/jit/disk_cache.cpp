#include "jit/disk_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/input.h"
#include "core/text.h"
#include "jit/sha256.h"

namespace gemmtune::jit::detail {

namespace fs = std::filesystem;

namespace {
constexpr char kMagic[8] = {'G', 'T', 'C', 'U', 'B', 'I', 'N', '1'};
constexpr std::size_t kHeader = 8 + 4 + 8;
// A Hopper GEMM cubin is well under 1 MiB and its metadata (mostly the NVRTC log) a few KiB: an entry larger than this
// was not written by gemmtune, and reading it would only cost memory.
constexpr std::uint64_t kMaxEntry = std::uint64_t(256) << 20;

void put_le(std::string& s, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) s += char((v >> (8 * i)) & 0xff);
}
std::uint64_t get_le(const char* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= std::uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
using gemmtune::detail::warn;
}  // namespace

bool is_elf(const char* p, std::size_t n) { return n >= 4 && std::memcmp(p, "\x7f" "ELF", 4) == 0; }

std::string disk_entry_path(const std::string& dir, const std::string& key) {
  return (fs::path(dir) / (key + ".gtcubin")).string();
}

EntryRead read_entry(const std::string& path, const char (&magic)[8], const std::string& key, nlohmann::json& meta,
                     std::string& image, std::string& why, int* os_error) {
  // Regular files only, size checked before reading: a FIFO at the entry's path would block the compile, a symlink to
  // /dev/zero would fill memory.
  gemmtune::detail::FileRead f = gemmtune::detail::read_regular_file(path, kMaxEntry);
  if (f.status == gemmtune::detail::FileRead::missing) return EntryRead::missing;
  auto corrupt = [&](std::string w) {
    why = std::move(w);
    return EntryRead::corrupt;
  };
  if (f.status == gemmtune::detail::FileRead::rejected) {
    if (os_error) *os_error = f.error;
    return corrupt(f.why);
  }
  const std::string& data = f.data;
  if (data.size() < kHeader || std::memcmp(data.data(), magic, 8) != 0) return corrupt("bad header");
  const std::uint64_t meta_len = get_le(data.data() + 8, 4);
  const std::uint64_t image_len = get_le(data.data() + 12, 8);
  if (image_len > kMaxEntry || data.size() != kHeader + meta_len + image_len) return corrupt("truncated");
  const char* img = data.data() + kHeader + meta_len;
  if (!is_elf(img, image_len)) return corrupt("not a CUBIN");
  try {
    meta = gemmtune::detail::parse_json(std::string_view(data.data() + kHeader, meta_len), "metadata");
  } catch (const gemmtune::detail::InputError& e) {
    return corrupt(e.what());
  }
  if (!meta.is_object()) return corrupt("bad metadata");
  try {
    if (meta.at("key").get<std::string>() != key) return corrupt("key mismatch");
    if (meta.at("image_sha256").get<std::string>() != sha256_hex(std::string_view(img, image_len)))
      return corrupt("checksum mismatch");
  } catch (const nlohmann::json::exception&) {
    return corrupt("bad metadata");
  }
  image.assign(img, image_len);
  return EntryRead::ok;
}

void write_entry(const std::string& path, const char (&magic)[8], const std::string& key, nlohmann::json meta,
                 std::string_view image) {
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  fs::create_directories(dir, ec);
  if (ec) {
    warn("cannot create kernel cache directory " + dir.string() + ": " + ec.message());
    return;
  }
  meta["key"] = key;
  meta["image_sha256"] = sha256_hex(image);
  // Logs are not guaranteed UTF-8; replace invalid bytes instead of throwing.
  const std::string meta_str = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string blob(magic, 8);
  put_le(blob, meta_str.size(), 4);
  put_le(blob, image.size(), 8);
  blob += meta_str;
  blob.append(image.data(), image.size());

  try {
    gemmtune::detail::write_file_atomic(path, blob);
  } catch (const Error& e) {
    warn(std::string("kernel cache: ") + e.what());
  }
}

std::shared_ptr<Cubin> disk_load(const std::string& dir, const std::string& key, const std::string& kernel_name,
                                 bool* corrupt) {
  *corrupt = false;
  const std::string path = disk_entry_path(dir, key);
  int os_error = 0;
  auto reject = [&](const std::string& why) -> std::shared_ptr<Cubin> {
    *corrupt = true;
    warn((os_error ? "unreadable kernel cache entry " : "corrupt kernel cache entry ") + path + " (" + why +
         "); recompiling");
    return nullptr;
  };
  nlohmann::json meta;
  std::string image, why;
  switch (read_entry(path, kMagic, key, meta, image, why, &os_error)) {
    case EntryRead::missing:
      return nullptr;  // plain miss
    case EntryRead::corrupt:
      return reject(why);
    case EntryRead::ok:
      break;
  }
  auto c = std::make_shared<Cubin>();
  try {
    c->kernel_name = meta.at("kernel_name").get<std::string>();
    if (c->kernel_name != kernel_name) return reject("kernel name mismatch");
    c->registers = meta.at("registers").get<int>();
    c->spill_bytes = meta.at("spill_bytes").get<int>();
    c->smem_static = meta.at("smem_static").get<int>();
    c->stack_bytes = meta.at("stack_bytes").get<int>();
    c->log = meta.at("log").get<std::string>();
    c->log.resize(std::strlen(c->log.c_str()));  // entries written before logs were cut at their NUL
  } catch (const nlohmann::json::exception&) {
    return reject("bad metadata");
  }
  c->key = key;
  c->image.assign(image.begin(), image.end());
  return c;
}

void disk_store(const std::string& dir, const Cubin& c) {
  const nlohmann::json meta = {{"kernel_name", c.kernel_name}, {"registers", c.registers},
                               {"spill_bytes", c.spill_bytes}, {"smem_static", c.smem_static},
                               {"stack_bytes", c.stack_bytes}, {"log", c.log}};
  write_entry(disk_entry_path(dir, c.key), kMagic, c.key, meta, std::string_view(c.image.data(), c.image.size()));
}

}  // namespace gemmtune::jit::detail
