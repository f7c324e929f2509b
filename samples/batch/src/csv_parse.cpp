#include "csv_parse.h"

namespace batch {

std::vector<CsvRow> parse_csv(std::string_view t, std::string* error) {
    std::vector<CsvRow> rows;
    CsvRow row;
    std::string field;
    size_t line = 1;
    row.line = 1;
    bool in_quotes = false, row_has_data = false;
    size_t i = 0;
    if (t.size() >= 3 && t.compare(0, 3, "\xEF\xBB\xBF") == 0) i = 3;  // UTF-8 byte-order mark
    for (; i < t.size(); ++i) {
        const char c = t[i];
        if (in_quotes) {
            if (c == '"') {
                if (i + 1 < t.size() && t[i + 1] == '"') field += '"', ++i;
                else in_quotes = false;
            } else {
                if (c == '\n') ++line;
                field += c;
            }
            continue;
        }
        if (c == '"' && field.empty()) {
            in_quotes = true;
            row_has_data = true;
        } else if (c == ',') {
            row.fields.push_back(std::move(field));
            field.clear();
            row_has_data = true;
        } else if (c == '\n' || c == '\r') {
            if (c == '\r' && i + 1 < t.size() && t[i + 1] == '\n') ++i;
            if (row_has_data || !field.empty()) {
                row.fields.push_back(std::move(field));
                rows.push_back(std::move(row));
            }
            field.clear();
            row = CsvRow();
            row_has_data = false;
            row.line = ++line;
        } else {
            field += c;
            row_has_data = true;
        }
    }
    if (in_quotes && error) *error = "line " + std::to_string(row.line) + ": quoted field not closed";
    if (row_has_data || !field.empty()) {
        row.fields.push_back(std::move(field));
        rows.push_back(std::move(row));
    }
    return rows;
}

}  // namespace batch
