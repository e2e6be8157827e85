#include "jit/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include <nlohmann/json.hpp>

#include "core/input.h"
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
bool is_elf(const char* p, std::size_t n) { return n >= 4 && std::memcmp(p, "\x7f" "ELF", 4) == 0; }
}  // namespace

void warn(const std::string& msg) { std::fprintf(stderr, "gemmtune: warning: %s\n", msg.c_str()); }

std::string disk_entry_path(const std::string& dir, const std::string& key) {
  return (fs::path(dir) / (key + ".gtcubin")).string();
}

std::shared_ptr<Cubin> disk_load(const std::string& dir, const std::string& key, const std::string& kernel_name,
                                 bool* corrupt) {
  *corrupt = false;
  const std::string path = disk_entry_path(dir, key);
  auto reject = [&](const std::string& why) -> std::shared_ptr<Cubin> {
    *corrupt = true;
    warn("corrupt kernel cache entry " + path + " (" + why + "); recompiling");
    return nullptr;
  };
  // Regular files only, size checked before reading: a FIFO at the entry's path would block the compile, a symlink to
  // /dev/zero would fill memory.
  gemmtune::detail::FileRead f = gemmtune::detail::read_regular_file(path, kMaxEntry);
  if (f.status == gemmtune::detail::FileRead::missing) return nullptr;  // plain miss
  if (f.status == gemmtune::detail::FileRead::rejected) return reject(f.why);
  const std::string& data = f.data;
  if (data.size() < kHeader || std::memcmp(data.data(), kMagic, 8) != 0) return reject("bad header");
  const std::uint64_t meta_len = get_le(data.data() + 8, 4);
  const std::uint64_t image_len = get_le(data.data() + 12, 8);
  if (image_len > kMaxEntry || data.size() != kHeader + meta_len + image_len) return reject("truncated");
  const char* image = data.data() + kHeader + meta_len;
  if (!is_elf(image, image_len)) return reject("not a CUBIN");
  nlohmann::json meta;
  try {
    meta = gemmtune::detail::parse_json(std::string_view(data.data() + kHeader, meta_len), "metadata");
  } catch (const gemmtune::detail::InputError& e) {
    return reject(e.what());
  }
  if (!meta.is_object()) return reject("bad metadata");
  auto c = std::make_shared<Cubin>();
  try {
    if (meta.at("key").get<std::string>() != key) return reject("key mismatch");
    c->kernel_name = meta.at("kernel_name").get<std::string>();
    if (c->kernel_name != kernel_name) return reject("kernel name mismatch");
    if (meta.at("image_sha256").get<std::string>() != sha256_hex(std::string_view(image, image_len)))
      return reject("checksum mismatch");
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
  c->image.assign(image, image + image_len);
  return c;
}

void disk_store(const std::string& dir, const Cubin& c) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    warn("cannot create kernel cache directory " + dir + ": " + ec.message());
    return;
  }
  nlohmann::json meta = {{"key", c.key},
                         {"kernel_name", c.kernel_name},
                         {"registers", c.registers},
                         {"spill_bytes", c.spill_bytes},
                         {"smem_static", c.smem_static},
                         {"stack_bytes", c.stack_bytes},
                         {"log", c.log},
                         {"image_sha256", sha256_hex(std::string_view(c.image.data(), c.image.size()))}};
  // Logs are not guaranteed UTF-8; replace invalid bytes instead of throwing.
  const std::string meta_str = meta.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string blob(kMagic, 8);
  put_le(blob, meta_str.size(), 4);
  put_le(blob, c.image.size(), 8);
  blob += meta_str;
  blob.append(c.image.data(), c.image.size());

  // Unique temp name in the same directory (rename is atomic only within a file system): pid + thread + counter.
  static std::atomic<unsigned long> counter{0};
  const std::string final_path = disk_entry_path(dir, c.key);
  const std::string tmp = final_path + ".tmp." + std::to_string(::getpid()) + "." +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()) % 1000000007) + "." +
                          std::to_string(counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(blob.data(), static_cast<std::streamsize>(blob.size()));
    out.close();
    if (!out) {
      const int err = errno;
      warn("cannot write kernel cache entry " + tmp + ": " + std::strerror(err));
      fs::remove(tmp, ec);
      return;
    }
  }
  // Concurrent writers of the same key write identical content; whichever rename lands last wins.
  fs::rename(tmp, final_path, ec);
  if (ec) {
    warn("cannot publish kernel cache entry " + final_path + ": " + ec.message());
    std::error_code ignored;
    fs::remove(tmp, ignored);
  }
}

}  // namespace gemmtune::jit::detail
