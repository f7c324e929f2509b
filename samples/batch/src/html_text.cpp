#include "html_text.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>

namespace batch {
namespace {

std::string lower(std::string_view s) {
    std::string r(s);
    for (auto& c : r) c = (char)std::tolower((unsigned char)c);
    return r;
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
    if (cp < 0x80) {
        out += (char)cp;
    } else if (cp < 0x800) {
        out += (char)(0xC0 | (cp >> 6)), out += (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += (char)(0xE0 | (cp >> 12)), out += (char)(0x80 | ((cp >> 6) & 0x3F)), out += (char)(0x80 | (cp & 0x3F));
    } else {
        out += (char)(0xF0 | (cp >> 18)), out += (char)(0x80 | ((cp >> 12) & 0x3F));
        out += (char)(0x80 | ((cp >> 6) & 0x3F)), out += (char)(0x80 | (cp & 0x3F));
    }
}

// Decodes the entity starting at html[i] == '&'; returns the bytes consumed (0: not an entity).
size_t decode_entity(std::string_view html, size_t i, std::string& out) {
    const size_t semi = html.find(';', i);
    if (semi == std::string_view::npos || semi - i > 10) return 0;
    const std::string name(html.substr(i + 1, semi - i - 1));
    if (name.size() > 1 && name[0] == '#') {
        const bool hex = name[1] == 'x' || name[1] == 'X';
        char* end = nullptr;
        const unsigned long cp = std::strtoul(name.c_str() + (hex ? 2 : 1), &end, hex ? 16 : 10);
        if (*end) return 0;
        append_utf8(out, (uint32_t)cp);
        return semi - i + 1;
    }
    static const struct {
        const char* name;
        const char* text;
    } named[] = {{"amp", "&"},   {"lt", "<"},       {"gt", ">"},      {"quot", "\""},      {"apos", "'"},
                 {"nbsp", " "},  {"mdash", "\u2014"}, {"ndash", "\u2013"}, {"hellip", "\u2026"}, {"copy", "\u00a9"},
                 {"laquo", "\u00ab"}, {"raquo", "\u00bb"}, {"rsquo", "\u2019"}, {"lsquo", "\u2018"},
                 {"rdquo", "\u201d"}, {"ldquo", "\u201c"}, {"eacute", "\u00e9"}, {"euro", "\u20ac"}};
    for (auto& e : named)
        if (name == e.name) {
            out += e.text;
            return semi - i + 1;
        }
    return 0;
}

bool is_block_tag(const std::string& t) {
    static const char* blocks[] = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "h1", "h2", "h3", "h4", "h5",
                                   "h6", "section", "article", "header", "footer", "blockquote", "pre", "hr", "title"};
    for (auto* b : blocks)
        if (t == b) return true;
    return false;
}

// Collapses runs of spaces, keeps at most one blank line between blocks, trims the ends.
std::string tidy(const std::string& raw) {
    std::string out;
    int newlines = 0;
    bool space = false;
    for (char c : raw) {
        if (c == '\n') {
            ++newlines;
            space = false;
        } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f') {
            space = true;
        } else {
            if (!out.empty()) {
                if (newlines) out += newlines > 1 ? "\n\n" : "\n";
                else if (space) out += ' ';
            }
            out += c;
            newlines = 0;
            space = false;
        }
    }
    return out;
}

}  // namespace

std::string html_to_text(std::string_view html) {
    std::string raw;
    size_t i = 0;
    while (i < html.size()) {
        const char c = html[i];
        if (c == '<') {
            if (html.compare(i, 4, "<!--") == 0) {  // comment
                const size_t e = html.find("-->", i + 4);
                i = e == std::string_view::npos ? html.size() : e + 3;
                continue;
            }
            const size_t e = html.find('>', i);
            if (e == std::string_view::npos) break;
            std::string_view tag = html.substr(i + 1, e - i - 1);
            const bool closing = !tag.empty() && tag[0] == '/';
            if (closing) tag.remove_prefix(1);
            size_t n = 0;
            while (n < tag.size() && (std::isalnum((unsigned char)tag[n]))) ++n;
            const std::string name = lower(tag.substr(0, n));
            i = e + 1;
            if (!closing && (name == "script" || name == "style" || name == "noscript")) {
                // Their content is code, not text: skip to the closing tag.
                const std::string lower_rest = lower(html.substr(i));
                const size_t end = lower_rest.find("</" + name);
                if (end == std::string::npos) break;
                const size_t gt = html.find('>', i + end);
                i = gt == std::string_view::npos ? html.size() : gt + 1;
                continue;
            }
            if (is_block_tag(name)) raw += '\n';
            else raw += ' ';
            continue;
        }
        if (c == '&') {
            const size_t used = decode_entity(html, i, raw);
            if (used) {
                i += used;
                continue;
            }
        }
        raw += c;
        ++i;
    }
    return tidy(raw);
}

}  // namespace batch
