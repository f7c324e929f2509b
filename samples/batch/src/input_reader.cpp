#include "input_reader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "csv_parse.h"
#include "html_text.h"
#include "pdf_text.h"
#include "text_checks.h"

namespace fs = std::filesystem;

namespace batch {
namespace {

std::string lower_ext(const fs::path& p) {
    std::string e = p.extension().string();
    for (auto& c : e) c = (char)std::tolower((unsigned char)c);
    return e;
}

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_all(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read '" + path + "'");
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

std::vector<InputItem> list_folder(const fs::path& root) {
    std::vector<InputItem> items;
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied);
         it != fs::recursive_directory_iterator(); ++it) {
        const std::string name = it->path().filename().string();
        if (!name.empty() && name[0] == '.') {  // hidden files and folders (.git, editor swap files)
            if (it->is_directory()) it.disable_recursion_pending();
            continue;
        }
        if (!it->is_regular_file()) continue;
        InputItem item;
        item.id = fs::relative(it->path(), root).generic_string();
        item.source = it->path().generic_string();
        item.path = it->path().string();
        items.push_back(std::move(item));
    }
    std::sort(items.begin(), items.end(), [](const InputItem& a, const InputItem& b) { return a.id < b.id; });
    return items;
}

std::string json_field_text(const nlohmann::json& v) {
    if (v.is_string()) return v.get<std::string>();
    if (v.is_number_integer() || v.is_number_unsigned()) return v.dump();
    return "";
}

std::vector<InputItem> list_jsonl(const std::string& path, const InputOptions& o) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot read '" + path + "'");
    std::vector<InputItem> items;
    std::string line;
    size_t n = 0;
    while (std::getline(f, line)) {
        ++n;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") == std::string::npos) continue;
        InputItem item;
        item.source = path + ":" + std::to_string(n);
        item.id = "line-" + std::to_string(n);
        const auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) {
            item.error = "line is not a JSON object";
        } else {
            if (j.contains(o.id_field)) {
                const std::string id = json_field_text(j[o.id_field]);
                if (!id.empty()) item.id = id;
            }
            if (!j.contains(o.text_field) || !j[o.text_field].is_string())
                item.error = "no string field '" + o.text_field + "'";
            else
                item.text = j[o.text_field].get<std::string>();
        }
        items.push_back(std::move(item));
    }
    return items;
}

std::vector<InputItem> list_csv(const std::string& path, const InputOptions& o) {
    const std::string data = read_all(path);
    std::string error;
    const auto rows = parse_csv(data, &error);
    if (rows.empty()) throw std::runtime_error("'" + path + "' has no header row");
    const auto& header = rows[0].fields;
    const auto col = [&](const std::string& name) {
        auto it = std::find(header.begin(), header.end(), name);
        return it == header.end() ? -1 : (int)(it - header.begin());
    };
    const int id_col = col(o.id_field), text_col = col(o.text_field);
    if (text_col < 0) throw std::runtime_error("'" + path + "' has no column '" + o.text_field + "'");
    std::vector<InputItem> items;
    for (size_t r = 1; r < rows.size(); ++r) {
        InputItem item;
        item.source = path + ":" + std::to_string(rows[r].line);
        item.id = "row-" + std::to_string(r);
        const auto& f = rows[r].fields;
        if (id_col >= 0 && id_col < (int)f.size() && !f[id_col].empty()) item.id = f[id_col];
        if (text_col < (int)f.size()) item.text = f[text_col];
        else item.error = "row has no '" + o.text_field + "' field";
        if (r + 1 == rows.size() && !error.empty()) item.error = "CSV " + error;
        items.push_back(std::move(item));
    }
    return items;
}

}  // namespace

std::vector<InputItem> list_inputs(const std::string& path, const InputOptions& options) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) return list_folder(path);
    if (!fs::is_regular_file(path, ec)) throw std::runtime_error("input '" + path + "' does not exist");
    std::string lower = path;
    for (auto& c : lower) c = (char)std::tolower((unsigned char)c);
    if (ends_with(lower, ".jsonl") || ends_with(lower, ".ndjson")) return list_jsonl(path, options);
    if (ends_with(lower, ".csv")) return list_csv(path, options);
    throw std::runtime_error("input '" + path + "' is neither a folder, a .jsonl nor a .csv file");
}

Document load_document(const InputItem& item, const InputOptions& options) {
    Document d{item.id, item.source, "", item.error};
    if (!d.error.empty()) return d;
    const size_t limit = options.max_document_bytes;
    const auto too_big = [&](size_t n) {
        return "document too large: " + std::to_string(n) + " bytes (max_document_bytes " + std::to_string(limit) + ")";
    };
    if (item.path.empty()) {
        if (item.text.size() > limit) d.error = too_big(item.text.size());
        else d.text = item.text;
    } else {
        std::error_code ec;
        const auto size = fs::file_size(item.path, ec);
        if (ec) {
            d.error = "cannot stat file: " + ec.message();
            return d;
        }
        if (size > limit) {
            d.error = too_big(size);
            return d;
        }
        std::string bytes;
        try {
            bytes = read_all(item.path);
        } catch (const std::exception& e) {
            d.error = e.what();
            return d;
        }
        const std::string ext = lower_ext(item.path);
        if (ext == ".pdf") {
            if (!pdf_to_text(bytes, &d.text, &d.error)) return d;
        } else if (ext == ".html" || ext == ".htm" || ext == ".xhtml") {
            // Check the raw bytes first: extraction must not hide binary or broken input.
            d.error = text_problem(bytes);
            if (!d.error.empty()) return d;
            d.text = html_to_text(bytes);
        } else {
            d.text = std::move(bytes);
        }
    }
    d.error = text_problem(d.text);
    if (!d.error.empty()) d.text.clear();
    return d;
}

}  // namespace batch
