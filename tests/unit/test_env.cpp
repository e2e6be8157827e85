// The environment is read in one place (src/core/env.cpp), from one table that docs/CLI.md shows word for word.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/env.h"
#include "gemmtune/errors.h"

using namespace gemmtune;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(Env, DocsListEveryVariableAsTheTableSaysIt) {
  const std::string docs = read(fs::path(GEMMTUNE_SOURCE_DIR) / "docs" / "CLI.md");
  const size_t section = docs.find("## Environment");
  ASSERT_NE(section, std::string::npos);
  const std::string body = docs.substr(section, docs.find("\n## ", section + 1) - section);
  size_t rows = 0;
  for (size_t at = body.find("\n| `"); at != std::string::npos; at = body.find("\n| `", at + 1)) ++rows;
  EXPECT_EQ(rows, env::variables().size()) << "docs/CLI.md's Environment table has other rows than src/core/env.cpp";
  for (const env::Variable& v : env::variables()) {
    const std::string row = std::string("| `") + v.name + "` | " + v.meaning + " |";
    EXPECT_NE(body.find(row), std::string::npos) << "docs/CLI.md lacks the row:\n" << row;
  }
}

// No other file of the library, the CLI or the worker reads the environment.
TEST(Env, NothingElseCallsGetenv) {
  for (const char* dir : {"src", "tools", "include"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(GEMMTUNE_SOURCE_DIR) / dir)) {
      if (!e.is_regular_file()) continue;
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h" && ext != ".cuh") continue;
      if (e.path().filename() == "env.cpp") continue;
      const std::string text = read(e.path());
      EXPECT_EQ(text.find("getenv("), std::string::npos) << e.path() << " reads the environment: use core/env.h";
      EXPECT_EQ(text.find("secure_getenv("), std::string::npos) << e.path();
    }
}

TEST(Env, UnknownNamesAndBadValuesAreErrorsNamingTheVariable) {
  EXPECT_THROW(env::get("GEMMTUNE_NO_SUCH_THING"), Error);
  setenv("GEMMTUNE_COMPILE_THREADS", "4x", 1);
  try {
    env::integer("GEMMTUNE_COMPILE_THREADS", 1, 1, 4096);
    FAIL() << "4x was taken";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("GEMMTUNE_COMPILE_THREADS='4x'"), std::string::npos) << e.what();
  }
  setenv("GEMMTUNE_COMPILE_THREADS", "99999999999", 1);
  EXPECT_THROW(env::integer("GEMMTUNE_COMPILE_THREADS", 1, 1, 4096), Error);
  setenv("GEMMTUNE_COMPILE_THREADS", "3", 1);
  EXPECT_EQ(env::integer("GEMMTUNE_COMPILE_THREADS", 1, 1, 4096), 3);
  unsetenv("GEMMTUNE_COMPILE_THREADS");
  EXPECT_EQ(env::integer("GEMMTUNE_COMPILE_THREADS", 7, 1, 4096), 7);
  for (const char* bad : {"inf", "nan", "-1", "0", "1e9", "2s"}) {
    setenv("GEMMTUNE_TRITON_TIMEOUT_S", bad, 1);
    EXPECT_THROW(env::positive("GEMMTUNE_TRITON_TIMEOUT_S", 600, 1e6), Error) << bad;
  }
  setenv("GEMMTUNE_TRITON_TIMEOUT_S", "2.5", 1);
  EXPECT_EQ(env::positive("GEMMTUNE_TRITON_TIMEOUT_S", 600, 1e6), 2.5);
  unsetenv("GEMMTUNE_TRITON_TIMEOUT_S");
  setenv("GEMMTUNE_SM90_VERBOSE", "0", 1);
  EXPECT_FALSE(env::flag("GEMMTUNE_SM90_VERBOSE"));
  setenv("GEMMTUNE_SM90_VERBOSE", "1", 1);
  EXPECT_TRUE(env::flag("GEMMTUNE_SM90_VERBOSE"));
  unsetenv("GEMMTUNE_SM90_VERBOSE");
  EXPECT_FALSE(env::flag("GEMMTUNE_SM90_VERBOSE"));
}

}  // namespace
