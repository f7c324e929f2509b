#include "chat/py_strftime.h"

#include <algorithm>
#include <cstdio>

#include "chat/jinja_interp.h"
#include "chat/py_text.h"

namespace ikllm::chat {

namespace {

const char* const kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
const char* const kMonths[] = {"January", "February", "March", "April", "May", "June", "July",
                               "August", "September", "October", "November", "December"};

bool leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int day_of_year(const DateTime& t) {  // 0-based
    static const int kCum[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    int m = std::min(std::max(t.month, 1), 12);
    return kCum[m - 1] + t.day - 1 + ((m > 2 && leap(t.year)) ? 1 : 0);
}

int weekday(int y, int m, int d) {  // 0 = Sunday
    static const int kT[] = {0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4};
    if (m < 3) y -= 1;
    return (y + y / 4 - y / 100 + y / 400 + kT[(m + 11) % 12] + d) % 7;
}

// Days since 1970-01-01 (civil calendar).
long long days_from_civil(int y, int m, int d) {
    y -= m <= 2;
    long long era = (y >= 0 ? y : y - 399) / 400;
    long long yoe = y - era * 400;
    long long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

// ISO 8601 week-based year and week number.
int iso_weeks_in_year(int y) {
    auto p = [](int x) { return (x + x / 4 - x / 100 + x / 400) % 7; };
    return 52 + ((p(y) == 4 || p(y - 1) == 3) ? 1 : 0);
}

void iso_week(const DateTime& t, int& iso_year, int& week) {
    int iso_wd = (weekday(t.year, t.month, t.day) + 6) % 7 + 1;  // Monday = 1
    int w = (day_of_year(t) + 1 - iso_wd + 10) / 7;
    iso_year = t.year;
    if (w < 1) {
        iso_year = t.year - 1;
        w = iso_weeks_in_year(iso_year);
    } else if (w > iso_weeks_in_year(t.year)) {
        iso_year = t.year + 1;
        w = 1;
    }
    week = w;
}

std::string num(long long v, int width, char pad_flag, char default_pad) {
    char pad = pad_flag ? pad_flag : default_pad;
    if (pad == '-') return std::to_string(v);
    std::string s = std::to_string(v);
    while (static_cast<int>(s.size()) < width) s.insert(s.begin(), pad == '_' ? ' ' : pad);
    return s;
}

}  // namespace

std::string py_strftime(const std::string& fmt, const DateTime& t) {
    std::string out;
    int wd = weekday(t.year, t.month, t.day);
    int yday = day_of_year(t);
    int hour12 = t.hour % 12 == 0 ? 12 : t.hour % 12;
    int mi = std::min(std::max(t.month, 1), 12) - 1;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%' || i + 1 >= fmt.size()) {
            out.push_back(fmt[i]);
            continue;
        }
        size_t start = i;
        ++i;
        char flag = 0;
        bool upcase = false;
        while (i < fmt.size() && (fmt[i] == '-' || fmt[i] == '_' || fmt[i] == '0' || fmt[i] == '^' || fmt[i] == '#')) {
            if (fmt[i] == '^' || fmt[i] == '#') upcase = true;
            else flag = fmt[i];
            ++i;
        }
        if (i >= fmt.size()) {
            out += fmt.substr(start);
            break;
        }
        char c = fmt[i];
        std::string piece;
        switch (c) {
            case 'a': piece = std::string(kDays[wd]).substr(0, 3); break;
            case 'A': piece = kDays[wd]; break;
            case 'b':
            case 'h': piece = std::string(kMonths[mi]).substr(0, 3); break;
            case 'B': piece = kMonths[mi]; break;
            case 'c':
                piece = py_strftime("%a %b %e %H:%M:%S %Y", t);
                break;
            case 'C': piece = num(t.year / 100, 2, flag, '0'); break;
            case 'd': piece = num(t.day, 2, flag, '0'); break;
            case 'D': piece = py_strftime("%m/%d/%y", t); break;
            case 'e': piece = num(t.day, 2, flag, '_'); break;
            case 'f': piece = "000000"; break;
            case 'F': piece = py_strftime("%Y-%m-%d", t); break;
            case 'g':
            case 'G':
            case 'V': {
                int iy, w;
                iso_week(t, iy, w);
                if (c == 'V') piece = num(w, 2, flag, '0');
                else if (c == 'G') piece = num(iy, 1, flag, '0');
                else piece = num(iy % 100, 2, flag, '0');
                break;
            }
            case 'H': piece = num(t.hour, 2, flag, '0'); break;
            case 'I': piece = num(hour12, 2, flag, '0'); break;
            case 'j': piece = num(yday + 1, 3, flag, '0'); break;
            case 'k': piece = num(t.hour, 2, flag, '_'); break;
            case 'l': piece = num(hour12, 2, flag, '_'); break;
            case 'm': piece = num(t.month, 2, flag, '0'); break;
            case 'M': piece = num(t.minute, 2, flag, '0'); break;
            case 'n': piece = "\n"; break;
            case 'p': piece = t.hour < 12 ? "AM" : "PM"; break;
            case 'P': piece = t.hour < 12 ? "am" : "pm"; break;
            case 'r': piece = py_strftime("%I:%M:%S %p", t); break;
            case 'R': piece = py_strftime("%H:%M", t); break;
            case 's':
                piece = std::to_string(days_from_civil(t.year, t.month, t.day) * 86400LL + t.hour * 3600 + t.minute * 60 + t.second);
                break;
            case 'S': piece = num(t.second, 2, flag, '0'); break;
            case 't': piece = "\t"; break;
            case 'T': piece = py_strftime("%H:%M:%S", t); break;
            case 'u': piece = num(wd == 0 ? 7 : wd, 1, flag, '0'); break;
            case 'U': piece = num((yday + 7 - wd) / 7, 2, flag, '0'); break;
            case 'w': piece = num(wd, 1, flag, '0'); break;
            case 'W': piece = num((yday + 7 - (wd + 6) % 7) / 7, 2, flag, '0'); break;
            case 'x': piece = py_strftime("%m/%d/%y", t); break;
            case 'X': piece = py_strftime("%H:%M:%S", t); break;
            case 'y': piece = num(t.year % 100, 2, flag, '0'); break;
            case 'Y': piece = num(t.year, 1, flag, '0'); break;
            case 'z':
            case 'Z': piece = ""; break;
            case '%': piece = "%"; break;
            default: piece = fmt.substr(start, i - start + 1); break;
        }
        if (upcase) piece = py::upper(piece);
        out += piece;
    }
    return out;
}

}  // namespace ikllm::chat
