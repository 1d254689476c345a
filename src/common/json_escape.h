// Escaping a string for a JSON string literal (quotes, backslashes and
// control characters). Pure function, thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace mc {

// The escaped text, without the surrounding quotes.
std::string JsonEscape(std::string_view s);

}  // namespace mc
