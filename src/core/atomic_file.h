#pragma once
// Publishing a file whole: the one temp-file-and-rename writer of the kernel cache, the result cache and
// `cache export`.
#include <string>
#include <string_view>

namespace gemmtune::detail {

// Temp files of writers start with this in the target's directory; a reader that scans a directory skips them, and
// `cache clear` removes only those old enough that their writer is gone.
inline constexpr const char* kTmpPrefix = ".tmp-";

// Replaces `path` with a file holding `content` so that a reader sees the old file or the new one, whole, even across
// a crash: a unique temp file in the same directory (rename is atomic only within a file system), written, fsync'd,
// renamed over `path`, then the directory fsync'd (best effort: some file systems refuse it). A concurrent writer of
// the same path races benignly (the last rename wins). Throws gemmtune::Error naming the file and the errno text;
// no temp file is left behind.
void write_file_atomic(const std::string& path, std::string_view content);

// The file a user named as an output, to be replaced by write_file_atomic: `path` itself when nothing is there or a
// regular file is; the final target when `path` is a symbolic link to a regular file (the user's link stays a link).
// Throws InputError (src/core/input.h) for anything else: a FIFO, a device (`/dev/null` must not become a regular
// file), a directory, a socket, a dangling link.
std::string output_target(const std::string& path);

}  // namespace gemmtune::detail
