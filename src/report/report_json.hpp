// JSON builders shared by --format json and the HTML page.
#pragma once

#include <nlohmann/json.hpp>

#include "model.hpp"

namespace nanscope::report {

nlohmann::ordered_json event_json(const Analysis& a, const Snapshot& s);
nlohmann::ordered_json summary_json(const Analysis& a);

}  // namespace nanscope::report
