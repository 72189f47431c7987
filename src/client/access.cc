#include "client/access.hpp"

namespace tandem::client {

bool parse_access(std::string_view text, AccessChoice& out) {
  if (text == "auto") {
    out = AccessChoice::automatic;
    return true;
  }
  const std::optional<uint8_t> method = model::access_method_from_name(text);
  if (!method) return false;
  switch (*method) {
    case TANDEM_ACCESS_ZERO_COPY: out = AccessChoice::zero_copy; break;
    case TANDEM_ACCESS_COPY: out = AccessChoice::copy; break;
    case TANDEM_ACCESS_SCATTER_GATHER: out = AccessChoice::scatter_gather; break;
    default: out = AccessChoice::device_local; break;
  }
  return true;
}

std::string_view access_name(uint8_t method) { return model::access_method_name(method); }

}  // namespace tandem::client
