// Output parsing (reasoning / content / tool calls) against the real chat templates of refdata/templates:
// the assistant turns those templates render for the tool-call conversations are exactly what a model of
// that family generates, so parsing them must give back the case's tool calls (names, arguments, ids) and
// contents. Every input is also fed in pieces of 1, 2, 3, 5, 8 and 13 bytes: the result must not depend
// on the piece boundaries, the deltas must add up to the message, and no partial marker may leak.
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "chat/chat_output_parser.h"
#include "chat/chat_template.h"
#include "chat/jinja_error.h"
#include "chat/py_json.h"
#include "chat/py_text.h"
#include "core/error.h"
#include "test_support.h"

namespace {

using namespace ikllm::chat;
using ikllm::test::read_text_file;

std::string templates_dir() { return ikllm::test::refdata_dir() + "/templates"; }
std::string read_template(const std::string& name) { return read_text_file(templates_dir() + "/" + name + ".jinja"); }

const Value* member(const Value& v, const char* key) { return v.is_dict() ? v.dict_data().find(std::string(key)) : nullptr; }

std::string canonical(const Value& v) {
    JsonDumpOptions o;
    o.sort_keys = true;
    return json_dumps(v.is_string() ? json_parse(v.str()) : v, o);
}
std::string canonical(const std::string& json_text) { return canonical(json_parse(json_text)); }

std::string strip(std::string_view s) { return py::strip(s, nullptr, true, true); }

// Feeds text in pieces of `chunk` bytes (0: all at once) and checks what streaming promises.
ParsedMessage feed(const OutputParserConfig& cfg, std::string_view text, size_t chunk, const char* what) {
    OutputParser p(cfg);
    std::string reasoning, content;
    std::vector<ToolCall> calls;
    auto collect = [&](const OutputDelta& d) {
        EXPECT_TRUE(py::valid_utf8(d.reasoning) && py::valid_utf8(d.content)) << what;
        EXPECT_EQ(d.first_tool_index, calls.size()) << what;
        reasoning += d.reasoning;
        content += d.content;
        calls.insert(calls.end(), d.tool_calls.begin(), d.tool_calls.end());
    };
    if (chunk == 0) {
        collect(p.push(text));
    } else {
        for (size_t i = 0; i < text.size(); i += chunk) collect(p.push(text.substr(i, chunk)));
    }
    collect(p.finish());
    const ParsedMessage& m = p.message();
    EXPECT_EQ(reasoning, m.reasoning) << what << " chunk " << chunk;
    EXPECT_EQ(content, m.content) << what << " chunk " << chunk;
    EXPECT_EQ(calls.size(), m.tool_calls.size()) << what << " chunk " << chunk;
    return m;
}

void expect_same(const ParsedMessage& a, const ParsedMessage& b, const std::string& what) {
    EXPECT_EQ(a.reasoning, b.reasoning) << what;
    EXPECT_EQ(a.content, b.content) << what;
    ASSERT_EQ(a.tool_calls.size(), b.tool_calls.size()) << what;
    for (size_t i = 0; i < a.tool_calls.size(); ++i) {
        EXPECT_EQ(a.tool_calls[i].name, b.tool_calls[i].name) << what;
        EXPECT_EQ(a.tool_calls[i].arguments, b.tool_calls[i].arguments) << what;
        EXPECT_EQ(a.tool_calls[i].id, b.tool_calls[i].id) << what;
    }
}

// One-shot parse, checked against every piece size.
ParsedMessage parse_all_ways(const OutputParserConfig& cfg, std::string_view text, const std::string& what) {
    const ParsedMessage whole = feed(cfg, text, 0, what.c_str());
    for (size_t chunk : {1, 2, 3, 5, 8, 13}) expect_same(whole, feed(cfg, text, chunk, what.c_str()), what + " chunk " + std::to_string(chunk));
    expect_same(whole, parse_output(cfg, text), what + " parse_output");
    return whole;
}

// Text between each occurrence of `start` and the first of `ends` after it (or the end of the render).
std::vector<std::string> segments(const std::string& render, const std::string& start, const std::vector<std::string>& ends) {
    std::vector<std::string> out;
    size_t at = render.find(start);
    while (at != std::string::npos) {
        const size_t b = at + start.size();
        size_t e = render.size();
        for (const auto& m : ends) e = std::min(e, render.find(m, b));
        out.push_back(render.substr(b, e - b));
        at = render.find(start, e);
    }
    return out;
}

struct Family {
    const char* tmpl;
    OutputFormat format;
    const char* start;               // what precedes an assistant turn in the render
    std::vector<std::string> ends;   // what ends it
    std::vector<std::string> cases;  // tool-call cases the template renders with the calls
    bool ids = false;                // the format writes the call ids
};

const std::vector<Family>& families() {
    static const std::vector<Family> kFamilies = {
        {"Qwen-Qwen2.5-7B-Instruct", OutputFormat::hermes, "<|im_start|>assistant\n", {"<|im_end|>"},
         {"tool_call_hf", "tool_call_openai", "tool_call_null_content", "tool_calls_parallel"}},
        {"Qwen-Qwen3-0.6B", OutputFormat::hermes, "<|im_start|>assistant\n", {"<|im_end|>"}, {"tool_calls_parallel"}},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", OutputFormat::hermes, "<|im_start|>assistant\n",
         {"<|im_end|>"}, {"tool_call_hf", "tool_call_openai", "tool_call_null_content", "tool_calls_parallel"}},
        {"meta-llama-Llama-3.2-3B-Instruct", OutputFormat::llama3, "<|start_header_id|>assistant<|end_header_id|>\n\n",
         {"<|eot_id|>", "<|eom_id|>"}, {"tool_call_hf", "tool_call_openai", "tool_call_null_content"}},
        {"mistralai-Mistral-Nemo-Instruct-2407", OutputFormat::mistral, "[/INST]", {"</s>"},
         {"tool_call_hf", "tool_call_openai", "tool_call_null_content", "tool_calls_parallel"}, true},
        {"unsloth-mistral-Devstral-Small-2507", OutputFormat::mistral, "[/INST]", {"</s>"}, {"tool_calls_parallel"}},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", OutputFormat::deepseek, "<｜Assistant｜>",
         {"<｜tool▁outputs▁begin｜>", "<｜end▁of▁sentence｜>"}, {"tool_call_openai"}},
    };
    return kFamilies;
}

std::vector<const Value*> tool_call_messages(const Value& kase) {
    std::vector<const Value*> out;
    for (const Value& m : member(kase, "messages")->list().items) {
        const Value* calls = member(m, "tool_calls");
        if (member(m, "role")->str() == "assistant" && calls && calls->is_list() && !calls->list().items.empty())
            out.push_back(&m);
    }
    return out;
}

// The assistant turns of a render that carry tool calls, as the family's model would generate them.
std::vector<std::string> tool_call_turns(const Family& f, const std::string& render, const OutputParserConfig& cfg,
                                         std::vector<std::string>* plain_turns) {
    std::vector<std::string> out;
    for (const std::string& s : segments(render, f.start, f.ends)) {
        if (!parse_output(cfg, s).tool_calls.empty()) {
            out.push_back(s);
        } else if (plain_turns) {
            plain_turns->push_back(s);
        }
    }
    return out;
}

TEST(ChatOutputParser, DetectsTheFamilyOfEveryRefdataTemplate) {
    IKLLM_REQUIRE_REFDATA();
    const std::pair<const char*, OutputFormat> expected[] = {
        {"Qwen-Qwen2.5-7B-Instruct", OutputFormat::hermes},
        {"Qwen-Qwen3-0.6B", OutputFormat::hermes},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", OutputFormat::hermes},
        {"meta-llama-Llama-3.2-3B-Instruct", OutputFormat::llama3},
        {"mistralai-Mistral-Nemo-Instruct-2407", OutputFormat::mistral},
        {"unsloth-mistral-Devstral-Small-2507", OutputFormat::mistral},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B", OutputFormat::deepseek},
        // Families whose tool calls are written differently (XML bodies, functionary, firefunction,
        // harmony, Cohere, Gemma): reasoning only.
        {"Qwen3-Coder", OutputFormat::generic},
        {"GLM-4.6", OutputFormat::generic},
        {"meetkai-functionary-medium-v3.1", OutputFormat::generic},
        {"meetkai-functionary-medium-v3.2", OutputFormat::generic},
        {"fireworks-ai-llama-3-firefunction-v2", OutputFormat::generic},
        {"openai-gpt-oss-120b", OutputFormat::generic},
        {"CohereForAI-c4ai-command-r-plus-tool_use", OutputFormat::generic},
        {"google-gemma-2-2b-it", OutputFormat::generic},
        {"google-gemma-4-31B-it", OutputFormat::generic},
        {"HuggingFaceTB-SmolLM3-3B", OutputFormat::generic},
        {"ibm-granite-granite-3.3-2B-Instruct", OutputFormat::generic},
    };
    for (const auto& [name, format] : expected)
        EXPECT_EQ(output_format_name(detect_output_format(read_template(name))), std::string(output_format_name(format)))
            << name;
    EXPECT_EQ(output_format_from_name("qwen"), OutputFormat::hermes);
    EXPECT_THROW(output_format_from_name("llama2"), ikllm::Error);
}

// The tool calls each family's template writes into the assistant turns decode back to the case's calls.
TEST(ChatOutputParser, RendersOfToolCallsDecodeToTheCasesCalls) {
    IKLLM_REQUIRE_REFDATA();
    for (const Family& f : families()) {
        const OutputParserConfig cfg{detect_output_format(read_template(f.tmpl))};
        ASSERT_EQ(cfg.format, f.format) << f.tmpl;
        for (const std::string& c : f.cases) {
            const std::string what = std::string(f.tmpl) + " / " + c;
            const Value kase = json_parse(read_text_file(templates_dir() + "/cases/" + c + ".json"));
            const std::string render = read_text_file(templates_dir() + "/expected/" + f.tmpl + "/" + c + ".txt");
            std::vector<std::string> plain;
            const std::vector<std::string> turns = tool_call_turns(f, render, cfg, &plain);
            const std::vector<const Value*> messages = tool_call_messages(kase);
            ASSERT_EQ(turns.size(), messages.size()) << what;
            for (size_t t = 0; t < turns.size(); ++t) {
                const ParsedMessage m = parse_all_ways(cfg, turns[t], what);
                const Value* content = member(*messages[t], "content");
                EXPECT_EQ(m.content, content && content->is_string() ? content->str() : "") << what;
                EXPECT_EQ(m.reasoning, "") << what;
                const auto& want = member(*messages[t], "tool_calls")->list().items;
                ASSERT_EQ(m.tool_calls.size(), want.size()) << what;
                for (size_t k = 0; k < want.size(); ++k) {
                    const Value& fn = *member(want[k], "function");
                    EXPECT_EQ(m.tool_calls[k].name, member(fn, "name")->str()) << what;
                    EXPECT_EQ(canonical(m.tool_calls[k].arguments), canonical(*member(fn, "arguments"))) << what;
                    EXPECT_EQ(m.tool_calls[k].id, f.ids ? member(want[k], "id")->str() : "") << what;
                }
                // Streamed byte by byte, the turn never shows any content: no partial marker leaks.
                OutputParser p(cfg);
                for (char ch : turns[t]) EXPECT_EQ(p.push(std::string_view(&ch, 1)).content, "") << what;
                EXPECT_EQ(p.finish().content, "") << what;
            }
            // Turns without calls pass through as content (the generation prompt of a template that
            // opens reasoning is not a turn).
            for (const std::string& s : plain) {
                if (prompt_opens_reasoning(s)) continue;
                const ParsedMessage m = parse_all_ways(cfg, s, what);
                EXPECT_EQ(m.content, strip(s)) << what;
                EXPECT_TRUE(m.tool_calls.empty()) << what;
            }
        }
    }
}

// Text before a call stays content; calls of the same family in a row are all found; switched off,
// tool-call syntax is plain content.
TEST(ChatOutputParser, ContentAroundCallsAndToolsOff) {
    IKLLM_REQUIRE_REFDATA();
    for (const Family& f : families()) {
        const OutputParserConfig cfg{f.format};
        const std::string render =
            read_text_file(templates_dir() + "/expected/" + f.tmpl + "/" + f.cases.back() + ".txt");
        const std::vector<std::string> turns = tool_call_turns(f, render, cfg, nullptr);
        ASSERT_FALSE(turns.empty()) << f.tmpl;
        const std::string& turn = turns[0];
        const ParsedMessage alone = parse_output(cfg, turn);

        // Two turns back to back (not for Llama 3, whose JSON call is the whole reply).
        if (f.format != OutputFormat::llama3) {
            const ParsedMessage twice = parse_all_ways(cfg, turn + turn, f.tmpl);
            EXPECT_EQ(twice.tool_calls.size(), 2 * alone.tool_calls.size()) << f.tmpl;
            // Content first: "Checking. 日本 🌍" then the calls.
            const ParsedMessage lead = parse_all_ways(cfg, "Checking. 日本 🌍\n" + turn, f.tmpl);
            EXPECT_EQ(lead.content, "Checking. 日本 🌍") << f.tmpl;
            EXPECT_EQ(lead.tool_calls.size(), alone.tool_calls.size()) << f.tmpl;
        }
        OutputParserConfig off = cfg;
        off.tool_calls = false;
        const ParsedMessage plain = parse_all_ways(off, turn, f.tmpl);
        EXPECT_EQ(plain.content, strip(turn)) << f.tmpl;
        EXPECT_TRUE(plain.tool_calls.empty()) << f.tmpl;
    }
}

// A call whose JSON is broken (the last closing brace or bracket removed, or DeepSeek's closing code
// fence) is delivered as content exactly as written, never as an error; calls before it still decode.
TEST(ChatOutputParser, MalformedCallsAreContent) {
    IKLLM_REQUIRE_REFDATA();
    for (const Family& f : families()) {
        const OutputParserConfig cfg{f.format};
        const std::string render = read_text_file(templates_dir() + "/expected/" + f.tmpl + "/" + f.cases[0] + ".txt");
        const std::vector<std::string> turns = tool_call_turns(f, render, cfg, nullptr);
        ASSERT_FALSE(turns.empty()) << f.tmpl;
        const size_t n_calls = parse_output(cfg, turns[0]).tool_calls.size();
        std::string broken = turns[0];
        const size_t cut = f.format == OutputFormat::deepseek ? broken.rfind("```") : broken.find_last_of("}]");
        ASSERT_NE(cut, std::string::npos);
        broken.erase(cut, f.format == OutputFormat::deepseek ? 3 : 1);
        const ParsedMessage m = parse_all_ways(cfg, broken, f.tmpl);
        const std::string all = strip(broken);
        if (n_calls == 1) {
            EXPECT_TRUE(m.tool_calls.empty()) << f.tmpl;
            EXPECT_EQ(m.content, all) << f.tmpl;
        } else {  // the broken last call is the tail of the turn
            EXPECT_LT(m.tool_calls.size(), n_calls) << f.tmpl;
            ASSERT_LE(m.content.size(), all.size()) << f.tmpl;
            EXPECT_EQ(all.substr(all.size() - m.content.size()), m.content) << f.tmpl;
            EXPECT_GT(m.content.size(), all.size() - cut) << f.tmpl;
        }
    }
    // A JSON reply that is not a call stays content (Llama 3 takes a leading '{' for a possible call).
    const ParsedMessage m = parse_all_ways({OutputFormat::llama3}, "{\"answer\": 42} is the JSON.", "llama3 json");
    EXPECT_EQ(m.content, "{\"answer\": 42} is the JSON.");
    EXPECT_TRUE(m.tool_calls.empty());
}

// Llama 3.1's <|python_tag|> (as the functionary v3.1 template spells it) before a JSON call.
TEST(ChatOutputParser, LlamaPythonTag) {
    IKLLM_REQUIRE_REFDATA();
    const std::string tag = "<|python_tag|>";
    ASSERT_NE(read_template("meetkai-functionary-medium-v3.1").find(tag), std::string::npos);
    const Family& llama = families()[3];
    const std::string render = read_text_file(templates_dir() + "/expected/" + llama.tmpl + "/tool_call_hf.txt");
    const std::vector<std::string> turns = tool_call_turns(llama, render, {OutputFormat::llama3}, nullptr);
    ASSERT_EQ(turns.size(), 1u);
    const ParsedMessage direct = parse_output({OutputFormat::llama3}, turns[0]);
    const ParsedMessage tagged = parse_all_ways({OutputFormat::llama3}, "Let me look.\n" + tag + turns[0], "python_tag");
    EXPECT_EQ(tagged.content, "Let me look.");
    ASSERT_EQ(tagged.tool_calls.size(), 1u);
    EXPECT_EQ(tagged.tool_calls[0].name, direct.tool_calls[0].name);
    EXPECT_EQ(tagged.tool_calls[0].arguments, direct.tool_calls[0].arguments);
    // Code after the tag (not JSON) is content, tag included.
    const ParsedMessage code = parse_all_ways({OutputFormat::llama3}, tag + "print(1)", "python_tag code");
    EXPECT_EQ(code.content, tag + "print(1)");
}

// Reasoning as Qwen3's template writes it for an assistant message with reasoning_content: the parser
// splits the turn back into the message's two fields.
TEST(ChatOutputParser, Qwen3ReasoningRoundTrip) {
    IKLLM_REQUIRE_REFDATA();
    const std::string tmpl = read_template("Qwen-Qwen3-0.6B");
    const Value kase = json_parse(read_text_file(templates_dir() + "/cases/thinking_enabled.json"));
    const Value& msgs = *member(kase, "messages");
    const Value& with_field = msgs.list().items[4];  // content + reasoning_content
    ASSERT_TRUE(member(with_field, "reasoning_content"));
    RenderRequest r;
    r.messages_json = "[{\"role\": \"user\", \"content\": \"q\"}, " + json_dumps(with_field, {}) + "]";
    const std::string render = ChatTemplate(tmpl).render(r);
    const std::vector<std::string> turns = segments(render, "<|im_start|>assistant\n", {"<|im_end|>"});
    ASSERT_EQ(turns.size(), 1u);
    ASSERT_NE(turns[0].find("<think>"), std::string::npos) << render;
    const ParsedMessage m = parse_all_ways({detect_output_format(tmpl)}, turns[0], "qwen3 reasoning");
    EXPECT_EQ(m.reasoning, member(with_field, "reasoning_content")->str());
    EXPECT_EQ(m.content, member(with_field, "content")->str());

    // The inline form of the same case: what the template keeps of it is the content.
    const std::string inline_content = member(msgs.list().items[2], "content")->str();
    const std::string full = read_text_file(templates_dir() + "/expected/Qwen-Qwen3-0.6B/thinking_enabled.txt");
    const std::string kept = segments(full, "<|im_start|>assistant\n", {"<|im_end|>"})[0];
    const ParsedMessage in = parse_all_ways({OutputFormat::hermes}, inline_content, "qwen3 inline");
    EXPECT_EQ(in.content, kept);
    const size_t open = inline_content.find("<think>") + 7, close = inline_content.find("</think>");
    EXPECT_EQ(in.reasoning, strip(inline_content.substr(open, close - open)));

    // With thinking disabled the generation prompt closes an empty block; enabled, it opens none.
    for (const char* c : {"thinking_disabled", "thinking_enabled", "single_user"})
        EXPECT_FALSE(prompt_opens_reasoning(read_text_file(templates_dir() + "/expected/Qwen-Qwen3-0.6B/" + c + ".txt")))
            << c;
}

// DeepSeek R1's generation prompt opens <think>: the output starts inside reasoning.
TEST(ChatOutputParser, DeepSeekOutputStartsInsideReasoning) {
    IKLLM_REQUIRE_REFDATA();
    const std::string dir = templates_dir() + "/expected/deepseek-ai-DeepSeek-R1-Distill-Qwen-32B/";
    const std::string prompt = read_text_file(dir + "thinking_enabled.txt");
    ASSERT_TRUE(prompt_opens_reasoning(prompt));
    const Value kase = json_parse(read_text_file(templates_dir() + "/cases/thinking_enabled.json"));
    const std::string inline_content = member(member(kase, "messages")->list().items[2], "content")->str();
    // The model continues after the prompt's "<think>\n".
    const std::string generated = inline_content.substr(inline_content.find("<think>\n") + 8);
    OutputParserConfig cfg{OutputFormat::deepseek};
    cfg.starts_in_reasoning = true;
    const ParsedMessage m = parse_all_ways(cfg, generated, "deepseek r1");
    // The template itself keeps the text after </think> as the turn's content.
    const std::string kept = segments(prompt, "<｜Assistant｜>", {"<｜end▁of▁sentence｜>"})[0];
    EXPECT_EQ(m.content, strip(kept));
    const size_t close = generated.find("</think>");
    EXPECT_EQ(m.reasoning, strip(generated.substr(0, close)));
    // Never closed: all of it is reasoning.
    const ParsedMessage open = parse_all_ways(cfg, generated.substr(0, close), "deepseek unclosed");
    EXPECT_EQ(open.content, "");
    EXPECT_EQ(open.reasoning, m.reasoning);
}

// Non-ASCII text passes through untouched; invalid UTF-8 becomes U+FFFD whatever the piece boundaries.
TEST(ChatOutputParser, UnicodeAndInvalidBytes) {
    IKLLM_REQUIRE_REFDATA();
    const Value kase = json_parse(read_text_file(templates_dir() + "/cases/unicode_escapes.json"));
    for (const Value& msg : member(kase, "messages")->list().items) {
        const std::string text = member(msg, "content")->str();
        for (OutputFormat f : {OutputFormat::generic, OutputFormat::hermes, OutputFormat::mistral, OutputFormat::deepseek}) {
            const ParsedMessage m = parse_all_ways({f}, text, output_format_name(f));
            EXPECT_EQ(m.content, strip(text)) << output_format_name(f);
        }
    }
    const std::string fffd = "\xEF\xBF\xBD";
    // 0xFF never appears in UTF-8; a lone continuation byte; an encoded surrogate; a truncated 3-byte
    // sequence at the very end.
    const ParsedMessage m = parse_all_ways({OutputFormat::generic}, "a\xFF" "b\x80" "c\xED\xA0\x80" "d\xE6\x97", "bad utf8");
    EXPECT_EQ(m.content, "a" + fffd + "b" + fffd + "c" + fffd + fffd + fffd + "d" + fffd);
    EXPECT_TRUE(py::valid_utf8(m.content));
}

// Random texts made of marker fragments, JSON punctuation, multi-byte and invalid bytes: whatever the
// text, every format gives the same result for every split, valid UTF-8, and never throws.
TEST(ChatOutputParser, PieceBoundariesNeverMatter) {
    const std::vector<std::string> atoms = {
        "<think>", "</think>", "<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]",
        "[CALL_ID]", "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>",
        "<｜tool▁calls▁end｜>", "function", "\n```json\n", "```", "{", "}", "[", "]", "\"name\": \"f\"",
        "\"arguments\": {\"a\": 1}", "\"parameters\": {}", ", ", ":", ";", " ", "\n", "x", "日本", "🌍", "\xFF",
        "\xE6", "<", "<too", "[TOOL", "<｜tool", "\"", "\\", "12", "-", "e", "true", "null"};
    // Half the atoms are whole calls of each family, so that many texts hold decodable calls.
    const std::vector<std::string> call_atoms = {
        "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": [1, \"é\"]}}</tool_call>",
        "<tool_call>\n{\"name\": \"g\", \"arguments\": \"{\\\"b\\\": 2}\"}\n</tool_call>",
        "[TOOL_CALLS][{\"name\": \"g\", \"arguments\": {}, \"id\": \"i1\"}]", "[TOOL_CALLS]f[ARGS]{\"a\": 1}",
        "[TOOL_CALLS]f[CALL_ID]x7[ARGS]{}", "<|python_tag|>{\"name\": \"h\", \"parameters\": {\"q\": \"日本\"}}",
        "{\"name\": \"f\", \"parameters\": {}}",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{\"b\": 2}\n```<｜tool▁call▁end｜>",
        "<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜><｜tool▁calls▁end｜>"};
    std::mt19937 rng(12345);
    size_t calls = 0;
    for (OutputFormat f : {OutputFormat::generic, OutputFormat::llama3, OutputFormat::hermes, OutputFormat::mistral,
                           OutputFormat::deepseek, OutputFormat::none}) {
        for (int n = 0; n < 150; ++n) {
            std::string text;
            const int len = 1 + (int)(rng() % 24);
            for (int k = 0; k < len; ++k) {
                const auto& from = rng() % 2 ? atoms : call_atoms;
                text += from[rng() % from.size()];
            }
            OutputParserConfig cfg{f};
            cfg.starts_in_reasoning = rng() % 4 == 0;
            calls += parse_all_ways(cfg, text, std::string(output_format_name(f)) + ": " + text).tool_calls.size();
        }
    }
    EXPECT_GT(calls, 50u);  // the property was checked on texts with calls too
}

// Long arguments (a 40 KB program) streamed in small pieces decode the same as in one piece.
TEST(ChatOutputParser, LongCalls) {
    std::string code;
    for (int i = 0; code.size() < 40000; ++i) code += "if (x[" + std::to_string(i) + "] > 0) { y += \\\"é\\\"; }\\n";
    const std::string args = "{\"code\": \"" + code + "\"}";
    const std::pair<OutputFormat, std::string> texts[] = {
        {OutputFormat::hermes, "<tool_call>{\"name\": \"run\", \"arguments\": " + args + "}</tool_call>"},
        {OutputFormat::llama3, "{\"name\": \"run\", \"parameters\": " + args + "}"},
        {OutputFormat::mistral, "[TOOL_CALLS]run[ARGS]" + args},
        {OutputFormat::deepseek, "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>run\n```json\n" + args +
                                     "\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"}};
    for (const auto& [format, text] : texts) {
        for (size_t chunk : {0, 3, 7}) {
            const ParsedMessage m = feed({format}, text, chunk, output_format_name(format));
            ASSERT_EQ(m.tool_calls.size(), 1u) << output_format_name(format);
            EXPECT_EQ(m.tool_calls[0].arguments, args) << output_format_name(format);
            EXPECT_EQ(m.content, "") << output_format_name(format);
        }
    }
}

TEST(ChatOutputParser, JsonShapesAndLifecycle) {
    OutputParser p({OutputFormat::hermes});
    const OutputDelta& d = p.push("<think>r</think>c<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": \"\\u00e9\"}}</tool_call>");
    const Value delta = json_parse(delta_json(d));
    EXPECT_EQ(member(delta, "reasoning_content")->str(), "r");
    EXPECT_EQ(member(delta, "content")->str(), "c");
    const Value& call = member(delta, "tool_calls")->list().items.at(0);
    EXPECT_EQ(member(call, "index")->as_int(), 0);
    EXPECT_EQ(member(call, "type")->str(), "function");
    EXPECT_EQ(member(*member(call, "function"), "name")->str(), "f");
    EXPECT_EQ(canonical(member(*member(call, "function"), "arguments")->str()), canonical(std::string("{\"x\": \"é\"}")));
    EXPECT_FALSE(member(call, "id"));
    EXPECT_EQ(delta_json(p.finish()), "{}");
    EXPECT_THROW(p.push("x"), ikllm::Error);
    const Value msg = json_parse(message_json(p.message()));
    EXPECT_EQ(member(msg, "content")->str(), "c");
    EXPECT_EQ(member(msg, "tool_calls")->list().items.size(), 1u);
    p.reset();
    p.push("plain");
    p.finish();
    const Value again = json_parse(message_json(p.message()));
    EXPECT_EQ(member(again, "reasoning_content")->str(), "");
    EXPECT_EQ(member(again, "content")->str(), "plain");
    EXPECT_TRUE(member(again, "tool_calls")->list().items.empty());
    // "none" keeps everything as content.
    EXPECT_EQ(parse_output({OutputFormat::none}, "<think>x</think>y").content, "<think>x</think>y");
}

}  // namespace
