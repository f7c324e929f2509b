// Helpers shared by unit tests: locating ../shared reference data and reading raw files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

// Sanitizer builds (ASan + UBSan, TSan) are several times slower: the long SIMD-against-scalar
// sweeps run every code path there on fewer shapes (the release run keeps the full sweep).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define IKLLM_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define IKLLM_TEST_SANITIZED 1
#endif
#endif

namespace ikllm::test {
#ifdef IKLLM_TEST_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
// Root of the shared reference material (IKLLM_SHARED_DIR env var overrides); "" when absent.
std::string shared_dir();
// shared_dir()+"/refdata"; tests call GTEST_SKIP() with a clear message when this is empty.
std::string refdata_dir();
std::vector<float> read_f32_file(const std::string& path);
std::string read_text_file(const std::string& path);
bool file_exists(const std::string& path);
}  // namespace ikllm::test

#define IKLLM_REQUIRE_REFDATA()                                                          \
    do {                                                                                 \
        if (ikllm::test::refdata_dir().empty())                                          \
            GTEST_SKIP() << "reference data (../shared/refdata) not present; skipping";   \
    } while (0)
