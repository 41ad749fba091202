// Small formatting helpers shared by the renderers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "event.hpp"

namespace nanscope::report {

// "1764513600000000000" (ns since the epoch) or ISO-8601 such as "2025-11-30T14:40:00Z",
// "2025-11-30T14:40:00.5+01:00", "2025-11-30 14:40:00" (UTC when no zone is given).
std::optional<std::int64_t> parse_time(std::string_view s);
std::string iso8601(std::int64_t ns);       // 2025-11-30T14:40:00.000000000Z
std::string rel_time(std::int64_t dns);     // +1.234 ms, +12.345 s, +3m05.2s
std::string shorten_kernel(std::string_view name, std::size_t width);
std::size_t display_width(std::string_view s);  // UTF-8 code points
std::string pad(std::string_view s, std::size_t width, bool right_align = false);
std::string ranges_str(const std::vector<RowRange>& r, std::size_t max_items = 6);
std::string html_escape(std::string_view s);
std::string group_digits(std::int64_t v);  // 1234567 -> 1,234,567

// Control characters (C0, DEL, C1) in a log's strings are shown as escapes ("\x1b", "\u0085"),
// never sent raw to a terminal or a page: a log could fake report lines or move the cursor.
constexpr bool is_control(unsigned cp) { return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F); }
void append_control_escape(std::string& out, unsigned cp);
// A decoded code point in UTF-8; a control character as its escape.
void append_utf8(std::string& out, unsigned cp);
// s with every control character escaped (for strings that did not come through the parser).
std::string printable(std::string_view s);

}  // namespace nanscope::report
