// End-to-end test of ikllm-batch with a refdata model: a generated folder of documents of
// every kind (and broken ones), JSONL and CSV inputs, schema-constrained outputs, a run killed
// midway and resumed, shards merged, and --parallel 1 vs 4.
// usage: batch_tool_test IKLLM_BATCH PROBE MODEL WORK_DIR HAVE_PDF(0/1)
// Exit 0 = pass, 1 = fail, 77 = skipped (model absent).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    if (!ok) ++failures;
}

void write_file(const fs::path& p, const std::string& data) {
    std::ofstream f(p, std::ios::binary);
    f << data;
}

// A one-page PDF with one line of Helvetica text; the xref offsets are computed, so it is valid.
std::string make_pdf(const std::string& text) {
    const std::string content = "BT /F1 18 Tf 72 700 Td (" + text + ") Tj ET";
    const std::vector<std::string> objects = {
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        "<< /Length " + std::to_string(content.size()) + " >>\nstream\n" + content + "\nendstream",
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"};
    std::string pdf = "%PDF-1.4\n";
    std::vector<size_t> offsets;
    for (size_t i = 0; i < objects.size(); ++i) {
        offsets.push_back(pdf.size());
        pdf += std::to_string(i + 1) + " 0 obj\n" + objects[i] + "\nendobj\n";
    }
    const size_t xref = pdf.size();
    pdf += "xref\n0 " + std::to_string(objects.size() + 1) + "\n0000000000 65535 f \n";
    for (size_t off : offsets) {
        char line[32];
        std::snprintf(line, sizeof line, "%010zu 00000 n \n", off);
        pdf += line;
    }
    pdf += "trailer\n<< /Size " + std::to_string(objects.size() + 1) + " /Root 1 0 R >>\nstartxref\n" +
           std::to_string(xref) + "\n%%EOF\n";
    return pdf;
}

// Runs a command with stdout+stderr into `log`; returns the exit code (-signal when killed).
// When kill_after_lines > 0, SIGKILLs it once `watch` holds that many complete lines.
int run(const std::vector<std::string>& args, const fs::path& log, const fs::path& watch = {},
        size_t kill_after_lines = 0, bool* killed = nullptr) {
    const pid_t pid = fork();
    if (pid == 0) {
        FILE* f = std::fopen(log.c_str(), "a");
        if (f) dup2(fileno(f), 1), dup2(fileno(f), 2);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    for (;;) {
        const pid_t r = waitpid(pid, &status, kill_after_lines ? WNOHANG : 0);
        if (r == pid) break;
        if (kill_after_lines) {
            std::ifstream f(watch);
            std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
            size_t lines = 0;
            for (char c : s) lines += c == '\n';
            if (lines >= kill_after_lines) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                if (killed) *killed = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

struct Records {
    std::map<std::string, json> by_id;
    size_t lines = 0;
    bool torn = false;
};

Records read_records(const fs::path& p) {
    Records r;
    std::ifstream f(p, std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    size_t start = 0;
    for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1) {
        ++r.lines;
        const json j = json::parse(s.substr(start, nl - start), nullptr, false);
        if (j.is_object() && j.contains("id")) r.by_id[j["id"].get<std::string>()] = j;
    }
    r.torn = start < s.size();
    return r;
}

// id -> output (or the error), the part of a record that must not depend on how the run went.
std::map<std::string, std::string> outcome(const Records& r) {
    std::map<std::string, std::string> m;
    for (auto& [id, j] : r.by_id)
        m[id] = j["error"].is_null() ? j["output"].get<std::string>() : "error: " + j["error"].get<std::string>();
    return m;
}

size_t count_different(const std::map<std::string, std::string>& a, const std::map<std::string, std::string>& b) {
    size_t n = 0;
    for (auto& [id, out] : a) n += !b.count(id) || b.at(id) != out;
    for (auto& [id, out] : b) n += !a.count(id);
    return n;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: batch_tool_test IKLLM_BATCH PROBE MODEL WORK_DIR HAVE_PDF\n");
        return 2;
    }
    const std::string tool = argv[1], probe = argv[2], model = argv[3];
    const fs::path work = argv[4];
    const bool have_pdf = std::string(argv[5]) == "1";
    if (!fs::exists(model)) {
        std::printf("refdata model %s absent: skipped\n", model.c_str());
        return 77;
    }
    fs::remove_all(work);
    const fs::path docs = work / "docs", log = work / "log.txt";
    fs::create_directories(docs / "sub");

    // ---- documents of every kind --------------------------------------------------------
    std::set<std::string> good, bad;
    const char* topics[] = {"cats", "dogs", "rivers", "trains", "bread", "stars", "music", "gardens"};
    for (int i = 0; i < 8; ++i) {
        const std::string name = "note" + std::to_string(i) + ".txt";
        write_file(docs / name, "A short note about " + std::string(topics[i]) + ". It has " + std::to_string(i + 2) +
                                    " sentences. Nothing else.\n");
        good.insert(name);
    }
    write_file(docs / "readme.md", "# Title\n\nSome *markdown* about `code` and lists:\n\n- one\n- two\n");
    write_file(docs / "sub/page.html",
               "<html><head><title>T</title><style>p{color:red}</style><script>var x = '<p>';</script></head>"
               "<body><h1>News</h1><p>Caf&eacute; &amp; bakery opened &#8212; ok.</p><!-- hidden --></body></html>");
    write_file(docs / "unicode.txt", "Ünïcödé text: 日本語のテキスト, emoji \xF0\x9F\x98\x80.\n");
    good.insert({"readme.md", "sub/page.html", "unicode.txt"});
    std::string long_text;
    for (int i = 0; i < 60; ++i) long_text += "Paragraph " + std::to_string(i) + " talks about the weather and roads. ";
    write_file(docs / "long.txt", long_text);  // several chunks: map-reduce
    good.insert("long.txt");
    if (have_pdf) {
        write_file(docs / "paper.pdf", make_pdf("Hello from a PDF about cats"));
        good.insert("paper.pdf");
    }
    write_file(docs / "broken.pdf", "%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 9 0 R >> garbage\x01\x02 no xref\n");
    write_file(docs / "binary.dat", std::string("\x7f" "ELF\x02\x01\x01\x00\x00\x00", 10) + std::string(200, '\x03'));
    write_file(docs / "latin1.txt", "caf\xe9 cr\xe8me br\xfbl\xe9" "e\n");
    write_file(docs / "empty.txt", "");
    write_file(docs / "blank.md", "  \n\n \t\n");
    write_file(docs / "huge.txt", std::string(300000, 'x'));
    write_file(docs / ".hidden.txt", "hidden files are not documents");
    bad.insert({"broken.pdf", "binary.dat", "latin1.txt", "empty.txt", "blank.md", "huge.txt"});

    const json schema = {{"type", "object"},
                         {"properties", {{"label", {{"enum", {"cat", "dog", "other"}}}}, {"ok", {{"type", "boolean"}}}}},
                         {"required", {"label", "ok"}}};
    const json task = {{"instruction", "Classify this document.\n\n{document}\n\nAnswer in JSON."},
                       {"max_tokens", 40},
                       {"seed", 1234},
                       {"temperature", 0.7},
                       {"json_schema", schema},
                       {"max_document_bytes", 200000},
                       {"chunking", {{"chunk_tokens", 160}, {"overlap", 16}, {"map_max_tokens", 12}}}};
    write_file(work / "task.json", task.dump(2));
    const json free_task = {{"instruction", "Summarize: {document}"}, {"max_tokens", 12}, {"seed", 5}, {"temperature", 0}};
    write_file(work / "free_task.json", free_task.dump(2));

    const auto run_tool = [&](const std::string& out, std::vector<std::string> extra, const fs::path& input = {},
                              const std::string& task_file = "task.json") {
        std::vector<std::string> a = {tool, "run", "--model", model, "--input", (input.empty() ? docs : input).string(),
                                      "--task", (work / task_file).string(), "--out", (work / out).string(),
                                      "--threads", "1"};
        a.insert(a.end(), extra.begin(), extra.end());
        return a;
    };
    const size_t n_docs = good.size() + bad.size();

    // ---- 1. the reference run: one sequence at a time ------------------------------------
    check(run(run_tool("p1.jsonl", {"--parallel", "1"}), log) == 0, "run --parallel 1 exits 0");
    const Records p1 = read_records(work / "p1.jsonl");
    check(p1.lines == n_docs && p1.by_id.size() == n_docs, "every document has exactly one record (" +
                                                              std::to_string(p1.lines) + " lines, " +
                                                              std::to_string(n_docs) + " documents)");
    size_t schema_ok = 0;
    for (auto& id : good) {
        const auto it = p1.by_id.find(id);
        if (it == p1.by_id.end()) continue;
        const json& r = it->second;
        const bool valid = r["error"].is_null() && r.contains("json") && r["json"].is_object() &&
                           r["json"].contains("label") && r["json"]["label"].is_string() &&
                           std::set<std::string>{"cat", "dog", "other"}.count(r["json"]["label"].get<std::string>()) &&
                           r["json"].contains("ok") && r["json"]["ok"].is_boolean() &&
                           json::parse(r["output"].get<std::string>(), nullptr, false) == r["json"];
        if (!valid) std::printf("     bad record: %s\n", r.dump().c_str());
        schema_ok += valid;
    }
    check(schema_ok == good.size(), "schema outputs validate (" + std::to_string(schema_ok) + "/" +
                                        std::to_string(good.size()) + " good documents)");
    size_t errors_ok = 0;
    for (auto& id : bad) {
        const auto it = p1.by_id.find(id);
        const bool ok = it != p1.by_id.end() && it->second["error"].is_string() && it->second["output"].is_null();
        if (!ok) std::printf("     expected an error record for %s\n", id.c_str());
        errors_ok += ok;
    }
    check(errors_ok == bad.size(), "broken documents give error records");
    check(p1.by_id.count("long.txt") && p1.by_id.at("long.txt").value("chunks", 0) > 1,
          "a long document is chunked and combined (map-reduce)");
    check(p1.by_id.count("huge.txt") &&
              p1.by_id.at("huge.txt")["error"].get<std::string>().find("too large") != std::string::npos,
          "a huge document is refused by size");
    if (!have_pdf)
        check(p1.by_id.count("broken.pdf") &&
                  p1.by_id.at("broken.pdf")["error"].get<std::string>() == "PDF support not built",
              "without poppler PDFs are error records");

    // ---- 2. the same run again gives the same records -----------------------------------
    check(run(run_tool("p1b.jsonl", {"--parallel", "1"}), log) == 0, "second run exits 0");
    check(count_different(outcome(p1), outcome(read_records(work / "p1b.jsonl"))) == 0,
          "same seed, same --parallel: identical outputs");

    // ---- 3. killed midway, then --resume -------------------------------------------------
    bool killed = false;
    run(run_tool("killed.jsonl", {"--parallel", "1"}), log, work / "killed.jsonl", 4, &killed);
    const size_t before = read_records(work / "killed.jsonl").lines;
    std::printf("     killed: %s after %zu records\n", killed ? "yes" : "no (it finished first)", before);
    {  // simulate a torn last line as well: resume must cut it, not keep or duplicate it
        std::ofstream f(work / "killed.jsonl", std::ios::app | std::ios::binary);
        f << "{\"id\": \"note0.txt\", \"output\": \"half";
    }
    check(run(run_tool("killed.jsonl", {"--parallel", "1", "--resume"}), log) == 0, "--resume exits 0");
    const Records resumed = read_records(work / "killed.jsonl");
    check(resumed.lines == n_docs && resumed.by_id.size() == n_docs && !resumed.torn,
          "killed + resumed: exactly one whole line per document");
    check(count_different(outcome(p1), outcome(resumed)) == 0, "killed + resumed gives the uninterrupted run's records");

    // ---- 4. shards 1/3..3/3 merged ------------------------------------------------------
    std::vector<std::string> merge = {tool, "merge", "--out", (work / "merged.jsonl").string()};
    size_t shard_lines = 0;
    for (int k = 1; k <= 3; ++k) {
        const std::string out = "shard" + std::to_string(k) + ".jsonl";
        run(run_tool(out, {"--parallel", "1", "--shard", std::to_string(k) + "/3"}), log);
        shard_lines += read_records(work / out).lines;
        merge.push_back((work / out).string());
    }
    check(shard_lines == n_docs, "shards cover every document once");
    check(run(merge, log) == 0, "merge exits 0");
    check(count_different(outcome(p1), outcome(read_records(work / "merged.jsonl"))) == 0,
          "shards 1/3..3/3 merged equal the unsharded run");

    // ---- 5. JSONL and CSV inputs --------------------------------------------------------
    write_file(work / "in.jsonl",
               "{\"id\": \"a\", \"text\": \"first document about cats\"}\n"
               "{\"id\": 7, \"text\": \"numeric id\"}\n"
               "not json at all\n\n"
               "{\"id\": \"no-text\"}\n"
               "{\"id\": \"a\", \"text\": \"a repeated id\"}\n");
    check(run(run_tool("jsonl.jsonl", {"--parallel", "2"}, work / "in.jsonl", "free_task.json"), log) == 0,
          "JSONL input exits 0");
    const Records jl = read_records(work / "jsonl.jsonl");
    check(jl.lines == 5 && jl.by_id.count("a") && jl.by_id.count("7") && jl.by_id.count("a#2") &&
              jl.by_id.count("line-3") && jl.by_id.at("line-3")["error"].is_string() &&
              jl.by_id.count("no-text") && jl.by_id.at("no-text")["error"].is_string() &&
              jl.by_id.at("a")["error"].is_null(),
          "JSONL: one record per line, bad lines are error records, repeated ids renamed");
    write_file(work / "in.csv",
               "id,title,text\r\n"
               "r1,One,\"quoted, with a comma\"\r\n"
               "r2,Two,\"several\nlines and \"\"quotes\"\"\"\r\n"
               "r3,Three\r\n"
               "r4,Four,plain text\r\n");
    check(run(run_tool("csv.jsonl", {"--parallel", "2"}, work / "in.csv", "free_task.json"), log) == 0,
          "CSV input exits 0");
    const Records cv = read_records(work / "csv.jsonl");
    check(cv.lines == 4 && cv.by_id.count("r1") && cv.by_id.at("r1")["error"].is_null() && cv.by_id.count("r2") &&
              cv.by_id.at("r2")["error"].is_null() && cv.by_id.count("r3") && cv.by_id.at("r3")["error"].is_string() &&
              cv.by_id.count("r4") && cv.by_id.at("r4")["error"].is_null(),
          "CSV: quoted fields parsed, a short row is an error record");

    // ---- 6. --parallel 4 vs --parallel 1 ------------------------------------------------
    check(run(run_tool("p4.jsonl", {"--parallel", "4"}), log) == 0, "run --parallel 4 exits 0");
    const Records p4 = read_records(work / "p4.jsonl");
    check(p4.lines == n_docs && p4.by_id.size() == n_docs, "--parallel 4: every document has exactly one record");
    // ikllm-batch sets the session option batch_invariant: a document's output must not depend on
    // what runs beside it (the model is quantized, where batch forms would otherwise change the
    // float rounding; without the option the probe below reports differences).
    const size_t diff = count_different(outcome(p1), outcome(p4));
    check(diff == 0, "--parallel 1 and 4 give identical outputs (" + std::to_string(diff) + " differ)");
    check(run({probe, model, "8", "1", "--strict", "--batch-invariant"}, work / "probe.txt") == 0,
          "the engine's logits are bit-identical whatever else is in the batch (probe --batch-invariant)");
    if (failures) std::printf("%d check(s) failed; tool output in %s\n", failures, log.c_str());
    return failures ? 1 : 0;
}
