// Renders every refdata template x conversation case and compares byte for byte with the renders
// Python's jinja2 produced the way transformers' apply_chat_template does (refdata/templates/README.md).
#include <dirent.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "core/error.h"
#include "test_support.h"

namespace {

using ikllm::chat::ChatTemplate;
using ikllm::chat::DateTime;

std::vector<std::string> list_files(const std::string& dir, const std::string& ext) {
    std::vector<std::string> out;
    DIR* d = opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        std::string name = e->d_name;
        if (name.size() > ext.size() && name.compare(name.size() - ext.size(), ext.size(), ext) == 0)
            out.push_back(name.substr(0, name.size() - ext.size()));
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

// The fixed time render_template.py gives strftime_now.
const DateTime kFixedNow{2026, 1, 15, 0, 0, 0};

struct Outcome {
    bool ok = false;
    std::string text;  // render, or the error message
};

Outcome render_case(const std::string& dir, const std::string& tmpl, const std::string& kase) {
    using ikllm::test::read_text_file;
    std::string sidecar_path = dir + "/" + tmpl + ".json";
    std::string sidecar = ikllm::test::file_exists(sidecar_path) ? read_text_file(sidecar_path) : "";
    Outcome o;
    try {
        ChatTemplate t(read_text_file(dir + "/" + tmpl + ".jinja"));
        auto req = ikllm::chat::load_template_case(sidecar, read_text_file(dir + "/cases/" + kase + ".json"), kFixedNow);
        o.text = t.render(req);
        o.ok = true;
    } catch (const ikllm::Error& e) {
        EXPECT_EQ(e.status, ikllm::Status::template_error) << tmpl << " / " << kase << ": " << e.what();
        o.text = e.what();
    }
    return o;
}

TEST(ChatTemplateRefdata, AllTemplatesAllCases) {
    IKLLM_REQUIRE_REFDATA();
    const std::string dir = ikllm::test::refdata_dir() + "/templates";
    std::vector<std::string> templates = list_files(dir, ".jinja");
    std::vector<std::string> cases = list_files(dir + "/cases", ".json");
    ASSERT_FALSE(templates.empty());
    ASSERT_FALSE(cases.empty());
    int total = 0, passed = 0;
    for (const auto& tmpl : templates) {
        int t_pass = 0;
        for (const auto& kase : cases) {
            ++total;
            std::string base = dir + "/expected/" + tmpl + "/" + kase;
            Outcome o = render_case(dir, tmpl, kase);
            bool good;
            if (ikllm::test::file_exists(base + ".txt")) {
                std::string expected = ikllm::test::read_text_file(base + ".txt");
                good = o.ok && o.text == expected;
                EXPECT_TRUE(good) << tmpl << " / " << kase << (o.ok ? ": render differs" : ": raised " + o.text);
                if (o.ok && !good) {
                    size_t i = 0;
                    while (i < o.text.size() && i < expected.size() && o.text[i] == expected[i]) ++i;
                    ADD_FAILURE() << "first difference at byte " << i << "\n  got:      "
                                  << o.text.substr(i > 40 ? i - 40 : 0, 120) << "\n  expected: "
                                  << expected.substr(i > 40 ? i - 40 : 0, 120);
                }
            } else {
                // Python raised. For raise_exception (TemplateError) the message is the template's own text;
                // for TypeError/UndefinedError only the failure itself is specified.
                std::string expected = ikllm::test::read_text_file(base + ".error");
                while (!expected.empty() && expected.back() == '\n') expected.pop_back();
                std::string type = expected.substr(0, expected.find(':'));
                if (type == "TemplateError") good = !o.ok && o.text.rfind(expected, 0) == 0;
                else good = !o.ok;
                EXPECT_TRUE(good) << tmpl << " / " << kase << ": expected \"" << expected << "\", got "
                                  << (o.ok ? "a render" : "\"" + o.text + "\"");
            }
            t_pass += good;
        }
        passed += t_pass;
        std::printf("  %-48s %2d / %zu\n", tmpl.c_str(), t_pass, cases.size());
    }
    std::printf("  total %d / %d\n", passed, total);
    EXPECT_EQ(passed, total);
}

}  // namespace
