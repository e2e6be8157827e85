#include "jit/resources.h"

#include <cstdint>
#include <regex>

namespace gemmtune::jit::detail {

// "ptxas info    : Used 79 registers, used 1 barriers, 1024 bytes smem" and
// "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", per entry function.
void parse_ptxas(const std::string& log, const std::string& kernel_name, Cubin& c) {
  std::string section = log;
  const std::string entry = "Compiling entry function '" + kernel_name + "'";
  if (auto p = log.find(entry); p != std::string::npos) {
    auto end = log.find("Compiling entry function", p + entry.size());
    section = log.substr(p, end == std::string::npos ? std::string::npos : end - p);
  }
  std::smatch m;
  std::string props = section;
  if (auto p = section.find("Function properties for " + kernel_name + "\n"); p != std::string::npos)
    props = section.substr(p);
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  if (std::regex_search(props, m, frame)) {
    c.stack_bytes = std::stoi(m[1]);
    c.spill_bytes = std::stoi(m[2]) + std::stoi(m[3]);
  }
  static const std::regex used(R"(Used (\d+) registers[^\n]*)");
  if (std::regex_search(section, m, used)) {
    c.registers = std::stoi(m[1]);
    static const std::regex smem(R"((\d+) bytes smem)");
    std::smatch s;
    const std::string line = m[0];
    if (std::regex_search(line, s, smem)) c.smem_static = std::stoi(s[1]);
  }
}

// Fallback when the log has no ptxas report: registers and stack frame from the CUBIN's .nv.info section
// (EIATTR_REGCOUNT 0x2f, EIATTR_FRAME_SIZE 0x11: {u32 symbol index, u32 value}). Spills are only in the report.
void resources_from_elf(const std::vector<char>& img, const std::string& kernel_name, Cubin& c) {
  const auto* d = reinterpret_cast<const unsigned char*>(img.data());
  const std::size_t n = img.size();
  auto rd = [&](std::size_t off, int bytes) -> std::uint64_t {
    std::uint64_t v = 0;
    if (off + bytes > n) return 0;
    for (int i = 0; i < bytes; ++i) v |= std::uint64_t(d[off + i]) << (8 * i);
    return v;
  };
  if (n < 64 || d[4] != 2 /*ELFCLASS64*/ || d[5] != 1 /*little endian*/) return;
  const std::uint64_t shoff = rd(0x28, 8), shentsize = rd(0x3a, 2), shnum = rd(0x3c, 2), shstrndx = rd(0x3e, 2);
  if (shentsize < 64 || shoff + shnum * shentsize > n || shstrndx >= shnum) return;
  struct Sec { std::uint64_t name, type, offset, size, link; };
  auto sec = [&](std::uint64_t i) {
    const std::size_t b = shoff + i * shentsize;
    return Sec{rd(b, 4), rd(b + 4, 4), rd(b + 24, 8), rd(b + 32, 8), rd(b + 40, 4)};
  };
  auto cstr = [&](std::uint64_t off) {
    std::string r;
    for (; off < n && d[off]; ++off) r += char(d[off]);
    return r;
  };
  const Sec strs = sec(shstrndx);
  std::int64_t sym = -1;
  Sec info{};
  bool have_info = false;
  for (std::uint64_t i = 0; i < shnum; ++i) {
    const Sec s = sec(i);
    if (s.type == 2 /*SHT_SYMTAB*/ && s.link < shnum) {
      const Sec names = sec(s.link);
      for (std::uint64_t k = 0; k * 24 + 24 <= s.size; ++k)
        if (cstr(names.offset + rd(s.offset + k * 24, 4)) == kernel_name) sym = std::int64_t(k);
    }
    if (cstr(strs.offset + s.name) == ".nv.info") {
      info = s;
      have_info = true;
    }
  }
  if (sym < 0 || !have_info) return;
  for (std::uint64_t p = info.offset; p + 4 <= info.offset + info.size && p + 4 <= n;) {
    const unsigned fmt = d[p], attr = d[p + 1];
    if (fmt != 4 /*EIFMT_SVAL*/) {
      p += 4;
      continue;
    }
    const std::uint64_t size = rd(p + 2, 2);
    if (size == 8 && rd(p + 4, 4) == std::uint64_t(sym)) {
      if (attr == 0x2f) c.registers = int(rd(p + 8, 4));
      if (attr == 0x11) c.stack_bytes = int(rd(p + 8, 4));
    }
    p += 4 + size;
  }
}

}  // namespace gemmtune::jit::detail
