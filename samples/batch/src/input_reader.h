// Finds the documents of an input (folder, JSONL or CSV file) and turns each into text.
#pragma once

#include <string>
#include <vector>

#include "document.h"

namespace batch {

struct InputOptions {
    std::string id_field = "id";      // JSONL key / CSV column holding the document id
    std::string text_field = "text";  // JSONL key / CSV column holding the text
    size_t max_document_bytes = 8u << 20;
};

// Lists the items of `path`: a folder (every regular file below it except hidden ones, in
// path order), a .jsonl file (one object per line) or a .csv file (header row, one row each).
// Items that are already known to be bad carry an error. Throws std::runtime_error when the
// input itself cannot be read.
std::vector<InputItem> list_inputs(const std::string& path, const InputOptions& options);

// Loads the text of an item: reads the file, extracts HTML/PDF text, checks it is usable.
Document load_document(const InputItem& item, const InputOptions& options);

}  // namespace batch
