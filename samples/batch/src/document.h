// One unit of work as the input readers see it: where it comes from and how to get its text.
#pragma once

#include <string>

namespace batch {

// An input item: a file to read later (folder input) or text already in memory (JSONL/CSV rows).
// A reader that already knows the item is bad sets `error`; it then still gets a result record.
struct InputItem {
    std::string id;      // stable key of the document (relative path, or the id column)
    std::string source;  // human-readable origin: "docs/a.pdf", "in.jsonl:12"
    std::string path;    // non-empty: read the file when the document is scheduled
    std::string text;    // the text, when it came inline
    std::string error;   // non-empty: the item is known bad already
};

// A document ready for the model: plain UTF-8 text, or an error explaining why there is none.
struct Document {
    std::string id;
    std::string source;
    std::string text;
    std::string error;
};

}  // namespace batch
