// A temporary directory for one test, removed with everything in it when the object goes, and
// the file helpers the tests use on it.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

namespace daxsmbd::test_support {

class TempDir {
  public:
    // mkdtemp("<base>/<prefix>-XXXXXX"); ok() is false (and `path` empty) when that failed.
    explicit TempDir(const std::string& prefix = "daxsmbd-test", const std::string& base = "/tmp");
    ~TempDir();
    TempDir(const TempDir&) = delete;
    TempDir& operator=(const TempDir&) = delete;

    bool ok() const { return !path.empty(); }

    // `rel` under the directory.
    std::string at(const std::string& rel) const;
    // Writes a file (truncating it) with `data`.
    void file(const std::string& rel, const std::string& data = "") const;
    void dir(const std::string& rel) const;          // mode 0755
    bool exists(const std::string& rel) const;       // lstat: a dangling symlink exists
    std::string read(const std::string& rel) const;  // "" when it cannot be read
    struct stat stat(const std::string& rel) const;  // zeros when it does not exist
    uint64_t ino(const std::string& rel) const;

    const std::string path;  // absolute
};

}  // namespace daxsmbd::test_support
