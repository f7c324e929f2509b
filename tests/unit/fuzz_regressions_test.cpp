// Replays the committed fuzz regression inputs (tests/fuzz/regressions/<target>/*) through the same
// entry points the libFuzzer targets use, so that ordinary (gcc, non-fuzz) builds keep every fixed
// crash fixed. The targets' sources are included with their libFuzzer entry points compiled out;
// a violated property aborts the program, a fixed crash that comes back crashes it.
#define IKLLM_FUZZ_NO_ENTRY 1

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "../fuzz/chat_template_fuzz.cpp"
#include "../fuzz/detok_fuzz.cpp"
#include "../fuzz/gguf_fuzz.cpp"
#include "../fuzz/grammar_fuzz.cpp"
#include "../fuzz/json_schema_fuzz.cpp"
#include "../fuzz/model_load_fuzz.cpp"
#include "../fuzz/state_load_fuzz.cpp"
#include "../fuzz/tokenizer_fuzz.cpp"
#include "../fuzz/utf8_stream_fuzz.cpp"

namespace {

namespace fs = std::filesystem;

// tests/fuzz/regressions of the source tree ($IKLLM_FUZZ_REGRESSIONS overrides). Derived from the
// IKLLM_SHARED_DIR definition ("<source dir>/../shared", tests/CMakeLists.txt): __FILE__ may be relative
// (ccache's base_dir rewrites paths).
fs::path regressions_dir() {
    if (const char* e = std::getenv("IKLLM_FUZZ_REGRESSIONS"); e && *e) return e;
    const std::string shared = IKLLM_SHARED_DIR, suffix = "/../shared";
    const std::string source = shared.size() > suffix.size() && shared.compare(shared.size() - suffix.size(), suffix.size(), suffix) == 0
                                   ? shared.substr(0, shared.size() - suffix.size())
                                   : shared + "/..";
    return fs::path(source) / "tests" / "fuzz" / "regressions";
}

// Runs every input of one target's regression folder; returns how many there were.
size_t replay(const std::string& target, int (*run)(const uint8_t*, size_t)) {
    const fs::path dir = regressions_dir() / target;
    if (!fs::is_directory(dir)) return 0;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.is_regular_file()) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        SCOPED_TRACE(f.string());
        std::ifstream in(f, std::ios::binary);
        const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        EXPECT_EQ(run(reinterpret_cast<const uint8_t*>(data.data()), data.size()), 0);
    }
    return files.size();
}

// The folder is committed: not finding it means a path problem, not "nothing to replay".
TEST(FuzzRegressions, FolderExists) { ASSERT_TRUE(fs::is_directory(regressions_dir())) << regressions_dir(); }

TEST(FuzzRegressions, Gguf) { replay("gguf_fuzz", &ikllm::fuzz::gguf_target::run); }
TEST(FuzzRegressions, ModelLoad) { replay("model_load_fuzz", &ikllm::fuzz::model_target::run); }
TEST(FuzzRegressions, ChatTemplate) { replay("chat_template_fuzz", &ikllm::fuzz::chat_target::run); }
TEST(FuzzRegressions, Utf8Stream) { replay("utf8_stream_fuzz", &ikllm::fuzz::utf8_target::run); }
TEST(FuzzRegressions, Grammar) { replay("grammar_fuzz", &ikllm::fuzz::grammar_target::run_production_limits); }
TEST(FuzzRegressions, JsonSchema) { replay("json_schema_fuzz", &ikllm::fuzz::schema_target::run); }
TEST(FuzzRegressions, StateLoad) { replay("state_load_fuzz", &ikllm::fuzz::state_target::run); }

// The tokenizer targets need the refdata vocabularies (their inputs select one by index); they are
// loaded only when there is something to replay.
bool has_inputs(const std::string& target) {
    const fs::path dir = regressions_dir() / target;
    return fs::is_directory(dir) && !fs::is_empty(dir);
}
TEST(FuzzRegressions, Tokenizer) {
    if (!has_inputs("tokenizer_fuzz")) GTEST_SKIP() << "no regression inputs";
    if (ikllm::fuzz::vocabs().models.empty()) GTEST_SKIP() << "reference vocabularies (../shared/refdata) not present";
    replay("tokenizer_fuzz", &ikllm::fuzz::tokenizer_target::run);
}
TEST(FuzzRegressions, Detok) {
    if (!has_inputs("detok_fuzz")) GTEST_SKIP() << "no regression inputs";
    if (ikllm::fuzz::vocabs().models.empty()) GTEST_SKIP() << "reference vocabularies (../shared/refdata) not present";
    replay("detok_fuzz", &ikllm::fuzz::detok_target::run);
}

}  // namespace
