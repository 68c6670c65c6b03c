#include "tests/support/temp_dir.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace daxsmbd::test_support {

namespace {

std::string make_temp_dir(const std::string& prefix, const std::string& base) {
    std::string tmpl = base + "/" + prefix + "-XXXXXX";
    return ::mkdtemp(tmpl.data()) ? tmpl : std::string();
}

}  // namespace

TempDir::TempDir(const std::string& prefix, const std::string& base)
    : path(make_temp_dir(prefix, base)) {}

TempDir::~TempDir() {
    std::error_code ignored;
    if (!path.empty()) std::filesystem::remove_all(path, ignored);
}

std::string TempDir::at(const std::string& rel) const {
    return path + "/" + rel;
}

void TempDir::file(const std::string& rel, const std::string& data) const {
    std::ofstream(at(rel)) << data;
}

void TempDir::dir(const std::string& rel) const {
    ::mkdir(at(rel).c_str(), 0755);
}

bool TempDir::exists(const std::string& rel) const {
    struct stat st {};
    return ::lstat(at(rel).c_str(), &st) == 0;
}

std::string TempDir::read(const std::string& rel) const {
    std::ifstream in(at(rel));
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

struct stat TempDir::stat(const std::string& rel) const {
    struct stat st {};
    ::stat(at(rel).c_str(), &st);
    return st;
}

uint64_t TempDir::ino(const std::string& rel) const {
    return stat(rel).st_ino;
}

}  // namespace daxsmbd::test_support
