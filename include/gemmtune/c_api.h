/* gemmtune's C ABI: what a binding in another language (the Python package, through ctypes) calls.
 *
 * Cold paths (problem checks, listing, compiling, tuning, the caches) take and return JSON documents: the problem
 * in the form of the worker protocol and the result cache, {"m", "n", "k", "batch", "A", "B", "C", "D" (each
 * {"dtype", "layout", "ld", "batch_stride", "align"}), "accum", "alpha", "beta", "epilogue", "scaling", "amax",
 * "grouping", "groups", "fp8_accum"} (gemmtune/problem.h for their meaning; "grouping" is "none" (the default),
 * "contiguous" or "masked", "groups" the G of a grouped GEMM, 1 by default; a masked problem's batch may be left 1, it
 * becomes G; "fp8_accum" is "exact" (the default) or "fast", written for fp8 A and B only),
 * options as an object of TuneOptions / CompileOptions fields, reports as the CLI's --json records. The launch paths,
 * gt_gemm_run and gt_gemm_run_args, take plain pointers and build nothing.
 *
 * Every function but gt_version, gt_last_error, gt_free and gt_gemm_destroy returns a gt_status. On failure the
 * message is kept per thread (gt_last_error) until that thread's next failing call. Strings returned through `char**`
 * belong to the caller: release them with gt_free. No exception crosses this boundary.
 */
#ifndef GEMMTUNE_C_API_H
#define GEMMTUNE_C_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GT_API __attribute__((visibility("default")))

typedef enum gt_status {
  GT_OK = 0,
  GT_ERROR = 1,       /* gemmtune::Error: nothing worked (no candidate, a compile that failed, ...) */
  GT_INVALID = 2,     /* the caller's input: malformed JSON, an unknown option, a problem check() refuses */
  GT_NO_GPU = 3,      /* needs a GPU and there is none */
  GT_CUDA_ERROR = 4,  /* a CUDA driver or cuBLASLt call failed; gt_last_cuda_error says which and whether sticky */
} gt_status;

typedef struct gt_gemm gt_gemm; /* a loaded Gemm (gemmtune::Gemm) */

/* A progress event (tuning, compiling) as a JSON object: "kind" (gemmtune/progress.h: "result", "compiled",
   "backend_skipped", ...), "line" (its text, as the CLI prints it) and the fields of its kind ("backend", "result" (a
   candidate result as in gt_tune's report), "count", "total", "ms", "isolated", "text"). Called on the calling thread
   or a compile thread, one call at a time. */
typedef void (*gt_progress_fn)(const char* event_json, void* user);

GT_API const char* gt_version(void);
GT_API const char* gt_last_error(void);
/* The CUDA error code of this thread's last GT_CUDA_ERROR, and whether it left the CUDA context unusable. */
GT_API int gt_last_cuda_error(int* sticky);
GT_API void gt_free(char* s);

/* Makes GPU `ordinal`'s primary context (the one the CUDA runtime and PyTorch use) current on the calling thread:
 * launches from a thread go to that device. GT_NO_GPU without a driver or GPU; GT_ERROR for an ordinal out of range. */
GT_API int gt_use_device(int ordinal);
/* {"available": bool, "device": {...}}: the current device, or the assumed sm_90 one (real: false) without a GPU. */
GT_API int gt_device(char** out_json);
/* The problem resolved, with what the bindings ask of it: {"problem", "check", "key", "str", "flops", "min_bytes",
 * "n_out", "scale_len_a", "scale_len_b", "epilogue_vector_len": {"bias_col": n, ...}}. Malformed JSON is GT_INVALID; a
 * problem that check() refuses is not (its reason is in "check"). */
GT_API int gt_problem_info(const char* problem_json, char** out_json);
/* The plan of one call of a binding's op from its tensors' metadata (src/capi/call_plan.h has both documents): the
 * problem, the output to allocate, the inputs to copy first, the key a selection may be shared by. A call gemmtune
 * refuses is GT_INVALID, its message naming the op and what is wrong. */
GT_API int gt_call_plan(const char* call_json, char** out_json);

/* The ranked candidates, ["backend:config", ...]; options: {"backends": [...], "top_k": n, "assume_sms": n}
 * (assume_sms: list for an assumed sm_90 GPU instead of the current one). */
GT_API int gt_list(const char* problem_json, const char* options_json, char** out_json);
/* compile_candidates(): options {"backends", "only": "backend:config", "top_k", "threads", "assume_sms"}. */
GT_API int gt_compile(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
                      char** out_json);
/* Tuner::tune(): options are TuneOptions' fields by name ("isolation": "process" | "in_process", "only":
 * ["backend:config", ...], "wait_compile": true to compile unbuilt cutlass candidates instead of skipping them). The report: {"problem", "device", "results": [...], "winner", "cache_hit", "wall_ms",
 * "cache_key"}. */
GT_API int gt_tune(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
                   char** out_json);
/* Tuner::select(): tunes (or answers from the result cache) and loads the winner. */
GT_API int gt_select(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
                     gt_gemm** out);
/* Tuner::load(): exactly this "backend:config" candidate, no tuning. */
GT_API int gt_load(const char* problem_json, const char* candidate, gt_gemm** out);
/* bench_problem(): the winner against cuBLASLt's reference, side by side. */
GT_API int gt_bench(const char* problem_json, const char* options_json, gt_progress_fn progress, void* user,
                    char** out_json);

/* {"candidate": "backend:config", "problem": {...}} */
GT_API int gt_gemm_info(const gt_gemm* g, char** out_json);
/* Gemm::run(): launches on `stream` (a CUstream / cudaStream_t; NULL = the legacy default stream). Pointers a
 * problem does not use may be NULL. Ungrouped problems only: a grouped one is GT_INVALID here (it needs group_rows,
 * which gt_gemm_run_args passes). */
GT_API int gt_gemm_run(const gt_gemm* g, const void* a, const void* b, const void* c, void* d, const void* bias,
                       const void* residual, const void* row_scale, const void* col_scale, const float* scale_a,
                       const float* scale_b, const float* scale_d, float* amax, void* stream);

/* The pointers of one call (gemmtune::GemmArgs). `size` is sizeof(gt_gemm_args) as the caller compiled it, so that
 * fields can be appended later: a library reads the fields that `size` covers (the others count as NULL) and refuses
 * a larger struct whose extra bytes are not zero (fields it does not know). Zero-initialize, set size, fill in. */
typedef struct gt_gemm_args {
  uint32_t size;
  const void* a;
  const void* b;
  const void* c; /* may be NULL when beta == 0 */
  void* d;
  const void* bias;
  const void* residual;
  const void* row_scale;
  const void* col_scale;
  const float* scale_a;
  const float* scale_b;
  const float* scale_d;
  float* amax;
  /* grouped problems: G int32 on the device, cumulative row ends (contiguous) or row counts (masked) */
  const int32_t* group_rows;
} gt_gemm_args;

/* Gemm::run() with every argument, grouped problems included: launches on `stream` as gt_gemm_run does. A NULL
 * `args`, a size that covers less than the pointers A, B, C and D, or unknown non-zero fields are GT_INVALID. */
GT_API int gt_gemm_run_args(const gt_gemm* g, const gt_gemm_args* args, void* stream);
GT_API void gt_gemm_destroy(gt_gemm* g);

/* The result cache: command "dir" -> {"dir"}, "ls" -> [{"key", "record"}, ...], "get" (arg: a
 * key, a tune report's "cache_key") -> {"key", "record"} or null, "clear" -> {"removed" (the entries
 * "ls" lists), "removed_unreadable" (the corrupt or unreadable entry files it skips)}, "export" (arg: file) ->
 * {"exported"}, "import" (arg: file) -> {"imported"} (distinct keys). Backend names and "backend:config" lines in
 * options are checked: an unknown backend is GT_INVALID, as is a gt_load candidate its backend refuses for the
 * problem (judged before a GPU is needed). */
GT_API int gt_cache(const char* command, const char* arg, char** out_json);

#ifdef __cplusplus
}
#endif
#endif /* GEMMTUNE_C_API_H */
