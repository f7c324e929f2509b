#include "test_support.h"
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace ikllm::test {
bool file_exists(const std::string& path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}
std::string shared_dir() {
    if (const char* env = std::getenv("IKLLM_SHARED_DIR"); env && *env) return file_exists(env) ? env : "";
#ifdef IKLLM_SHARED_DIR
    if (file_exists(IKLLM_SHARED_DIR)) return IKLLM_SHARED_DIR;
#endif
    return "";
}
std::string refdata_dir() {
    std::string s = shared_dir();
    if (s.empty() || !file_exists(s + "/refdata")) return "";
    return s + "/refdata";
}
std::vector<float> read_f32_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::vector<float> out(bytes.size() / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
}
std::string read_text_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}
}  // namespace ikllm::test
