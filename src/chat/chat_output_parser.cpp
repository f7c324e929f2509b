#include "chat/chat_output_parser.h"

#include "chat/json_scan.h"
#include "chat/py_json.h"
#include "core/error.h"

namespace ikllm::chat {

namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// True when s is a non-empty proper prefix of m: more text might complete the marker.
bool is_partial(std::string_view s, std::string_view m) { return !s.empty() && s.size() < m.size() && starts_with(m, s); }

// Length of the longest suffix of s that is a proper prefix of one of the markers.
size_t partial_suffix(std::string_view s, const std::vector<std::string_view>& markers) {
    size_t best = 0;
    for (std::string_view m : markers)
        for (size_t n = std::min(s.size(), m.size() - 1); n > best; --n)
            if (s.substr(s.size() - n) == m.substr(0, n)) {
                best = n;
                break;
            }
    return best;
}

// Where to resume searching for a marker of length n in a text whose first `scanned` bytes were
// searched already (a long tool call arriving token by token must not be searched from its start each time).
size_t resume_at(size_t scanned, size_t n) { return scanned >= n ? scanned - n + 1 : 0; }

// A JSON value can only end at a closing bracket: long call texts are scanned again only when one arrived.
constexpr size_t kRescanAlways = 4096;

// Length of the UTF-8 sequence led by byte b, 0 when b cannot lead one.
int sequence_length(unsigned char b) {
    if (b < 0x80) return 1;
    if (b >= 0xC2 && b <= 0xDF) return 2;
    if (b >= 0xE0 && b <= 0xEF) return 3;
    if (b >= 0xF0 && b <= 0xF4) return 4;
    return 0;
}

// Whether continuation byte number k (1-based) fits after lead byte `lead` (excludes overlongs,
// surrogates and code points above U+10FFFF).
bool continuation_ok(unsigned char lead, int k, unsigned char c) {
    if (k == 1) {
        if (lead == 0xE0) return c >= 0xA0 && c <= 0xBF;
        if (lead == 0xED) return c >= 0x80 && c <= 0x9F;
        if (lead == 0xF0) return c >= 0x90 && c <= 0xBF;
        if (lead == 0xF4) return c >= 0x80 && c <= 0x8F;
    }
    return c >= 0x80 && c <= 0xBF;
}

void append_json_string(std::string& out, const std::string& s) { out += json_dumps(Value::string(s), {}); }

void append_call(std::string& out, const ToolCall& c, const size_t* index) {
    out += '{';
    if (index) out += "\"index\": " + std::to_string(*index) + ", ";
    if (!c.id.empty()) {
        out += "\"id\": ";
        append_json_string(out, c.id);
        out += ", ";
    }
    out += "\"type\": \"function\", \"function\": {\"name\": ";
    append_json_string(out, c.name);
    out += ", \"arguments\": ";
    append_json_string(out, c.arguments);
    out += "}}";
}

}  // namespace

OutputParser::OutputParser(const OutputParserConfig& config) : cfg_(config) { reset(); }

void OutputParser::reset() {
    if (!cfg_.reasoning) cfg_.starts_in_reasoning = false;
    mode_ = cfg_.starts_in_reasoning && cfg_.format != OutputFormat::none ? Mode::reasoning : Mode::content;
    utf8_tail_.clear();
    buf_.clear();
    reasoning_ = content_ = Stream{};
    had_reasoning_ = mode_ == Mode::reasoning;
    json_call_via_tag_ = json_start_blocked_ = finished_ = ds_block_ok_ = false;
    ds_pending_.clear();
    scanned_ = 0;
    msg_ = ParsedMessage{};
    delta_ = OutputDelta{};
}

void OutputParser::begin_delta() {
    delta_ = OutputDelta{};
    delta_.first_tool_index = msg_.tool_calls.size();
}

const OutputDelta& OutputParser::push(std::string_view text) {
    if (finished_) fail(Status::invalid_argument, "the chat output parser has finished; reset it first");
    begin_delta();
    accept_bytes(text, false);
    run(false);
    return delta_;
}

const OutputDelta& OutputParser::finish() {
    if (finished_) fail(Status::invalid_argument, "the chat output parser has finished; reset it first");
    begin_delta();
    accept_bytes({}, true);
    run(true);
    finished_ = true;
    return delta_;
}

// Moves complete UTF-8 sequences into buf_; invalid bytes become U+FFFD one byte at a time, and an
// incomplete sequence at the end waits for the next piece (or, at the end, becomes one U+FFFD).
// Each byte's fate depends only on the bytes after it, so piece boundaries do not matter.
void OutputParser::accept_bytes(std::string_view bytes, bool final) {
    std::string in = utf8_tail_;
    in.append(bytes);
    utf8_tail_.clear();
    size_t i = 0;
    while (i < in.size()) {
        const unsigned char lead = static_cast<unsigned char>(in[i]);
        const int len = sequence_length(lead);
        if (len == 0) {
            buf_ += kReplacement;
            ++i;
            continue;
        }
        int k = 1;
        while (k < len && i + k < in.size() && continuation_ok(lead, k, static_cast<unsigned char>(in[i + k]))) ++k;
        if (k == len) {
            buf_.append(in, i, len);
            i += len;
        } else if (i + k == in.size()) {  // ran out of bytes: the sequence may still complete
            if (final) {
                buf_ += kReplacement;
            } else {
                utf8_tail_ = in.substr(i);
            }
            break;
        } else {
            buf_ += kReplacement;
            ++i;
        }
    }
}

void OutputParser::run(bool final) {
    for (;;) {
        bool progressed = false;
        switch (mode_) {
            case Mode::reasoning: progressed = step_reasoning(final); break;
            case Mode::content: progressed = step_content(final); break;
            case Mode::hermes_call: progressed = step_hermes(final); break;
            case Mode::json_call: progressed = step_json_call(final); break;
            case Mode::mistral_call: progressed = step_mistral(final); break;
            case Mode::deepseek_block: progressed = step_deepseek(final); break;
        }
        if (!progressed) break;
    }
}

void OutputParser::emit(Stream& s, std::string_view text, std::string& total, std::string& delta) {
    size_t last = text.size();
    while (last > 0 && is_ws(text[last - 1])) --last;
    if (last == 0) {  // only whitespace: leading whitespace is dropped, trailing waits
        if (s.started && !s.trim_next) s.hold.append(text);
        return;
    }
    size_t first = 0;
    if (!s.started || s.trim_next) {
        while (is_ws(text[first])) ++first;
        s.started = true;
        s.trim_next = false;
    }
    const std::string_view body = text.substr(first, last - first);
    total += s.hold;
    delta += s.hold;
    total += body;
    delta += body;
    s.hold.assign(text.substr(last));
}

void OutputParser::add_call(ToolCall call) {
    content_.trim_next = true;
    delta_.tool_calls.push_back(call);
    msg_.tool_calls.push_back(std::move(call));
}

bool OutputParser::step_reasoning(bool final) {
    const size_t pos = buf_.find(marker::think_close);
    if (pos != std::string::npos) {
        emit_reasoning(std::string_view(buf_).substr(0, pos));
        buf_.erase(0, pos + marker::think_close.size());
        mode_ = Mode::content;
        return true;
    }
    const size_t keep = final ? 0 : partial_suffix(buf_, {marker::think_close});
    emit_reasoning(std::string_view(buf_).substr(0, buf_.size() - keep));
    buf_.erase(0, buf_.size() - keep);
    return false;
}

bool OutputParser::step_content(bool final) {
    const bool tools = cfg_.tool_calls && cfg_.format != OutputFormat::none;
    if (!content_.started) {
        // Nothing delivered yet: leading whitespace is dropped anyway, and the reply's first bytes
        // decide whether it opens with reasoning or (Llama 3) is a bare JSON tool call.
        size_t i = 0;
        while (i < buf_.size() && is_ws(buf_[i])) ++i;
        buf_.erase(0, i);
        if (buf_.empty()) return false;
        if (cfg_.reasoning && cfg_.format != OutputFormat::none && !had_reasoning_ && msg_.tool_calls.empty()) {
            if (starts_with(buf_, marker::think_open)) {
                buf_.erase(0, marker::think_open.size());
                mode_ = Mode::reasoning;
                had_reasoning_ = true;
                return true;
            }
            if (!final && is_partial(buf_, marker::think_open)) return false;
        }
        if (tools && cfg_.format == OutputFormat::llama3 && !json_start_blocked_) {
            if (buf_[0] == ';' && !msg_.tool_calls.empty()) {  // separator between calls
                buf_.erase(0, 1);
                return true;
            }
            if (buf_[0] == '{') {
                json_call_via_tag_ = false;
                scanned_ = 0;
                mode_ = Mode::json_call;
                return true;
            }
        }
    }
    std::vector<std::string_view> openers;
    if (tools) {
        switch (cfg_.format) {
            case OutputFormat::llama3: openers = {marker::python_tag}; break;
            case OutputFormat::hermes: openers = {marker::hermes_open}; break;
            case OutputFormat::mistral: openers = {marker::mistral_calls}; break;
            case OutputFormat::deepseek: openers = {marker::ds_calls_begin, marker::ds_call_begin}; break;
            default: break;
        }
    }
    size_t pos = std::string::npos;
    std::string_view found;
    for (std::string_view m : openers) {
        const size_t p = buf_.find(m);
        if (p < pos) {
            pos = p;
            found = m;
        }
    }
    if (pos == std::string::npos) {
        const size_t keep = final ? 0 : partial_suffix(buf_, openers);
        emit_content(std::string_view(buf_).substr(0, buf_.size() - keep));
        buf_.erase(0, buf_.size() - keep);
        return false;
    }
    emit_content(std::string_view(buf_).substr(0, pos));
    scanned_ = 0;
    if (found == marker::ds_call_begin || found == marker::ds_calls_begin) {
        // A call without the block opener starts the block as well. Until a call decodes, the markers
        // are kept to be delivered as content if none does.
        buf_.erase(0, found == marker::ds_call_begin ? pos : pos + found.size());
        ds_pending_.assign(found == marker::ds_call_begin ? std::string_view() : found);
        ds_block_ok_ = false;
        mode_ = Mode::deepseek_block;
        return true;
    }
    buf_.erase(0, pos + found.size());
    if (found == marker::python_tag) {
        json_call_via_tag_ = true;
        mode_ = Mode::json_call;
    } else if (found == marker::hermes_open) {
        mode_ = Mode::hermes_call;
    } else {
        mode_ = Mode::mistral_call;
    }
    return true;
}

bool OutputParser::step_hermes(bool final) {
    const size_t close = buf_.find(marker::hermes_close, resume_at(scanned_, marker::hermes_close.size()));
    if (close == std::string::npos && !final) {
        scanned_ = buf_.size();
        return false;
    }
    const std::string_view body = std::string_view(buf_).substr(0, close);  // npos: all of it
    ToolCall call;
    if (decode_call_object(body, call)) {
        add_call(std::move(call));
    } else {
        std::string raw(marker::hermes_open);
        raw += body;
        if (close != std::string::npos) raw += marker::hermes_close;
        emit_content(raw);
    }
    buf_.erase(0, close == std::string::npos ? buf_.size() : close + marker::hermes_close.size());
    mode_ = Mode::content;
    return true;
}

bool OutputParser::step_json_call(bool final) {
    if (!final && buf_.size() >= kRescanAlways && buf_.find_first_of("}]", scanned_) == std::string::npos) return false;
    scanned_ = buf_.size();
    const size_t i = skip_json_ws(buf_, 0);
    size_t end = 0;
    JsonScan r = JsonScan::incomplete;
    if (i < buf_.size()) r = buf_[i] == '{' ? scan_json_value(buf_, i, &end) : JsonScan::invalid;
    if (r == JsonScan::incomplete && !final) return false;
    ToolCall call;
    if (r == JsonScan::complete && decode_call_object(std::string_view(buf_).substr(i, end - i), call)) {
        add_call(std::move(call));
        buf_.erase(0, end);
    } else {
        // Not a call: the text (and the tag that announced it) is content; a leading '{' must not be
        // taken for a call again.
        if (json_call_via_tag_) emit_content(marker::python_tag);
        json_start_blocked_ = true;
    }
    mode_ = Mode::content;
    return true;
}

namespace {

enum class Outcome { wait, malformed, done };

bool name_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
}

// Mistral's newer form from b[i]: NAME[ARGS]{...} or NAME[CALL_ID]ID[ARGS]{...}; *end is past the call.
Outcome mistral_named_call(std::string_view b, size_t i, ToolCall& call, size_t* end) {
    size_t k = i;
    while (k < b.size() && name_char(b[k])) ++k;
    call.name.assign(b.substr(i, k - i));
    if (k >= b.size()) return Outcome::wait;
    if (call.name.empty()) return Outcome::malformed;
    std::string_view rest = b.substr(k);
    if (is_partial(rest, marker::mistral_call_id) || is_partial(rest, marker::mistral_args)) return Outcome::wait;
    if (starts_with(rest, marker::mistral_call_id)) {
        k += marker::mistral_call_id.size();
        const size_t id_end = b.find('[', k);
        if (id_end == std::string_view::npos) return Outcome::wait;
        call.id.assign(b.substr(k, id_end - k));
        k = id_end;
        rest = b.substr(k);
        if (is_partial(rest, marker::mistral_args)) return Outcome::wait;
    }
    if (!starts_with(rest, marker::mistral_args)) return Outcome::malformed;
    const size_t a = skip_json_ws(b, k + marker::mistral_args.size());
    if (a >= b.size()) return Outcome::wait;
    if (b[a] != '{') return Outcome::malformed;
    const JsonScan r = scan_json_value(b, a, end);
    if (r == JsonScan::incomplete) return Outcome::wait;
    if (r == JsonScan::invalid || !is_json_object(b.substr(a, *end - a))) return Outcome::malformed;
    call.arguments.assign(b.substr(a, *end - a));
    return Outcome::done;
}

}  // namespace

bool OutputParser::step_mistral(bool final) {
    if (!final && buf_.size() >= kRescanAlways && buf_.find_first_of("}]", scanned_) == std::string::npos) return false;
    scanned_ = buf_.size();
    const std::string_view b = buf_;
    const size_t i = skip_json_ws(b, 0);
    size_t end = 0;
    Outcome o = Outcome::wait;
    std::vector<ToolCall> calls;
    if (i >= b.size()) {
        o = Outcome::wait;
    } else if (b[i] == '[') {  // [TOOL_CALLS][{...}, ...]
        const JsonScan r = scan_json_value(b, i, &end);
        o = r == JsonScan::incomplete                                             ? Outcome::wait
            : r == JsonScan::complete && decode_call_array(b.substr(i, end - i), calls) ? Outcome::done
                                                                                   : Outcome::malformed;
    } else {
        calls.emplace_back();
        o = mistral_named_call(b, i, calls.back(), &end);
    }
    if (o == Outcome::wait && !final) return false;
    if (o == Outcome::done) {
        for (auto& c : calls) add_call(std::move(c));
        buf_.erase(0, end);
    } else {
        emit_content(marker::mistral_calls);  // not a call: the rest is read again as ordinary content
    }
    mode_ = Mode::content;
    return true;
}

bool OutputParser::step_deepseek(bool final) {
    const size_t i = skip_json_ws(buf_, 0);
    const std::string_view rest = std::string_view(buf_).substr(i);
    if (starts_with(rest, marker::ds_call_begin)) {
        const size_t from = resume_at(scanned_, marker::ds_call_end.size());
        const size_t close = rest.find(marker::ds_call_end, from > i ? from - i : 0);
        if (close == std::string_view::npos && !final) {
            scanned_ = buf_.size();
            return false;
        }
        const size_t body_at = marker::ds_call_begin.size();
        const std::string_view body =
            rest.substr(body_at, close == std::string_view::npos ? std::string_view::npos : close - body_at);
        const size_t used = close == std::string_view::npos ? rest.size() : close + marker::ds_call_end.size();
        ToolCall call;
        if (decode_deepseek_call(body, call)) {
            add_call(std::move(call));
            ds_pending_.clear();
            ds_block_ok_ = true;
        } else {
            ds_pending_.append(rest.substr(0, used));
            emit_content(ds_pending_);
            ds_pending_.clear();
        }
        buf_.erase(0, i + used);
        scanned_ = 0;
        return true;
    }
    const bool end_marker = starts_with(rest, marker::ds_calls_end);
    if (!end_marker && !final &&
        (rest.empty() || is_partial(rest, marker::ds_calls_end) || is_partial(rest, marker::ds_call_begin)))
        return false;
    // The block ends (its end marker, other text, or the end of the output). A block that produced no
    // call is content as written, markers included.
    if (!ds_block_ok_) {
        if (end_marker) ds_pending_.append(marker::ds_calls_end);
        emit_content(ds_pending_);
    }
    ds_pending_.clear();
    if (end_marker) buf_.erase(0, i + marker::ds_calls_end.size());
    mode_ = Mode::content;
    return true;
}

std::string delta_json(const OutputDelta& d) {
    std::string out = "{";
    auto sep = [&] {
        if (out.size() > 1) out += ", ";
    };
    if (!d.reasoning.empty()) {
        out += "\"reasoning_content\": ";
        append_json_string(out, d.reasoning);
    }
    if (!d.content.empty()) {
        sep();
        out += "\"content\": ";
        append_json_string(out, d.content);
    }
    if (!d.tool_calls.empty()) {
        sep();
        out += "\"tool_calls\": [";
        for (size_t k = 0; k < d.tool_calls.size(); ++k) {
            if (k) out += ", ";
            const size_t index = d.first_tool_index + k;
            append_call(out, d.tool_calls[k], &index);
        }
        out += ']';
    }
    return out + "}";
}

std::string message_json(const ParsedMessage& m) {
    std::string out = "{\"reasoning_content\": ";
    append_json_string(out, m.reasoning);
    out += ", \"content\": ";
    append_json_string(out, m.content);
    out += ", \"tool_calls\": [";
    for (size_t k = 0; k < m.tool_calls.size(); ++k) {
        if (k) out += ", ";
        append_call(out, m.tool_calls[k], nullptr);
    }
    return out + "]}";
}

ParsedMessage parse_output(const OutputParserConfig& config, std::string_view text) {
    OutputParser p(config);
    p.push(text);
    p.finish();
    return p.message();
}

}  // namespace ikllm::chat
