#pragma once
// A fresh temporary directory for one test, removed with everything in it at scope exit. Other users may traverse it
// (the permission tests run a child as `nobody` inside it).
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace gemmtune::test {

struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::string t = (std::filesystem::temp_directory_path() / "gemmtune-test-XXXXXX").string();
    if (!mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path = t;
    namespace fs = std::filesystem;
    fs::permissions(path, fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace gemmtune::test
