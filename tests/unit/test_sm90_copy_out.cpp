// The sm90 copy-out of a staged epilogue strip (kernels/epilogue/epilogue_tma_store.cuh: copy_strip_out, and
// copy_strip_words for rows on 16 bytes) run on the host: the kernel's own code, with a memory policy over host
// buffers that records every store. For random strips (16-bit and f32 D, every row alignment, ragged rows and
// columns, every strip width and owner the sm90 kernels stage), every byte of the clipped strip lands exactly once
// with its staged value, nothing else is written, and every store is aligned to its size.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "epilogue/epilogue_tma_store.cuh"

namespace {

using gt_sm90::CopyWords;

// The staging buffer (shared memory, addresses from 0) and the destination with a write count per byte.
struct HostMem {
  static inline std::vector<unsigned char> smem;
  static inline unsigned char* gbase = nullptr;  // 16-byte aligned
  static inline std::size_t gsize = 0;
  static inline std::vector<int> writes;
  static inline std::vector<std::string> errors;
  static inline int wide_stores = 0, narrow_stores = 0;

  static CopyWords ld16(unsigned a) {
    CopyWords v{};
    if (a % 16 != 0 || a + 16 > smem.size()) {
      errors.push_back("ld16 at shared " + std::to_string(a));
      return v;
    }
    std::memcpy(v.w, smem.data() + a, 16);
    return v;
  }
  static unsigned ld4(unsigned a) {
    unsigned v = 0;
    if (a % 4 != 0 || a + 4 > smem.size()) {
      errors.push_back("ld4 at shared " + std::to_string(a));
      return v;
    }
    std::memcpy(&v, smem.data() + a, 4);
    return v;
  }
  static void put(char* p, const void* v, int size) {
    const auto off = reinterpret_cast<unsigned char*>(p) - gbase;
    if (reinterpret_cast<std::uintptr_t>(p) % size != 0)
      errors.push_back("misaligned " + std::to_string(size) + "-byte store");
    if (off < 0 || static_cast<std::size_t>(off) + size > gsize) {
      errors.push_back("store outside the buffer at " + std::to_string(off));
      return;
    }
    std::memcpy(gbase + off, v, size);
    for (int i = 0; i < size; ++i) ++writes[off + i];
    (size == 16 ? wide_stores : narrow_stores) += 1;
  }
  static void st2(char* p, unsigned v) {
    const auto h = static_cast<std::uint16_t>(v & 0xFFFFu);
    put(p, &h, 2);
  }
  static void st4(char* p, unsigned v) { put(p, &v, 4); }
  static void st8(char* p, unsigned v0, unsigned v1) {
    const unsigned v[2] = {v0, v1};
    put(p, v, 8);
  }
  static void st16(char* p, const CopyWords& v) { put(p, v.w, 16); }
};

// Staged byte b of row r: distinct for every (row, byte) of a strip (rows < 64, bytes < 256), never the poison.
unsigned char pattern(int r, int b) { return static_cast<unsigned char>((r * 37 + b * 11 + (b >> 4) * 3) % 251 + 1); }
constexpr unsigned char kPoison = 0;

// One strip: staged as the epilogue's stage_strip swizzles it, copied out by every thread in turn, checked.
template <int OUT_SIZE, int EPI_BYTES, int ROWS, int THREADS, int UNROLL, bool ALIGNED>
void run_strip(int base, long long pitch, int rows, int bytes) {
  const std::string what = "out " + std::to_string(OUT_SIZE) + " strip " + std::to_string(EPI_BYTES) + " rows " +
                           std::to_string(ROWS) + " threads " + std::to_string(THREADS) + " unroll " +
                           std::to_string(UNROLL) + (ALIGNED ? " aligned" : "") + ": base " + std::to_string(base) +
                           " pitch " + std::to_string(pitch) + " rows " + std::to_string(rows) + " bytes " +
                           std::to_string(bytes);
  constexpr unsigned kMask = gt_sm90::epi_swizzle_mask(EPI_BYTES);
  HostMem::smem.assign(ROWS * EPI_BYTES, 0);
  for (int r = 0; r < ROWS; ++r)
    for (int b = 0; b < EPI_BYTES; ++b) {
      const unsigned off = r * EPI_BYTES + b;
      HostMem::smem[off ^ (((off >> 7) & kMask) << 4)] = pattern(r, b);
    }
  // Destination: 64 guard bytes, the strip's rows, 64 guard bytes.
  const std::size_t size = 64 + static_cast<std::size_t>(base) + (ROWS - 1) * pitch + EPI_BYTES + 64;
  const std::size_t alloc = (size + 15) / 16 * 16;
  unsigned char* buf = static_cast<unsigned char*>(std::aligned_alloc(16, alloc));
  ASSERT_NE(buf, nullptr);
  std::memset(buf, kPoison, alloc);
  HostMem::gbase = buf;
  HostMem::gsize = alloc;
  HostMem::writes.assign(alloc, 0);
  HostMem::errors.clear();
  HostMem::wide_stores = HostMem::narrow_stores = 0;
  char* d = reinterpret_cast<char*>(buf + 64 + base);
  for (int tid = 0; tid < THREADS; ++tid) {
    if constexpr (ALIGNED)
      gt_sm90::copy_strip_words<OUT_SIZE, EPI_BYTES, ROWS, THREADS, HostMem>(0, d, pitch, rows, bytes, tid);
    else
      gt_sm90::copy_strip_out<OUT_SIZE, EPI_BYTES, ROWS, THREADS, UNROLL, HostMem>(0, d, pitch, rows, bytes, tid);
  }
  ASSERT_TRUE(HostMem::errors.empty()) << HostMem::errors.front() << " (" << what << ")";
  int bad = 0;
  for (std::size_t i = 0; i < alloc && bad < 5; ++i) {
    const long long rel = static_cast<long long>(i) - 64 - base;
    const long long r = rel >= 0 ? rel / pitch : -1, b = rel >= 0 ? rel % pitch : -1;
    const bool inside = r >= 0 && r < rows && b < bytes;
    const int want_writes = inside ? 1 : 0;
    const unsigned char want = inside ? pattern(static_cast<int>(r), static_cast<int>(b)) : kPoison;
    if (HostMem::writes[i] != want_writes || buf[i] != want) {
      ADD_FAILURE() << what << ": byte " << rel << " (row " << r << ", byte " << b << ") written "
                    << HostMem::writes[i] << "x, value " << int(buf[i]) << ", want " << want_writes << "x, "
                    << int(want);
      ++bad;
    }
  }
  // Full 16-byte chunks go out whole: a row 16-byte aligned in kChunks stores, any other row in kChunks - 1 and the
  // narrower stores of its two partial chunks.
  if (!ALIGNED && bytes == EPI_BYTES) {
    int want = 0;
    for (int r = 0; r < rows; ++r) want += (base + r * pitch) % 16 == 0 ? EPI_BYTES / 16 : EPI_BYTES / 16 - 1;
    EXPECT_EQ(HostMem::wide_stores, want) << what;
  }
  std::free(buf);
}

// Random strips of one form: every row alignment of the base (with a pitch that keeps or walks it), ragged rows and
// byte counts.
template <int OUT_SIZE, int EPI_BYTES, int ROWS, int THREADS, int UNROLL>
void run_form(std::mt19937& rng) {
  const auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int base = 0; base < 16; base += OUT_SIZE) {
    for (int t = 0; t < 6; ++t) {
      // Pitch in elements: a random multiple of 8 (rows keep the base's alignment) or any.
      const int row_elems = EPI_BYTES / OUT_SIZE + pick(0, 40);
      const long long pitch = static_cast<long long>(t % 2 == 0 ? (row_elems + 7) / 8 * 8 : row_elems) * OUT_SIZE;
      const int rows = t < 2 ? ROWS : pick(1, ROWS);
      const int bytes = t < 2 ? EPI_BYTES : pick(1, EPI_BYTES / OUT_SIZE) * OUT_SIZE;
      run_strip<OUT_SIZE, EPI_BYTES, ROWS, THREADS, UNROLL, false>(base, pitch, rows, bytes);
      if (base == 0 && pitch % 16 == 0 && UNROLL == 1)
        run_strip<OUT_SIZE, EPI_BYTES, ROWS, THREADS, UNROLL, true>(base, pitch, rows, bytes);
    }
  }
}

// Every owner the kernels have: a warpgroup's 64-row strips (128 threads), a warp's 16- or 8-row pieces (32 threads).
template <int OUT_SIZE, int EPI_BYTES, int UNROLL>
void run_owners(std::mt19937& rng) {
  run_form<OUT_SIZE, EPI_BYTES, 64, 128, UNROLL>(rng);
  if constexpr (EPI_BYTES <= 128) {
    run_form<OUT_SIZE, EPI_BYTES, 16, 32, UNROLL>(rng);
    run_form<OUT_SIZE, EPI_BYTES, 8, 32, UNROLL>(rng);
  }
}

template <int UNROLL>
void run_all(std::mt19937& rng) {
  // 16-bit D: the swizzled 32/64/128-byte strips, the unswizzled 16 x (odd)-byte ones (112, 144, ..., 240) and the
  // warp pieces' tail strips (multiples of 16 below 128).
  run_owners<2, 16, UNROLL>(rng);
  run_owners<2, 32, UNROLL>(rng);
  run_owners<2, 48, UNROLL>(rng);
  run_owners<2, 64, UNROLL>(rng);
  run_owners<2, 80, UNROLL>(rng);
  run_owners<2, 96, UNROLL>(rng);
  run_owners<2, 112, UNROLL>(rng);
  run_owners<2, 128, UNROLL>(rng);
  run_owners<2, 144, UNROLL>(rng);
  run_owners<2, 176, UNROLL>(rng);
  run_owners<2, 208, UNROLL>(rng);
  run_owners<2, 240, UNROLL>(rng);
  // f32 D: whole 8-column groups, multiples of 32 bytes.
  run_owners<4, 32, UNROLL>(rng);
  run_owners<4, 64, UNROLL>(rng);
  run_owners<4, 96, UNROLL>(rng);
  run_owners<4, 128, UNROLL>(rng);
}

TEST(Sm90CopyOut, EveryByteOnce) {
  std::mt19937 rng(std::random_device{}());
  run_all<1>(rng);
  run_all<2>(rng);
}

}  // namespace
