// C-locale strftime over a fixed broken-down date, as Python's datetime.strftime prints it on Linux
// (glibc conversions and the -, _, 0, ^ flags; %z/%Z empty for a naive datetime, %f microseconds).
#pragma once
#include <string>

namespace ikllm::chat {

struct DateTime;
std::string py_strftime(const std::string& fmt, const DateTime& t);

}  // namespace ikllm::chat
