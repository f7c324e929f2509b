// RFC 4180 CSV: quoted fields (with "" for a quote, commas and line breaks inside), CRLF or LF.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace batch {

struct CsvRow {
    size_t line = 0;                  // 1-based line where the row starts
    std::vector<std::string> fields;
};

// Parses the whole text. A quote left open at the end sets *error (the rows, the unfinished
// one included, are still returned).
std::vector<CsvRow> parse_csv(std::string_view text, std::string* error);

}  // namespace batch
