// Python `str` semantics over UTF-8 std::string: code-point indexing, Unicode whitespace, case mapping,
// strip/split/replace/find, repr() quoting and float repr(). Chat templates are Python code in disguise,
// so every byte they print must follow these rules. All inputs must be valid UTF-8 (checked at the API).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ikllm::chat::py {

// ---- UTF-8 --------------------------------------------------------------------------------------
bool valid_utf8(std::string_view s);
std::u32string decode(std::string_view s);
std::string encode(std::u32string_view s);
void append_cp(std::string& out, char32_t c);
size_t cp_length(std::string_view s);
bool is_ascii(std::string_view s);

// ---- character classes (str.isspace, str.isprintable, regex \w, ...) ------------------------------
bool is_space(char32_t c);
bool is_linebreak(char32_t c);  // str.splitlines boundaries
bool is_printable(char32_t c);
bool is_digit(char32_t c);
bool is_alpha(char32_t c);
bool is_alnum(char32_t c);
bool is_word(char32_t c);  // re \w
bool is_upper(char32_t c);
bool is_lower(char32_t c);
bool is_cased(char32_t c);
char32_t to_upper(char32_t c);
char32_t to_lower(char32_t c);

// ---- str methods ----------------------------------------------------------------------------------
std::string upper(std::string_view s);
std::string lower(std::string_view s);
std::string swapcase(std::string_view s);
std::string title(std::string_view s);       // str.title
std::string capitalize(std::string_view s);  // str.capitalize
// strip/lstrip/rstrip; chars == nullptr means Unicode whitespace
std::string strip(std::string_view s, const std::string* chars, bool left, bool right);
// split()/rsplit() without separator (whitespace runs) and with one; maxsplit < 0 means no limit
std::vector<std::string> split_ws(std::string_view s, int64_t maxsplit, bool from_right);
std::vector<std::string> split_sep(std::string_view s, std::string_view sep, int64_t maxsplit, bool from_right);
std::vector<std::string> splitlines(std::string_view s, bool keepends);
std::string replace(std::string_view s, std::string_view old, std::string_view neu, int64_t count);
// find/rfind/count with Python's optional [start, end) in code points; find returns -1 when absent
int64_t find(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool has_end, bool from_right);
int64_t count(std::string_view s, std::string_view sub, int64_t start, int64_t end, bool has_end);
std::string pad(std::string_view s, int64_t width, char32_t fill, int align);  // align <0 left, 0 center, >0 right

// ---- printing ---------------------------------------------------------------------------------------
std::string repr(std::string_view s);  // Python repr() of a str, with its quote choice and escapes
std::string float_repr(double v);      // Python repr()/str() of a float: shortest round-trip digits
std::string escape_html(std::string_view s);  // markupsafe.escape

// Python's slice index normalisation for a sequence of length len; returns the selected indices.
std::vector<int64_t> slice_indices(int64_t len, bool has_start, int64_t start, bool has_stop, int64_t stop,
                                   int64_t step);

}  // namespace ikllm::chat::py
