#pragma once
// The C interface between the library and a generated CUTLASS shared object: one plain struct of run-time arguments
// and the extern "C" entry points the object exports. The struct's text is pasted into every generated unit from
// the same macro that declares it here, so both sides agree on it; the object also reports sizeof() of its copy and
// load() refuses one that differs.
#include <cstddef>
#include <cstdint>

#define GT_CUTLASS_ARGS_STRUCT                                                                                        \
  struct GtCutlassArgs {                                                                                              \
    const void* a;                                                                                                    \
    const void* b;                                                                                                    \
    const void* c;                                                                                                    \
    void* d;                                                                                                          \
    const void* bias;                                                                                                 \
    const void* row_scale;                                                                                            \
    const void* col_scale;                                                                                            \
    const void* residual;                                                                                             \
    const float* scale_a;                                                                                             \
    const float* scale_b;                                                                                             \
    void* workspace;                                                                                                  \
    int64_t m, n, k, l;                                                                                               \
    int64_t lda, ldb, ldc, ldd;                                                                                       \
    int64_t bsa, bsb, bsc, bsd;                                                                                       \
    float alpha, beta;                                                                                                \
    int32_t sm_count, pad;                                                                                            \
  }

GT_CUTLASS_ARGS_STRUCT;

#define GT_CUTLASS_STR2(...) #__VA_ARGS__
#define GT_CUTLASS_STR(x) GT_CUTLASS_STR2(x)

namespace gemmtune::cutlass_be {

inline constexpr const char* kArgsStructText = GT_CUTLASS_STR(GT_CUTLASS_ARGS_STRUCT);

// The entry points (all return nullptr on success, else a static error string):
//   const char* gt_cutlass_ident()          the config and problem key it was generated for
//   size_t gt_cutlass_args_size()           sizeof(GtCutlassArgs) as compiled
//   const char* gt_cutlass_check(const GtCutlassArgs*)          CUTLASS's can_implement
//   size_t gt_cutlass_workspace(const GtCutlassArgs*)
//   void* gt_cutlass_create() / void gt_cutlass_destroy(void*)  a GemmUniversalAdapter (holds the Params)
//   const char* gt_cutlass_init(void*, const GtCutlassArgs*, void* stream)   builds the Params (TMA descriptors)
//   const char* gt_cutlass_run(void*, void* stream)                          launches with the Params built last
using IdentFn = const char* (*)();
using ArgsSizeFn = size_t (*)();
using CheckFn = const char* (*)(const GtCutlassArgs*);
using WorkspaceFn = size_t (*)(const GtCutlassArgs*);
using CreateFn = void* (*)();
using DestroyFn = void (*)(void*);
using InitFn = const char* (*)(void*, const GtCutlassArgs*, void*);
using RunFn = const char* (*)(void*, void*);

}  // namespace gemmtune::cutlass_be
